package io.csiorchestrator.testkit;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.BrokerSecurity;
import io.csiorchestrator.localinfra.KafkaUsers;
import io.csiorchestrator.localinfra.Kraft;
import io.csiorchestrator.localinfra.QuietLogging;

/**
 * A real Kafka broker running in this JVM: KRaft combined mode (broker and controller in one node, node id 1),
 * PLAINTEXT listeners on free loopback ports, data in a temporary directory that {@link #close()} deletes.
 *
 * <p>A plain class: usable from a JUnit test, a {@code main()} or a CLI, with or without Quarkus.
 * Most Quarkus tests should use {@link KafkaResource} instead, which shares one broker per JVM.
 *
 * <pre>{@code
 * try (KafkaBroker broker = KafkaBroker.start()) {
 *     broker.createTopic("node-commands", 4, Map.of());
 *     String bootstrap = broker.bootstrapServers();
 * }
 * }</pre>
 */
public final class KafkaBroker implements AutoCloseable {

    /** How long {@link #start()} waits for the broker to accept client requests. */
    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);
    private static final int START_ATTEMPTS = 3;
    private static final System.Logger LOG = System.getLogger(KafkaBroker.class.getName());

    private final KafkaRaftServer server;
    private final Path dataDir;
    private final String bootstrapServers;
    private final String clusterId;
    private final Map<String, Integer> extraListenerPorts;
    private final BrokerSecurity security;
    private final String certBootstrap;
    private final KafkaClientSecurity adminSecurity;
    private final Object lock = new Object();
    private boolean closed;

    private KafkaBroker(KafkaRaftServer server, Path dataDir, String bootstrapServers, String clusterId,
                        Map<String, Integer> extraListenerPorts, BrokerSecurity security, String certBootstrap) {
        this.certBootstrap = certBootstrap;
        this.server = server;
        this.dataDir = dataDir;
        this.bootstrapServers = bootstrapServers;
        this.clusterId = clusterId;
        this.extraListenerPorts = Map.copyOf(extraListenerPorts);
        this.security = security;
        this.adminSecurity = security == null ? KafkaClientSecurity.plaintext() : security.admin();
    }

    /** Starts a broker with the default test settings; logs of Kafka's own packages go at WARN. */
    public static KafkaBroker start() {
        return builder().start();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** {@code host:port} of the PLAINTEXT listener, for {@code bootstrap.servers}. */
    public String bootstrapServers() {
        return bootstrapServers;
    }

    public String clusterId() {
        return clusterId;
    }

    /**
     * The loopback port a listener added with {@link Builder#advertisedListener(String, int)} binds (where its
     * proxy forwards to).
     */
    public int listenerPort(String name) {
        Integer port = extraListenerPorts.get(name);
        if (port == null) {
            throw new IllegalArgumentException("no extra listener " + name + " on " + this);
        }
        return port;
    }

    /** The temporary directory holding this broker's config and logs (deleted by {@link #close()}). */
    public Path dataDir() {
        return dataDir;
    }

    /** A new Admin client on this broker (as {@value KafkaAccess#ADMIN} when secured); the caller closes it. */
    public Admin admin() {
        return Kraft.admin(bootstrapServers, adminSecurity);
    }

    /** Whether this broker is closed to anyone without a credential (SASL_SSL, SCRAM, the authorizer). */
    public boolean secured() {
        return security != null;
    }

    /** The admin's client settings: a super user ({@link KafkaClientSecurity#plaintext()} if not secured). */
    public KafkaClientSecurity adminSecurity() {
        return adminSecurity;
    }

    /** The PEM file of the CA the broker's certificate chains to (secured brokers only). */
    public Path truststore() {
        return requireSecured().truststore();
    }

    /**
     * Issues {@code principal}: a new SCRAM credential (password in a 0600 file under the data directory) and its
     * ACLs from {@link KafkaAccess} on {@code topics}. Returns the principal's client settings.
     */
    public KafkaClientSecurity issue(KafkaAccess.Principal principal, TopicCatalog topics) {
        BrokerSecurity material = requireSecured();
        String password = BrokerSecurity.newPassword();
        Path file = passwordFile(principal.name());
        BrokerSecurity.writeOwnerOnly(file, password + "\n");
        try (Admin admin = admin()) {
            new KafkaUsers(admin).issue(principal, password, topics);
        }
        return KafkaClientSecurity.scram(principal.name(), file, material.truststore());
    }

    /**
     * The password file of {@code user} as {@link #issue} or {@link #rotate} wrote it (under the data directory),
     * or of {@value KafkaAccess#ADMIN}: for clients made from file paths ({@code csi.kafka.password-file}).
     */
    public Path passwordFileOf(String user) {
        BrokerSecurity material = requireSecured();
        return KafkaAccess.ADMIN.equals(user) ? material.adminPasswordFile() : passwordFile(user);
    }

    /** Client settings of {@code user} with a password of the caller's choosing, without asking the broker. */
    public KafkaClientSecurity credentialOf(String user, String password) {
        return KafkaClientSecurity.scramWithPassword(user, password, requireSecured().truststore());
    }

    /**
     * Rotates {@code user}'s credential: a new password (written over its password file) replaces the old one on the
     * broker, so new connections need the new one and an open connection made with the old one ends at its next
     * re-authentication. Returns the new client settings.
     */
    public KafkaClientSecurity rotate(String user) {
        BrokerSecurity material = requireSecured();
        String password = BrokerSecurity.newPassword();
        Path file = passwordFile(user);
        try (Admin admin = admin()) {
            new KafkaUsers(admin).upsertCredential(user, password);
        }
        BrokerSecurity.writeOwnerOnly(file, password + "\n");
        return KafkaClientSecurity.scram(user, file, material.truststore());
    }

    /**
     * Issues {@code principal} an expiring credential: its ACLs from {@link KafkaAccess} on {@code topics} and a
     * delegation token that expires {@code lifetime} from now (written 0600 under the data directory, as
     * {@code csi.kafka.token-file} reads it). Returns the token's client settings.
     */
    public KafkaClientSecurity issueToken(KafkaAccess.Principal principal, TopicCatalog topics, Duration lifetime) {
        BrokerSecurity material = requireSecured();
        io.csiorchestrator.events.KafkaToken token;
        try (Admin admin = admin()) {
            KafkaUsers users = new KafkaUsers(admin);
            users.grant(principal, topics);
            token = users.issueToken(principal.name(), lifetime);
        }
        Path file = dataDir.resolve("credentials").resolve(principal.name() + ".token");
        try {
            Files.createDirectories(file.getParent());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        BrokerSecurity.writeOwnerOnly(file, token.toFileText());
        return KafkaClientSecurity.token(file, material.truststore());
    }

    /** {@code host:port} of the client-certificate listener (SSL, mutual TLS; secured brokers only). */
    public String certificateBootstrapServers() {
        requireSecured();
        return certBootstrap;
    }

    /**
     * Issues {@code principal} a client certificate living {@code lifetime} and its ACLs from {@link KafkaAccess} on
     * {@code topics}; key (0600) and certificate written under the data directory. Returns its client settings
     * (protocol SSL: connect them to {@link #certificateBootstrapServers()}).
     */
    public KafkaClientSecurity issueCertificate(KafkaAccess.Principal principal, TopicCatalog topics, Duration lifetime) {
        BrokerSecurity material = requireSecured();
        io.csiorchestrator.localinfra.Certificates.Issued issued =
            material.clientCertificates().issue(principal.name(), lifetime);
        try (Admin admin = admin()) {
            new KafkaUsers(admin).grant(principal, topics);
        }
        Path dir = dataDir.resolve("credentials").resolve(principal.name() + "-"
            + issued.certificate().getSerialNumber().toString(16));
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        io.csiorchestrator.localinfra.ClientCertificates.write(issued, dir.resolve("kafka-client.key"),
            dir.resolve("kafka-client.pem"));
        return KafkaClientSecurity.certificate(dir.resolve("kafka-client.pem"), dir.resolve("kafka-client.key"),
            material.truststore());
    }

    /**
     * Revokes {@code owner}'s client certificates: its ACLs go (open connections lose their rights at their next
     * request) and every certificate issued to it is on the revoked list (new connections with one get no rights,
     * even after a new certificate brings the ACLs back). Returns how many certificates were revoked.
     */
    public int revokeCertificates(String owner) {
        BrokerSecurity material = requireSecured();
        try (Admin admin = admin()) {
            new KafkaUsers(admin).dropAcls(owner);
        }
        return material.clientCertificates().revoke(owner);
    }

    /** Revokes every delegation token of {@code owner} (each expires now); returns how many. */
    public int revokeTokens(String owner) {
        requireSecured();
        try (Admin admin = admin()) {
            return new KafkaUsers(admin).revokeTokens(owner);
        }
    }

    /** Revokes {@code user}: deletes its SCRAM credential (its ACLs stay, harmless without a credential). */
    public void revoke(String user) {
        requireSecured();
        try (Admin admin = admin()) {
            new KafkaUsers(admin).deleteCredential(user);
        }
    }

    private Path passwordFile(String user) {
        try {
            Path dir = Files.createDirectories(dataDir.resolve("credentials"));
            return dir.resolve(user + ".password");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private BrokerSecurity requireSecured() {
        if (security == null) {
            throw new IllegalStateException(this + " is not secured (KafkaBroker.builder().secured(true))");
        }
        return security;
    }

    static Admin admin(String bootstrapServers) {
        return Kraft.admin(bootstrapServers);
    }

    /**
     * Creates a topic (replication factor 1) and waits until the broker knows it.
     *
     * @return {@code true} if created, {@code false} if a topic of that name already existed (left as it is)
     */
    public boolean createTopic(String name, int partitions, Map<String, String> configs) {
        return Kraft.createTopic(bootstrapServers, adminSecurity, name, partitions, configs);
    }

    public boolean createTopic(String name, int partitions) {
        return createTopic(name, partitions, Map.of());
    }

    /**
     * Creates every topic of the contract under {@code prefix} and its dead-letter topic that does not exist yet: one
     * partition each (compacted where the contract's topic is), as an open broker's auto-creation makes them. A
     * secured broker, as every deployment's, creates no topic on first use (claim-service creates the contract's
     * topics at start); a test whose application under test is not claim-service creates them here.
     */
    public void createContractTopics(String prefix) {
        createContractTopics(bootstrapServers, adminSecurity, prefix);
    }

    static void createContractTopics(String bootstrapServers, KafkaClientSecurity admin, String prefix) {
        TopicCatalog catalog = new TopicCatalog(prefix == null ? "" : prefix);
        // one Admin for the listing and every topic: a connection to a closed broker costs a TLS handshake and a
        // SCRAM exchange
        try (Admin client = Kraft.admin(bootstrapServers, admin)) {
            java.util.Set<String> existing;
            try {
                existing = client.listTopics().names().get(ADMIN_TIMEOUT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("Could not list the topics of " + bootstrapServers + ": " + e, e);
            }
            for (io.csiorchestrator.events.Topic topic : io.csiorchestrator.events.Topic.values()) {
                String name = catalog.name(topic);
                if (!existing.contains(name)) {
                    Kraft.createTopic(client, name, 1,
                        topic.compacted() ? Map.of("cleanup.policy", "compact") : Map.of());
                }
                String deadLetter = catalog.deadLetterName(topic);
                if (!existing.contains(deadLetter)) {
                    Kraft.createTopic(client, deadLetter, 1, Map.of());
                }
            }
        }
    }

    static boolean createTopic(String bootstrapServers, String name, int partitions, Map<String, String> configs) {
        return Kraft.createTopic(bootstrapServers, name, partitions, configs);
    }

    /** Stops the broker, waits for it, and deletes its data directory. Idempotent. */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        long begin = System.nanoTime();
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(KafkaRaftServer.class.getClassLoader());
        try {
            server.shutdown();
            server.awaitShutdown();
        } finally {
            thread.setContextClassLoader(previous);
            deleteRecursively(dataDir);
        }
        LOG.log(System.Logger.Level.DEBUG, "Kafka broker at {0} stopped in {1} ms",
            bootstrapServers, (System.nanoTime() - begin) / 1_000_000);
    }

    /**
     * Runs a broker until the process is stopped: prints {@code bootstrap.servers} on stdout.
     * Arguments: {@code topic:partitions} to pre-create topics.
     */
    public static void main(String[] args) throws InterruptedException {
        KafkaBroker broker = KafkaBroker.builder().quietLogging(true).start();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            broker.close();
            stopped.countDown();
        }, "csi-testkit-kafka-stop"));
        for (Map.Entry<String, Integer> topic : parseTopics(String.join(",", args)).entrySet()) {
            broker.createTopic(topic.getKey(), topic.getValue(), Map.of());
        }
        System.out.println("bootstrap.servers=" + broker.bootstrapServers());
        stopped.await();
    }

    /**
     * Parses {@code "name:partitions,name2:partitions"} (partitions optional, default 1; blanks ignored),
     * keeping order.
     */
    public static Map<String, Integer> parseTopics(String spec) {
        Map<String, Integer> topics = new LinkedHashMap<>();
        if (spec == null || spec.isBlank()) {
            return topics;
        }
        for (String item : spec.split(",")) {
            String entry = item.trim();
            if (entry.isEmpty()) {
                continue;
            }
            int colon = entry.lastIndexOf(':');
            if (colon < 0) {
                topics.put(entry, 1);
            } else {
                String name = entry.substring(0, colon).trim();
                String count = entry.substring(colon + 1).trim();
                int partitions;
                try {
                    partitions = Integer.parseInt(count);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("Bad partition count in topic spec '" + entry + "'", e);
                }
                if (name.isEmpty() || partitions < 1) {
                    throw new IllegalArgumentException("Bad topic spec '" + entry + "'");
                }
                topics.put(name, partitions);
            }
        }
        return topics;
    }

    /** Settings for a broker; {@link #start()} builds and starts it. */
    public static final class Builder {
        private final Map<String, String> overrides = new LinkedHashMap<>();
        private final Map<String, Integer> advertisedListeners = new LinkedHashMap<>();
        private boolean quietLogging = true;
        private boolean secured;
        private Duration reauthentication = BrokerSecurity.DEFAULT_REAUTHENTICATION;
        private Duration tokenExpiryCheck = BrokerSecurity.DEFAULT_TOKEN_EXPIRY_CHECK;

        private Builder() {
        }

        /**
         * Overrides or adds one broker setting (applied after the test defaults). Leave the listener, quorum and
         * {@code log.dirs} settings alone: the broker chooses its ports and directory itself.
         */
        public Builder brokerProperty(String key, String value) {
            overrides.put(Objects.requireNonNull(key), Objects.requireNonNull(value));
            return this;
        }

        /**
         * Adds a second PLAINTEXT listener {@code name} (upper case, not PLAINTEXT or CONTROLLER) on a free loopback
         * port ({@link KafkaBroker#listenerPort(String)}) that the broker advertises as {@code 127.0.0.1:advertisedPort}:
         * clients bootstrapping there are sent back to that address, e.g. a {@link TcpProxy} in front of the
         * listener, so cutting the proxy takes the broker away from them and only them (clients on
         * {@link KafkaBroker#bootstrapServers()} keep it).
         */
        public Builder advertisedListener(String name, int advertisedPort) {
            if (!name.matches("[A-Z][A-Z0-9_]*") || name.equals("PLAINTEXT") || name.equals("CONTROLLER")) {
                throw new IllegalArgumentException("bad listener name " + name);
            }
            advertisedListeners.put(name, advertisedPort);
            return this;
        }

        /**
         * Closes the broker ({@link BrokerSecurity}): SASL_SSL with SCRAM-SHA-512 on the client listener, mutual TLS
         * on the controller's, the StandardAuthorizer with no access without an ACL; certificates made at start.
         */
        public Builder secured(boolean secured) {
            this.secured = secured;
            return this;
        }

        /** {@code connections.max.reauth.ms} of a secured broker: how soon a revoked credential's connection ends. */
        public Builder reauthentication(Duration bound) {
            this.reauthentication = Objects.requireNonNull(bound);
            return this;
        }

        /** How often a secured broker drops expired delegation tokens (how soon a new login with one is refused). */
        public Builder tokenExpiryCheck(Duration interval) {
            this.tokenExpiryCheck = Objects.requireNonNull(interval);
            return this;
        }

        public Builder brokerProperties(Map<String, String> properties) {
            properties.forEach(this::brokerProperty);
            return this;
        }

        /**
         * Whether to set the log level of Kafka's own loggers ({@code kafka}, {@code org.apache.kafka},
         * {@code state.change.logger}) to WARN in JBoss LogManager. Default {@code true}.
         */
        public Builder quietLogging(boolean quiet) {
            this.quietLogging = quiet;
            return this;
        }

        public KafkaBroker start() {
            if (quietLogging) {
                QuietLogging.kafka();
            }
            // Kafka loads plugin classes (e.g. the share-state persister) through the context class loader, and
            // its threads inherit the starting thread's: pin both to the loader of Kafka itself, not a test's
            // (Quarkus runs test resources with its application class loader as context class loader).
            Thread thread = Thread.currentThread();
            ClassLoader previous = thread.getContextClassLoader();
            thread.setContextClassLoader(KafkaRaftServer.class.getClassLoader());
            try {
                return startWithRetries();
            } finally {
                thread.setContextClassLoader(previous);
            }
        }

        private KafkaBroker startWithRetries() {
            RuntimeException failure = null;
            for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
                try {
                    return startOnce();
                } catch (RuntimeException e) {
                    if (failure == null) {
                        failure = e;
                    } else {
                        failure.addSuppressed(e);
                    }
                    // Only a port taken between probing and binding is worth another try, on new ports.
                    if (!causedByBindFailure(e)) {
                        break;
                    }
                }
            }
            throw failure;
        }

        private static boolean causedByBindFailure(Throwable e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof java.net.BindException) {
                    return true;
                }
            }
            return false;
        }

        private KafkaBroker startOnce() {
            long begin = System.nanoTime();
            Path dir = createTempDir();
            KafkaRaftServer server = null;
            try {
                int[] ports = freePorts(3 + advertisedListeners.size());
                int brokerPort = ports[0];
                int controllerPort = ports[1];
                String clusterId = Uuid.randomUuid().toString();
                Properties props = defaultBrokerProperties(dir.resolve("logs"), brokerPort, controllerPort);
                BrokerSecurity security = null;
                if (secured) {
                    security = BrokerSecurity.createOrLoad(dir.resolve("security"), BrokerSecurity.LOOPBACK_NAMES,
                        reauthentication).tokenExpiryCheck(tokenExpiryCheck);
                    security.configure(props, "127.0.0.1", brokerPort, controllerPort, ports[2]);
                }
                String listenerProtocol = secured ? BrokerSecurity.LISTENER_PROTOCOL : "PLAINTEXT";
                Map<String, Integer> extraPorts = new LinkedHashMap<>();
                int next = 3;
                for (Map.Entry<String, Integer> listener : advertisedListeners.entrySet()) {
                    String name = listener.getKey();
                    int port = ports[next++];
                    extraPorts.put(name, port);
                    if (security != null) {
                        // with its own SCRAM login entry, without which a secured broker fails at start
                        security.addListener(props, name, "127.0.0.1:" + port, "127.0.0.1:" + listener.getValue());
                        continue;
                    }
                    props.put("listeners", props.get("listeners") + "," + name + "://127.0.0.1:" + port);
                    props.put("advertised.listeners", props.get("advertised.listeners") + "," + name + "://127.0.0.1:"
                        + listener.getValue());
                    props.put("listener.security.protocol.map", props.get("listener.security.protocol.map") + "," + name
                        + ":" + listenerProtocol);
                }
                props.putAll(overrides);
                Path propsFile = dir.resolve("server.properties");
                // the settings hold the key store's and the broker's passwords: owner only
                Files.createFile(propsFile, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                try (OutputStream out = Files.newOutputStream(propsFile)) {
                    props.store(out, "csi-orchestrator testkit broker");
                }
                KafkaConfig config = new KafkaConfig(props, false); // a bad setting fails here, readably
                Kraft.format(clusterId, propsFile, security == null ? List.of() : security.formatArguments());

                server = new KafkaRaftServer(config, Time.SYSTEM);
                server.startup();
                String bootstrap = "127.0.0.1:" + brokerPort;
                KafkaBroker broker = new KafkaBroker(server, dir, bootstrap, clusterId, extraPorts, security,
                    "127.0.0.1:" + ports[2]);
                broker.awaitReady(System.nanoTime() - begin);
                LOG.log(System.Logger.Level.INFO, "Kafka broker started in {0} ms at {1} (data in {2})",
                    (System.nanoTime() - begin) / 1_000_000, bootstrap, dir);
                return broker;
            } catch (IOException e) {
                shutdownQuietly(server);
                deleteRecursively(dir);
                throw new UncheckedIOException("Could not prepare Kafka broker in " + dir, e);
            } catch (RuntimeException | Error e) {
                shutdownQuietly(server);
                deleteRecursively(dir);
                throw e;
            }
        }
    }

    static Properties defaultBrokerProperties(Path logDir, int brokerPort, int controllerPort) {
        return Kraft.brokerProperties(logDir, brokerPort, controllerPort);
    }

    private void awaitReady(long elapsedNanos) {
        Kraft.awaitReady(bootstrapServers, adminSecurity, STARTUP_TIMEOUT.minusNanos(elapsedNanos));
    }

    private static Path createTempDir() {
        try {
            return Files.createTempDirectory("csi-testkit-kafka-");
        } catch (IOException e) {
            throw new UncheckedIOException("Could not create a temporary directory for Kafka", e);
        }
    }

    static int[] freePorts(int count) {
        return Kraft.freePorts(count);
    }

    private static void shutdownQuietly(KafkaRaftServer server) {
        if (server == null) {
            return;
        }
        try {
            server.shutdown();
            server.awaitShutdown();
        } catch (RuntimeException ignored) {
            // best effort on a failed start
        }
    }

    static void deleteRecursively(Path root) {
        Kraft.deleteRecursively(root);
    }

    @Override
    public String toString() {
        return "KafkaBroker[" + bootstrapServers + ", cluster " + clusterId + "]";
    }
}
