package io.csiorchestrator.testkit;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.utils.Time;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;

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
    private final Object lock = new Object();
    private boolean closed;

    private KafkaBroker(KafkaRaftServer server, Path dataDir, String bootstrapServers, String clusterId,
                        Map<String, Integer> extraListenerPorts) {
        this.server = server;
        this.dataDir = dataDir;
        this.bootstrapServers = bootstrapServers;
        this.clusterId = clusterId;
        this.extraListenerPorts = Map.copyOf(extraListenerPorts);
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

    /** A new Admin client on this broker; the caller closes it. */
    public Admin admin() {
        return admin(bootstrapServers);
    }

    static Admin admin(String bootstrapServers) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "csi-testkit-admin");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        return Admin.create(props);
    }

    /**
     * Creates a topic (replication factor 1) and waits until the broker knows it.
     *
     * @return {@code true} if created, {@code false} if a topic of that name already existed (left as it is)
     */
    public boolean createTopic(String name, int partitions, Map<String, String> configs) {
        return createTopic(bootstrapServers, name, partitions, configs);
    }

    public boolean createTopic(String name, int partitions) {
        return createTopic(name, partitions, Map.of());
    }

    static boolean createTopic(String bootstrapServers, String name, int partitions, Map<String, String> configs) {
        Objects.requireNonNull(name, "name");
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be >= 1: " + partitions);
        }
        NewTopic topic = new NewTopic(name, partitions, (short) 1).configs(configs == null ? Map.of() : configs);
        try (Admin admin = admin(bootstrapServers)) {
            try {
                admin.createTopics(List.of(topic)).all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TopicExistsException) {
                    return false;
                }
                throw new IllegalStateException("Could not create topic " + name, e.getCause());
            }
            awaitTopicVisible(admin, name);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while creating topic " + name, e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("Timed out creating topic " + name, e);
        }
    }

    private static void awaitTopicVisible(Admin admin, String name) throws InterruptedException {
        long deadline = System.nanoTime() + ADMIN_TIMEOUT.toNanos();
        while (true) {
            try {
                admin.describeTopics(List.of(name)).allTopicNames().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                return;
            } catch (ExecutionException | TimeoutException e) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("Topic " + name + " not visible after creation", e);
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
            }
        }
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
                int[] ports = freePorts(2 + advertisedListeners.size());
                int brokerPort = ports[0];
                int controllerPort = ports[1];
                String clusterId = Uuid.randomUuid().toString();
                Properties props = defaultBrokerProperties(dir.resolve("logs"), brokerPort, controllerPort);
                Map<String, Integer> extraPorts = new LinkedHashMap<>();
                int next = 2;
                for (Map.Entry<String, Integer> listener : advertisedListeners.entrySet()) {
                    String name = listener.getKey();
                    int port = ports[next++];
                    extraPorts.put(name, port);
                    props.put("listeners", props.get("listeners") + "," + name + "://127.0.0.1:" + port);
                    props.put("advertised.listeners", props.get("advertised.listeners") + "," + name + "://127.0.0.1:"
                        + listener.getValue());
                    props.put("listener.security.protocol.map", props.get("listener.security.protocol.map") + "," + name
                        + ":PLAINTEXT");
                }
                props.putAll(overrides);
                Path propsFile = dir.resolve("server.properties");
                try (OutputStream out = Files.newOutputStream(propsFile)) {
                    props.store(out, "csi-orchestrator testkit broker");
                }
                KafkaConfig config = new KafkaConfig(props, false); // a bad setting fails here, readably
                format(clusterId, propsFile);

                server = new KafkaRaftServer(config, Time.SYSTEM);
                server.startup();
                String bootstrap = "127.0.0.1:" + brokerPort;
                KafkaBroker broker = new KafkaBroker(server, dir, bootstrap, clusterId, extraPorts);
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
        Properties p = new Properties();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("log.dirs", logDir.toAbsolutePath().toString());

        // One node: every internal topic has one replica, few partitions.
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "1");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("transaction.state.log.num.partitions", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("default.replication.factor", "1");
        p.put("min.insync.replicas", "1");
        p.put("num.partitions", "1");
        p.put("auto.create.topics.enable", "true");
        p.put("group.share.enable", "false");

        // Fast tests.
        p.put("group.initial.rebalance.delay.ms", "0");
        p.put("broker.heartbeat.interval.ms", "500");
        p.put("controller.quorum.election.timeout.ms", "1000");

        // Small footprint: few threads, small buffers (the cleaner's 128 MiB default buffer is wasted here).
        p.put("num.network.threads", "2");
        p.put("num.io.threads", "2");
        p.put("background.threads", "2");
        p.put("num.recovery.threads.per.data.dir", "1");
        p.put("log.cleaner.threads", "1");
        p.put("log.cleaner.dedupe.buffer.size", String.valueOf(2 * 1024 * 1024));
        p.put("log.index.size.max.bytes", String.valueOf(1024 * 1024));
        return p;
    }

    private static void format(String clusterId, Path propsFile) {
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        int rc;
        try (PrintStream out = new PrintStream(captured, true, StandardCharsets.UTF_8)) {
            // StorageTool.execute, never main(): main() exits the JVM.
            rc = StorageTool.execute(new String[] {
                "format", "--cluster-id", clusterId, "--config", propsFile.toString(), "--ignore-formatted"},
                out);
        } catch (Exception e) {
            throw new IllegalStateException("Formatting Kafka storage failed: " + captured.toString(StandardCharsets.UTF_8), e);
        }
        if (rc != 0) {
            throw new IllegalStateException("Formatting Kafka storage failed (exit " + rc + "): "
                + captured.toString(StandardCharsets.UTF_8));
        }
    }

    private void awaitReady(long elapsedNanos) {
        long deadline = System.nanoTime() + STARTUP_TIMEOUT.toNanos() - elapsedNanos;
        Exception last = null;
        try (Admin admin = admin()) {
            while (System.nanoTime() < deadline) {
                try {
                    int nodes = admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).size();
                    if (nodes > 0) {
                        return;
                    }
                } catch (ExecutionException | TimeoutException e) {
                    last = e;
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("Interrupted while waiting for the Kafka broker", e);
                }
            }
        }
        throw new IllegalStateException("Kafka broker at " + bootstrapServers + " not ready within " + STARTUP_TIMEOUT, last);
    }

    private static Path createTempDir() {
        try {
            return Files.createTempDirectory("csi-testkit-kafka-");
        } catch (IOException e) {
            throw new UncheckedIOException("Could not create a temporary directory for Kafka", e);
        }
    }

    /** Ports that were free on loopback a moment ago (held together, so they're distinct). */
    static int[] freePorts(int count) {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
                socket.setReuseAddress(true);
                sockets.add(socket);
                ports[i] = socket.getLocalPort();
            }
            return ports;
        } catch (IOException e) {
            throw new UncheckedIOException("Could not find free ports", e);
        } finally {
            for (ServerSocket socket : sockets) {
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
            }
        }
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
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            paths.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(path -> {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException ignored) {
                    // best effort: temp dirs
                }
            });
        } catch (IOException | UncheckedIOException ignored) {
            // best effort: temp dirs
        }
    }

    @Override
    public String toString() {
        return "KafkaBroker[" + bootstrapServers + ", cluster " + clusterId + "]";
    }
}
