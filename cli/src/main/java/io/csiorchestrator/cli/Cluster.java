package io.csiorchestrator.cli;

import io.csiorchestrator.localinfra.FreePorts;
import io.csiorchestrator.localinfra.SharedArchive;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.AccessTokens;
import io.csiorchestrator.localinfra.BrokerSecurity;
import io.csiorchestrator.localinfra.KafkaMain;
import io.csiorchestrator.localinfra.KafkaUsers;
import io.csiorchestrator.localinfra.Kraft;
import io.csiorchestrator.localinfra.PostgresMain;
import io.csiorchestrator.localinfra.StateDir;

/**
 * The whole system as local processes in one work directory: Kafka and PostgreSQL (two processes,
 * each with its state under {@code <work>/kafka} and {@code <work>/postgres}), claim-service,
 * plugin-registry-service, and per node a hostpath plugin and a node-mount-worker. Every process logs to {@code <work>/logs/<name>.log}; {@code <work>/pids}
 * lists {@code <name> <pid>} in start order, so {@code csi down} can stop what {@code csi up} left.
 */
public final class Cluster {

    public static final String PLUGIN_ID = "hostpath";
    public static final String PIDS = "pids";
    /** The names of the Kafka and PostgreSQL processes (in {@code pids}, {@code logs/}) and of their directories. */
    public static final String KAFKA = "kafka";
    public static final String POSTGRES = "postgres";
    public static final List<String> DATABASES = List.of("claims", "plugin_registry");
    /** Topic prefix of the local system, so its topics stand apart on a shared broker. */
    public static final String TOPIC_PREFIX = "csi.";
    public static final List<String> NODES = List.of("node-1", "node-2");
    /** The process that serves simulated nodes ({@code ./csi up --simulated-nodes N}), module node-simulator. */
    public static final String SIMULATOR = "node-simulator";
    /** The simulated nodes' plugin id, their ids {@code sim-node-1..N}, and their roots under the work dir. */
    public static final String SIM_PLUGIN_ID = "simulated";
    public static final String SIM_NODE_PREFIX = "sim-node-";
    public static final String SIM_NODES_DIR = "sim-nodes";

    /** A started process. */
    public record Proc(String name, ProcessHandle handle, Path log) {
    }

    /** How a process was started: its command line and the environment added to the CLI's. */
    public record Launch(List<String> command, Map<String, String> environment) {
    }

    /** Ports of the HTTP services. */
    public record Ports(int claims, int registry, Map<String, Integer> workers) {
        public static Ports free() {
            Map<String, Integer> workers = new LinkedHashMap<>();
            for (String node : NODES) {
                workers.put(node, FreePorts.take());
            }
            return new Ports(FreePorts.take(), FreePorts.take(), workers);
        }

        public static Ports defaults() {
            Map<String, Integer> workers = new LinkedHashMap<>();
            int port = 8083;
            for (String node : NODES) {
                workers.put(node, port++);
            }
            return new Ports(8081, 8082, workers);
        }
    }

    private final Path home;
    private final Path workDir;
    private final Ports ports;
    private final boolean detached;
    private final List<Proc> procs = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, Launch> launches = new java.util.concurrent.ConcurrentHashMap<>();
    private Properties infra;
    private boolean jsonLogs;
    private boolean durable;
    /** 0: real workers and plugins on {@link #NODES}; else that many simulated nodes in one process. */
    private int simulatedNodes;
    private int simulatorPort;
    private String pluginDelay = "1ms";
    /** The workers' volume stats poll ({@code csi.worker.condition-interval}); null: the worker's default (60 s). */
    private java.time.Duration volumeStatsEvery;
    /**
     * How often the workers started after this probe their plugins: 1 s by default, for the demo, the chaos suite and
     * the tests, which kill plugins and show or check how soon a worker reports it; `up` takes the worker's own
     * default (5 s, {@link #pluginProbeEvery}), as a production node would: a probe each second was a fifth of the
     * plugin's calls under `./csi bench` at 20 ops/s and the largest share of an idle plugin's and worker's CPU.
     */
    private java.time.Duration pluginProbeEvery = java.time.Duration.ofSeconds(1);

    private final Map<String, String> extraEnv = new java.util.LinkedHashMap<>();
    /** Extra JVM options for every JVM `up` starts (space-separated, after the defaults). */
    public static final String JVM_OPTIONS_ENV = "CSI_JVM_OPTIONS";
    /**
     * A JDK home (25 or later) the Quarkus services (claim-service, plugin-registry-service, the workers) run on, each
     * with an AOT cache of its own under {@code <work>/aot} ({@link ServiceJava}); {@value #CLI_JAVA}: the CLI's own
     * Java with its class-data archive; unset: the newest JDK 25 or later installed when the cluster keeps
     * {@linkplain #aotCache(boolean) AOT caches} ({@code up}), else the CLI's own Java.
     */
    public static final String SERVICE_JAVA_HOME_ENV = "CSI_SERVICE_JAVA_HOME";
    /** {@value #SERVICE_JAVA_HOME_ENV}'s value for the CLI's own Java. */
    public static final String CLI_JAVA = "cli";
    /** The runtime chosen by measurement ({@link #measuredRuntime(boolean)}). */
    private boolean measuredRuntime;
    /** The services' JDK 25 AOT caches under the work dir ({@link #aotCache(boolean)}). */
    private boolean aotCache;
    /**
     * {@code plain}: {@code up}, {@code demo} and {@code chaos} start every JVM as the tests' systems do (the CLI's own
     * JDK, C1, no compact headers, no AOT cache): what the build's tests set ({@link #measuredRuntimeWanted()}).
     */
    public static final String RUNTIME_ENV = "CSI_RUNTIME";
    /** Nodes whose worker and plugin run in a network namespace of their own ({@link #isolate}). */
    private final Map<String, io.csiorchestrator.localinfra.NetNamespace> isolated = new LinkedHashMap<>();

    /** The admin token {@code up} writes in its work dir (0600); every CLI command finds it there. */
    public static final String ADMIN_TOKEN = "admin.token";
    /** The services' token keys under the work dir: signing.pem (0600), jwks.json, revoked-tokens. */
    public static final String SECURITY_DIR = "security";
    static final Duration ADMIN_TOKEN_TTL = Duration.ofDays(30);
    private String adminToken;

    public Cluster(Path home, Path workDir, Ports ports, boolean detached) {
        this.home = home.toAbsolutePath().normalize();
        this.workDir = workDir.toAbsolutePath().normalize();
        this.ports = ports;
        this.detached = detached;
    }

    /**
     * Extra environment for every process this cluster starts (e.g. a test's shorter {@code CSI_*} timers); the
     * process's own variables win.
     */
    public Cluster environment(Map<String, String> env) {
        extraEnv.putAll(env);
        return this;
    }

    /**
     * {@code node}'s worker and hostpath plugin run inside {@code ns} (issue 19's partition faults): started with
     * {@code nsenter --net}, the worker reaches Kafka only through a second listener Kafka binds to and advertises at
     * {@link io.csiorchestrator.localinfra.NetNamespace#hostAddress()} (call before {@link #startInfra()}), and
     * serves HTTP at the namespace's address ({@link #workerUrl}). The mount namespace is the host's: its bind
     * mounts are in this process's mount table as the other node's are.
     */
    public Cluster isolate(String node, io.csiorchestrator.localinfra.NetNamespace ns) {
        isolated.put(node, ns);
        return this;
    }

    /** The namespace {@code node} runs in, if {@link #isolate isolated}. */
    public Optional<io.csiorchestrator.localinfra.NetNamespace> namespace(String node) {
        return Optional.ofNullable(isolated.get(node));
    }

    /** Kafka's listener name for an isolated node: {@code NODE_1} for node-1. */
    static String listenerName(String node) {
        return node.toUpperCase(java.util.Locale.ROOT).replaceAll("[^A-Z0-9]", "_");
    }

    /** Where {@code node}'s worker finds Kafka: its own listener when isolated, else the loopback one. */
    public String kafkaBootstrap(String node) {
        return isolated.containsKey(node) ? infra.getProperty("kafka.listener." + listenerName(node))
                : kafkaCertificateBootstrap();
    }

    /** The services log JSON lines (QUARKUS_LOG_CONSOLE_JSON_ENABLED=true), as a log shipper wants them. */
    /**
     * The runtime chosen by measurement (issue 36 item 5, README "Runtime by measurement"): the Quarkus services on the
     * newest JDK 25 or later installed with their AOT cache (unless {@value #SERVICE_JAVA_HOME_ENV} says otherwise), the
     * broker with the full tiered JIT (C2), every other JVM on C1: what {@code up}, {@code demo} and {@code chaos} run.
     * Off (the tests' systems, started fresh many times over and short-lived): every JVM on the CLI's own Java and C1,
     * with the class-data archives every start of the build shares.
     */
    public Cluster measuredRuntime(boolean on) {
        this.measuredRuntime = on;
        return this;
    }

    /**
     * The Quarkus services run on the newest JDK 25 or later installed with an AOT cache each under the work dir,
     * written at a service's exit and used by the next start: what {@code up} does, whose work dir is kept from one
     * start to the next. {@code demo} and {@code chaos} start in a new work dir each time, where a cache written at
     * the end would never be used (and its writing costs each service seconds of CPU at the stop): their services run
     * on the CLI's JDK with the class-data archive every start of the build shares.
     */
    public Cluster aotCache(boolean on) {
        this.aotCache = on;
        return this;
    }

    /** Whether {@code up}, {@code demo} and {@code chaos} use the runtime chosen by measurement: unless {@value #RUNTIME_ENV} is {@code plain}. */
    public static boolean measuredRuntimeWanted() {
        String setting = System.getenv(RUNTIME_ENV);
        return !"plain".equalsIgnoreCase(setting == null ? "" : setting.trim());
    }

    public Cluster jsonLogs(boolean on) {
        this.jsonLogs = on;
        return this;
    }

    /**
     * Kafka's log and PostgreSQL's data are kept across stops, PostgreSQL with fsync and synchronous commit
     * ({@code ./csi up}); else ({@code ./csi demo}, the default) they are throw-away: no fsync, deleted on stop.
     */
    public Cluster durable(boolean on) {
        this.durable = on;
        return this;
    }

    /**
     * {@code nodes} simulated nodes ({@code sim-node-1..N}, module node-simulator) in place of the real workers and
     * plugins; its health and metrics on {@code port}; each simulated plugin call takes {@code pluginDelay}.
     */
    public Cluster simulated(int nodes, int port, String pluginDelay) {
        this.simulatedNodes = nodes;
        this.simulatorPort = port;
        this.pluginDelay = pluginDelay;
        return this;
    }

    public int simulatedNodes() {
        return simulatedNodes;
    }

    /** The nodes of this system: node-1, node-2, or sim-node-1..N. */
    public List<String> nodes() {
        if (simulatedNodes == 0) {
            return NODES;
        }
        List<String> ids = new ArrayList<>();
        for (int i = 1; i <= simulatedNodes; i++) {
            ids.add(SIM_NODE_PREFIX + i);
        }
        return ids;
    }

    public String simulatorUrl() {
        return "http://127.0.0.1:" + simulatorPort;
    }

    /** The simulated nodes' worker roots: {@code <dir>/<node id>}. */
    public Path simulatedNodesDir() {
        return workDir.resolve(SIM_NODES_DIR);
    }

    public Path workDir() {
        return workDir;
    }

    public Path logs() {
        return workDir.resolve("logs");
    }

    public Ports ports() {
        return ports;
    }

    public String claimsUrl() {
        return "http://127.0.0.1:" + ports.claims();
    }

    public String registryUrl() {
        return "http://127.0.0.1:" + ports.registry();
    }

    public String workerUrl(String node) {
        io.csiorchestrator.localinfra.NetNamespace ns = isolated.get(node);
        return "http://" + (ns == null ? "127.0.0.1" : ns.nodeAddress()) + ":" + ports.workers().get(node);
    }

    public String kafkaBootstrap() {
        return infra.getProperty("kafka.bootstrap.servers");
    }

    /** The broker's client-certificate listener ({@code host:port}; issue 33). */
    public String kafkaCertificateBootstrap() {
        return infra.getProperty(CertificateCredential.BOOTSTRAP_KEY);
    }

    /** JDBC URL and user of claim-service's database (password {@code postgres}), once the infrastructure runs. */
    public String[] claimsDatabase() {
        return new String[] {infra.getProperty("postgres.claims.jdbc"), infra.getProperty("postgres.username")};
    }

    public Path nodeDir(String node) {
        return workDir.resolve(node);
    }

    public Path pluginsDir(String node) {
        return nodeDir(node).resolve("plugins");
    }

    public Path workerRoot(String node) {
        return nodeDir(node).resolve("root");
    }

    public Path pluginSocket(String node) {
        return pluginsDir(node).resolve(PLUGIN_ID).resolve("csi.sock");
    }

    /**
     * The hostpath plugins' {@code --shared-dir}: the volume directories ({@code volumes/}) and the
     * controller state of both nodes' plugins, like a storage backend both nodes reach.
     */
    public Path hostpathShared() {
        return workDir.resolve("hostpath-shared");
    }

    public List<Proc> procs() {
        return List.copyOf(procs);
    }

    public void prepare() throws IOException {
        Files.createDirectories(logs());
        if (simulatedNodes > 0) {
            Files.createDirectories(simulatedNodesDir());
            return;
        }
        Files.createDirectories(hostpathShared());
        for (String node : NODES) {
            Files.createDirectories(workerRoot(node));
            Files.createDirectories(pluginsDir(node).resolve(PLUGIN_ID));
            Files.createDirectories(nodeDir(node).resolve("hostpath-state"));
        }
    }

    // ------------------------------------------------------------------ processes

    /** Kafka's directory: its log, ports and cluster id ({@link KafkaMain}). */
    public Path kafkaDir() {
        return workDir.resolve(KAFKA);
    }

    /** PostgreSQL's directory: its data directory {@code data/} and port ({@link PostgresMain}). */
    public Path postgresDir() {
        return workDir.resolve(POSTGRES);
    }

    /** The PostgreSQL server's own pid (the postmaster), while it runs. */
    public Optional<Long> postmasterPid() {
        return PostgresMain.postmasterPid(postgresDir().resolve("data"));
    }

    /**
     * Starts Kafka and PostgreSQL as two processes ({@link KafkaMain}, {@link PostgresMain}), each on its
     * directory under the work dir, and creates every contract topic (partitions and compaction from
     * {@link Topic}, plus the {@code -dead-letter} topics) and the services' databases where missing.
     */
    public void startInfra() throws IOException {
        Proc kafka = startKafka();
        Proc postgres = startPostgres();
        Properties kafkaReady = awaitInfra(kafka, kafkaDir());
        Properties postgresReady = awaitInfra(postgres, postgresDir());
        infra = infraProperties(kafkaReady, postgresReady);
        TopicCatalog catalog = new TopicCatalog(TOPIC_PREFIX);
        // one Admin for every topic: a connection to the closed broker costs a TLS handshake and a SCRAM exchange;
        // and one request for all of them (those there already, after a restart, are left as they are)
        List<org.apache.kafka.clients.admin.NewTopic> topics = new ArrayList<>();
        for (Map.Entry<String, Topic> entry : catalog.all().entrySet()) {
            Topic topic = entry.getValue();
            Map<String, String> configs = topic.compacted() ? Map.of("cleanup.policy", "compact") : Map.of();
            topics.add(new org.apache.kafka.clients.admin.NewTopic(entry.getKey(), topic.defaultPartitions(), (short) 1)
                    .configs(configs));
            topics.add(new org.apache.kafka.clients.admin.NewTopic(catalog.deadLetterName(topic), 1, (short) 1)
                    .configs(Map.of()));
        }
        try (org.apache.kafka.clients.admin.Admin admin = Kraft.admin(kafkaBootstrap(), kafkaAdmin())) {
            Kraft.createTopics(admin, topics);
            issueKafkaCredentials(catalog, admin);
        }
    }

    /** The broker's admin (a super user): its password and CA are in Kafka's own directory ({@link KafkaMain}). */
    public KafkaClientSecurity kafkaAdmin() {
        Path dir = kafkaDir().resolve(KafkaMain.SECURITY_DIR);
        return KafkaClientSecurity.scram(KafkaAccess.ADMIN, dir.resolve(BrokerSecurity.ADMIN_PASSWORD),
                dir.resolve(BrokerSecurity.CA_FILE));
    }

    /** The CA certificate every Kafka client of this system trusts. */
    public Path kafkaTruststore() {
        return kafkaDir().resolve(KafkaMain.SECURITY_DIR).resolve(BrokerSecurity.CA_FILE);
    }

    /**
     * Gives every principal of this system its credential and ACLs ({@link KafkaAccess}). The two services, the
     * simulator and the CLI's operator and bench users get a SCRAM password, kept (0600) under
     * {@code <work>/kafka-credentials/} so a restart (or {@code ./csi up} again) reuses it; the CLI's Kafka clients use
     * them ({@link CliKafkaSecurity}). Each worker's node gets an expiring credential instead (issue 20 item 8): a
     * delegation token and a client certificate (issue 33; what it logs in with unless isolated) that live
     * {@link #nodeTokenTtl()} (env {@value #NODE_TOKEN_TTL_ENV}, default 30 days), issued anew at every start, when
     * the previous start's tokens and certificates of that node are revoked.
     */
    private void issueKafkaCredentials(TopicCatalog catalog, org.apache.kafka.clients.admin.Admin admin) throws IOException {
        List<KafkaAccess.Principal> principals = new ArrayList<>(List.of(KafkaAccess.Principal.claimService(),
                KafkaAccess.Principal.pluginRegistry(), KafkaAccess.Principal.operator(), KafkaAccess.Principal.bench(),
                KafkaAccess.Principal.simulator()));
        Files.createDirectories(workDir.resolve(CliKafkaSecurity.CREDENTIALS_DIR));
        Duration tokenTtl = nodeTokenTtl();
        KafkaUsers users = new KafkaUsers(admin);
        for (KafkaAccess.Principal principal : principals) {
            Path file = CliKafkaSecurity.passwordFile(workDir, principal.name());
            if (!Files.isRegularFile(file)) {
                BrokerSecurity.writeOwnerOnly(file, BrokerSecurity.newPassword() + "\n");
            }
            users.issue(principal, Files.readString(file).strip(), catalog);
            if (CERTIFICATE_SERVICES.contains(principal.name())) {
                // the two services log in by certificate (issue 33): no SCRAM re-authentication every
                // connections.max.reauth.ms, which JFR showed as ~40 % of an idle claim-service's CPU
                CertificateCredential.authority(workDir).orElseThrow().revoke(principal.name());
                CertificateCredential.issue(workDir, users, principal, catalog, tokenTtl,
                        CertificateCredential.defaultDir(workDir, principal.name()));
            }
        }
        for (String node : NODES) {
            KafkaAccess.Principal principal = KafkaAccess.Principal.node(node);
            users.grant(principal, catalog);
            users.revokeTokens(principal.name());
            Path oldPassword = CliKafkaSecurity.passwordFile(workDir, principal.name());
            if (Files.deleteIfExists(oldPassword)) {
                // a work dir from before node tokens: that password must no longer log in
                users.deleteCredential(principal.name());
            }
            io.csiorchestrator.events.KafkaToken token = users.issueToken(principal.name(), tokenTtl);
            BrokerSecurity.writeOwnerOnly(CliKafkaSecurity.tokenFile(workDir, principal.name()), token.toFileText());
            // and a client certificate (issue 33), what the worker logs in with unless it is isolated in a network
            // namespace (./csi chaos: its own SASL_SSL listener there, so the token): the previous start's ones revoked
            CertificateCredential.authority(workDir).orElseThrow().revoke(principal.name());
            CertificateCredential.issue(workDir, users, principal, catalog, tokenTtl,
                    CertificateCredential.defaultDir(workDir, principal.name()));
        }
        // this process's own Kafka clients (chaos, demo) use this work dir's credentials, each as its role (the
        // operator; bench as csi-bench): not process-wide csi.kafka.* properties, which would make every later
        // client of this process (a test's in-process CLI run) the operator whatever its role
        CliKafkaSecurity.useClusterWorkDir(workDir);
    }

    /** The environment variable that sets how long the nodes' Kafka tokens live ({@code 30d}, {@code 12h}, ...). */
    static final String NODE_TOKEN_TTL_ENV = "CSI_KAFKA_NODE_TOKEN_TTL";

    /** How long a node's Kafka token lives from the start that issued it: {@value #NODE_TOKEN_TTL_ENV}, else 30 days. */
    Duration nodeTokenTtl() {
        String value = extraEnv.getOrDefault(NODE_TOKEN_TTL_ENV, System.getenv(NODE_TOKEN_TTL_ENV));
        if (value == null || value.isBlank()) {
            return Duration.ofDays(30);
        }
        try {
            return TokenCommand.ttl(value);
        } catch (Args.UsageException e) {
            throw new Args.UsageException(NODE_TOKEN_TTL_ENV + " takes a duration like 30d, 12h or 90m, not '" + value + "'");
        }
    }

    /**
     * A claim client of this system: Kafka as its operator (the credential {@link #issueKafkaCredentials} issued) and
     * requests signed with this work dir's scheduler key, whatever the process's CLI settings are
     * ({@link CliKafkaSecurity}, which the last system started in this process set): a test may keep a system running
     * while another one is started in the same JVM.
     */
    public ClaimClient claimClient() {
        return new ClaimClient(kafkaBootstrap(), TOPIC_PREFIX, kafkaClient(KafkaAccess.OPERATOR),
                io.csiorchestrator.events.identity.IdentityKey.read(identities().keyFile(
                        io.csiorchestrator.events.identity.Principal.scheduler(ClaimClient.CLI_SCHEDULER))));
    }

    /** The client settings of {@code user}, issued by {@link #issueKafkaCredentials}. */
    public KafkaClientSecurity kafkaClient(String user) {
        return KafkaClientSecurity.scram(user, CliKafkaSecurity.passwordFile(workDir, user), kafkaTruststore());
    }

    /**
     * The {@code -D} settings that make a node's worker authenticate: with its client certificate (on
     * {@link #kafkaBootstrap(String)}, the certificate listener), or its token when it is isolated.
     */
    private List<String> nodeKafkaCredentials(String node) {
        if (!isolated.containsKey(node)) {
            Path dir = CertificateCredential.defaultDir(workDir, KafkaAccess.Principal.node(node).name());
            return List.of("-D" + KafkaClientSecurity.CERTIFICATE_FILE + "=" + dir.resolve(CertificateCredential.CERTIFICATE),
                    "-D" + KafkaClientSecurity.KEY_FILE + "=" + dir.resolve(CertificateCredential.KEY),
                    "-D" + KafkaClientSecurity.TRUSTSTORE + "=" + kafkaTruststore());
        }
        return List.of("-D" + KafkaClientSecurity.TOKEN_FILE + "=" + CliKafkaSecurity.tokenFile(workDir,
                        KafkaAccess.Principal.node(node).name()),
                "-D" + KafkaClientSecurity.TRUSTSTORE + "=" + kafkaTruststore());
    }

    /** The services that log in by client certificate under {@code up} (issue 33); the CLI and the simulator keep SCRAM. */
    static final java.util.Set<String> CERTIFICATE_SERVICES = java.util.Set.of(KafkaAccess.CLAIM_SERVICE,
            KafkaAccess.PLUGIN_REGISTRY);

    /**
     * The {@code -D} settings that make a service's Kafka clients log in with its client certificate on the
     * certificate listener ({@link #kafkaCertificateBootstrap()}, which the caller's {@code kafka.bootstrap.servers} names).
     */
    private List<String> certificateCredentials(String user) {
        Path dir = CertificateCredential.defaultDir(workDir, user);
        return List.of("-D" + KafkaClientSecurity.CERTIFICATE_FILE + "=" + dir.resolve(CertificateCredential.CERTIFICATE),
                "-D" + KafkaClientSecurity.KEY_FILE + "=" + dir.resolve(CertificateCredential.KEY),
                "-D" + KafkaClientSecurity.TRUSTSTORE + "=" + kafkaTruststore());
    }

    /** The {@code -D} settings that make a started process's Kafka clients authenticate as {@code user}. */
    private List<String> kafkaCredentials(String user) {
        return List.of("-D" + KafkaClientSecurity.USERNAME + "=" + user,
                "-D" + KafkaClientSecurity.PASSWORD_FILE + "=" + CliKafkaSecurity.passwordFile(workDir, user),
                "-D" + KafkaClientSecurity.TRUSTSTORE + "=" + kafkaTruststore());
    }

    /** Starts the Kafka process (its own log {@code logs/kafka.log}); {@link #awaitInfra} waits for it. */
    public Proc startKafka() throws IOException {
        List<String> listeners = new ArrayList<>();
        isolated.forEach((node, ns) -> {
            listeners.add("--listener");
            listeners.add(listenerName(node) + "=" + ns.hostAddress());
        });
        return startInfraProcess(KAFKA, KafkaMain.class, kafkaDir(), listeners);
    }

    /** Starts the PostgreSQL process (its own log {@code logs/postgres.log}); {@link #awaitInfra} waits for it. */
    public Proc startPostgres() throws IOException {
        List<String> databases = new ArrayList<>();
        for (String db : DATABASES) {
            databases.add("--database");
            databases.add(db);
        }
        return startInfraProcess(POSTGRES, PostgresMain.class, postgresDir(), databases);
    }

    private Proc startInfraProcess(String name, Class<?> main, Path dir, List<String> extra) throws IOException {
        Files.createDirectories(dir);
        Files.deleteIfExists(dir.resolve(StateDir.READY));
        List<String> cmd = java(name, 512);
        cmd.add("-cp");
        List<String> classPath = new ArrayList<>();
        // csi.cli.classpath: the packaged CLI jar (tests run from a surefire booter jar).
        String own = System.getProperty("csi.cli.classpath", System.getProperty("java.class.path"));
        for (String entry : own.split(java.io.File.pathSeparator)) {
            classPath.add(Path.of(entry).toAbsolutePath().normalize().toString());
        }
        if (main == KafkaMain.class) {
            // the broker's JVM starts as often as the services' (every up, every IT system): a class-data archive too
            cmd.addAll(cmd.indexOf("-cp"), sharedArchive(name, classPath.stream().map(Path::of).toList(), "kafka"));
        }
        cmd.add(String.join(java.io.File.pathSeparator, classPath));
        cmd.add("-Djava.util.logging.manager=org.jboss.logmanager.LogManager");
        cmd.add(main.getName());
        cmd.add(dir.toString());
        if (!durable) {
            cmd.add("--ephemeral");
        }
        cmd.addAll(extra);
        return start(name, cmd, Map.of());
    }

    /** Waits until the process serves ({@code <dir>/ready.properties}) and returns what it wrote there. */
    public Properties awaitInfra(Proc proc, Path dir) throws IOException {
        Path file = dir.resolve(StateDir.READY);
        Wait.forFile(proc.name() + " serving (" + file + ")", file, Duration.ofSeconds(180), proc);
        Properties props = new Properties();
        try (Reader reader = Files.newBufferedReader(file)) {
            props.load(reader);
        }
        return props;
    }

    private static Properties infraProperties(Properties kafka, Properties postgres) {
        Properties props = new Properties();
        props.setProperty("kafka.bootstrap.servers", kafka.getProperty("bootstrap.servers"));
        if (kafka.getProperty(KafkaMain.CERT_BOOTSTRAP) != null) {
            props.setProperty(CertificateCredential.BOOTSTRAP_KEY, kafka.getProperty(KafkaMain.CERT_BOOTSTRAP));
        }
        for (String key : kafka.stringPropertyNames()) {
            if (key.startsWith("listener.")) {
                props.setProperty("kafka." + key, kafka.getProperty(key));
            }
        }
        String port = postgres.getProperty("port");
        props.setProperty("postgres.port", port);
        props.setProperty("postgres.username", postgres.getProperty("username"));
        for (String db : DATABASES) {
            props.setProperty("postgres." + db + ".jdbc", "jdbc:postgresql://127.0.0.1:" + port + "/" + db);
            props.setProperty("postgres." + db + ".reactive", "postgresql://127.0.0.1:" + port + "/" + db);
        }
        return props;
    }

    /** The key set's directory ({@code <work>/security}). */
    public Path securityDir() {
        return workDir.resolve(SECURITY_DIR);
    }

    /**
     * The admin token of this work dir, made on first use: the key set under {@link #securityDir()} is made once
     * and kept from one {@code up} to the next, and a fresh admin token (30 days, every namespace) is signed with
     * it and written to {@code <work>/admin.token} (0600).
     */
    public synchronized String adminToken() {
        if (adminToken == null) {
            try {
                AccessTokens.SigningKey key = AccessTokens.ensureKeySet(securityDir());
                adminToken = AccessTokens.issue(key, AccessTokens.Claims.of("csi-up-admin", java.util.Set.of("admin"),
                        List.of(AccessTokens.ALL_NAMESPACES), ADMIN_TOKEN_TTL));
                Files.createDirectories(workDir);
                AccessTokens.writePrivate(workDir.resolve(ADMIN_TOKEN), adminToken + "\n");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot make the token keys under " + securityDir(), e);
            }
        }
        return adminToken;
    }

    /** The services' token settings: the key set to verify with, the revoked token ids, the record signers' trust file. */
    private List<String> tokenVerification() {
        adminToken();
        return List.of("-Dmp.jwt.verify.publickey.location=" + securityDir().resolve("jwks.json"),
                "-Dcsi.security.revoked-tokens-file=" + securityDir().resolve("revoked-tokens"),
                "-Dcsi.security.trust-file=" + identities().trustFile());
    }

    /**
     * The record-signing identities of this work dir ({@code <work>/security/identities}, issue 20 items 3 and 5),
     * made once and kept: a key per node (real or simulated) and the CLI's scheduler key ({@code scheduler:csi-cli}),
     * all in the trust file the services read; and the sealing keys (issue 20 item 4) of every node and of
     * claim-service, their public halves in the same trust file.
     */
    public synchronized io.csiorchestrator.events.identity.IdentityDirectory identities() {
        io.csiorchestrator.events.identity.IdentityDirectory dir = new io.csiorchestrator.events.identity.IdentityDirectory(
                securityDir().resolve(IDENTITIES_DIR));
        if (!identitiesMade) {
            for (String node : NODES) {
                dir.ensure(io.csiorchestrator.events.identity.Principal.node(node));
            }
            for (int i = 1; i <= simulatedNodes; i++) {
                dir.ensure(io.csiorchestrator.events.identity.Principal.node(SIM_NODE_PREFIX + i));
            }
            dir.ensure(io.csiorchestrator.events.identity.Principal.scheduler(ClaimClient.CLI_SCHEDULER));
            // claim-service's sealing keys (issue 20 item 4): schedulers seal mount flags for its public key
            dir.ensureSealing(CLAIM_SERVICE);
            if (System.getenv("CSI_IDENTITY_KEY_FILE") == null) {
                ClaimClient.signWithKeyFile(dir.keyFile(io.csiorchestrator.events.identity.Principal.scheduler(
                        ClaimClient.CLI_SCHEDULER)));
            }
            identitiesMade = true;
        }
        return dir;
    }

    private boolean identitiesMade;
    static final io.csiorchestrator.events.identity.Principal CLAIM_SERVICE =
            io.csiorchestrator.events.identity.Principal.service("claim-service");
    public static final String IDENTITIES_DIR = "identities";

    public Proc startRegistry() throws IOException {
        return startRegistry("plugin-registry-service", ports.registry());
    }

    /**
     * A plugin-registry-service instance named {@code name} (its log, its entry in {@code pids}, its
     * {@code CSI_INSTANCE_NAME}) on {@code port}: several instances share the database and the topics, the node
     * leases' partitions dealt among them ({@code ./csi chaos} runs a second replica for {@code registry-kill}).
     */
    public Proc startRegistry(String name, int port) throws IOException {
        Path jar = serviceJar("plugin-registry-service");
        List<String> cmd = serviceJava(name, 384, jar, HEAP_GIVEN_BACK);
        cmd.addAll(tokenVerification());
        cmd.addAll(certificateCredentials(KafkaAccess.PLUGIN_REGISTRY));
        cmd.addAll(List.of(
                "-Dquarkus.http.port=" + port,
                "-Dkafka.bootstrap.servers=" + kafkaCertificateBootstrap(),
                "-Dcsi.topics.prefix=" + TOPIC_PREFIX,
                "-Dquarkus.datasource.reactive.url=" + infra.getProperty("postgres.plugin_registry.reactive"),
                "-Dquarkus.datasource.username=" + infra.getProperty("postgres.username"),
                "-jar", jar.toString()));
        return start(name, cmd, Map.of("QUARKUS_DATASOURCE_PASSWORD", "postgres", "CSI_INSTANCE_NAME", name));
    }

    public Proc startClaims() throws IOException {
        return startClaims("claim-service", ports.claims());
    }

    /**
     * A claim-service instance named {@code name} (its log, its entry in {@code pids}, and its
     * {@code CSI_INSTANCE_NAME}, so that its consumers are static group members of their own) on {@code port}:
     * several instances share the database and the topics ({@code ./csi chaos} runs a second replica).
     */
    public Proc startClaims(String name, int port) throws IOException {
        Path jar = serviceJar("claim-service");
        List<String> cmd = serviceJava(name, 384, jar, HEAP_GIVEN_BACK);
        cmd.addAll(tokenVerification());
        cmd.addAll(certificateCredentials(KafkaAccess.CLAIM_SERVICE));
        cmd.addAll(List.of(
                "-Dquarkus.http.port=" + port,
                "-Dkafka.bootstrap.servers=" + kafkaCertificateBootstrap(),
                "-Dcsi.topics.prefix=" + TOPIC_PREFIX,
                "-Dquarkus.datasource.reactive.url=" + infra.getProperty("postgres.claims.reactive"),
                "-Dquarkus.datasource.username=" + infra.getProperty("postgres.username"),
                "-Dcsi.claims.reconcile-interval=1s",
                "-jar", jar.toString()));
        cmd.add(cmd.indexOf("-jar"), "-Dcsi.secrets.seal-key-file=" + identities().sealKeyFile(CLAIM_SERVICE));
        return start(name, cmd, Map.of("QUARKUS_DATASOURCE_PASSWORD", "postgres", "CSI_INSTANCE_NAME", name));
    }

    public Proc startPlugin(String node) throws IOException {
        return startPlugins(List.of(node)).get(0);
    }

    /**
     * The hostpath plugins of {@code nodes}, started together (one JVM does not wait for the other's start) and each
     * waited for until its socket is there; in the order of {@code nodes}.
     */
    public List<Proc> startPlugins(List<String> nodes) throws IOException {
        List<Proc> started = new ArrayList<>();
        for (String node : nodes) {
            started.add(launchPlugin(node));
        }
        for (int i = 0; i < nodes.size(); i++) {
            Path socket = pluginSocket(nodes.get(i));
            Wait.forFile("hostpath plugin socket " + socket, socket, Duration.ofSeconds(60), started.get(i));
        }
        return started;
    }

    private Proc launchPlugin(String node) throws IOException {
        Path jar = built("csi-hostpath-plugin", home.resolve("csi-hostpath-plugin/target/csi-hostpath-plugin.jar"))
                .toAbsolutePath().normalize();
        List<String> cmd = java("hostpath-" + node, 192, null, sharedArchive("hostpath-" + node, jar));
        cmd.addAll(List.of("-jar", jar.toString(),
                "--endpoint", "unix://" + pluginSocket(node),
                "--node-id", node,
                "--state-dir", nodeDir(node).resolve("hostpath-state").toString(),
                "--known-node-ids", String.join(",", NODES),
                // Volumes and controller publications in one place for both nodes' plugins: a ControllerPublish
                // answered by node-1's plugin is known to node-2's NodeStage.
                "--shared-dir", hostpathShared().toString()));
        return start("hostpath-" + node, inside(node, cmd), Map.of());
    }

    /** Workers started after this probe their plugins every {@code every}; null: the worker's default (5 s). */
    public Cluster pluginProbeEvery(java.time.Duration every) {
        this.pluginProbeEvery = every;
        return this;
    }

    /**
     * Workers started after this poll the published volumes' stats every {@code every} instead of the default minute:
     * the demo (issue 34) shows a volume's usage within a step, not after a minute.
     */
    public Cluster volumeStatsEvery(java.time.Duration every) {
        this.volumeStatsEvery = every;
        return this;
    }

    public Proc startWorker(String node) throws IOException {
        Path jar = serviceJar("node-mount-worker");
        List<String> cmd = serviceJava("node-mount-worker-" + node, 384, jar, YOUNG_GENERATION);
        cmd.addAll(nodeKafkaCredentials(node));
        cmd.addAll(List.of(
                "-Dquarkus.http.port=" + ports.workers().get(node),
                "-Dkafka.bootstrap.servers=" + kafkaBootstrap(node),
                "-Dcsi.topics.prefix=" + TOPIC_PREFIX,
                "-Dcsi.worker.node-id=" + node,
                "-Dcsi.worker.identity-key-file=" + identities().keyFile(io.csiorchestrator.events.identity.Principal.node(node)),
                "-Dcsi.worker.seal-key-file=" + identities().sealKeyFile(io.csiorchestrator.events.identity.Principal.node(node)),
                "-Dcsi.worker.root=" + workerRoot(node),
                "-Dcsi.worker.plugins-dir=" + pluginsDir(node),
                "-Dcsi.worker.heartbeat-interval=10s"));
        if (pluginProbeEvery != null) {
            cmd.add("-Dcsi.worker.probe-interval=" + pluginProbeEvery.toMillis() + "ms");
        }
        if (volumeStatsEvery != null) {
            cmd.add("-Dcsi.worker.condition-interval=" + volumeStatsEvery.toMillis() + "ms");
        }
        cmd.addAll(List.of("-jar", jar.toString()));
        return start("node-mount-worker-" + node, inside(node, cmd), Map.of());
    }

    /** {@code cmd} as is, or run inside {@code node}'s network namespace when it is isolated. */
    private List<String> inside(String node, List<String> cmd) {
        io.csiorchestrator.localinfra.NetNamespace ns = isolated.get(node);
        return ns == null ? cmd : new ArrayList<>(ns.command(cmd));
    }

    /**
     * Starts the node simulator: {@link #simulated}'s nodes, each reading its partition of node-commands and
     * reporting its simulated plugin on plugin-health, as a worker with a plugin does; {@link #awaitReady} on
     * {@link #simulatorUrl()} waits until every node reads its partition and was heard by the broker.
     */
    public Proc startSimulator() throws IOException {
        identities();
        // per node: a consumer, a producer, a few threads and their buffers
        List<String> cmd = java(SIMULATOR, Math.min(2048, 256 + 4 * simulatedNodes));
        cmd.addAll(kafkaCredentials(KafkaAccess.SIMULATOR));
        cmd.addAll(List.of(
                "-Djava.util.logging.manager=org.jboss.logmanager.LogManager",
                "-jar", built(SIMULATOR, home.resolve(SIMULATOR).resolve("target/node-simulator.jar")).toString(),
                "--nodes", Integer.toString(simulatedNodes),
                "--node-prefix", SIM_NODE_PREFIX,
                "--root", simulatedNodesDir().toString(),
                "--kafka", kafkaBootstrap(),
                "--topic-prefix", TOPIC_PREFIX,
                "--plugin-id", SIM_PLUGIN_ID,
                "--plugin-delay", pluginDelay,
                "--http-port", Integer.toString(simulatorPort)));
        return start(SIMULATOR, cmd, Map.of("CSI_IDENTITY_DIR", securityDir().resolve(IDENTITIES_DIR).toString()));
    }

    /**
     * Waits (bounded) until plugin-registry-service counts every simulated node as a healthy node instance of
     * the simulated plugin: the nodes are discoverable as real ones are, from their plugin-health reports.
     */
    public void awaitSimulatedNodesRegistered(Proc simulator, Duration timeout) {
        awaitPluginRegistered(SIM_PLUGIN_ID, simulatedNodes, simulator, timeout);
    }

    /**
     * Waits (bounded) until plugin-registry-service counts {@code nodes} healthy node instances of {@code pluginId}, and
     * then until claim-service, which decides claims from the plugin-status records the registry publishes, lists as
     * many healthy nodes of it in its placement entries: only then is a claim sent right after this found schedulable
     * (the registry's count alone left a window in which claim-service had not read plugin-status yet, and rejected a
     * claim with "no node instance on node node-1").
     */
    public void awaitPluginRegistered(String pluginId, int nodes, Proc watched, Duration timeout) {
        Http http = new Http("plugin-registry-service", registryUrl(), adminToken());
        Wait.until("plugin-registry-service listing " + nodes + " healthy nodes of plugin " + pluginId,
                timeout, watched, () -> {
                    try {
                        Http.Response r = http.get("/v1/plugins/" + pluginId);
                        return r.ok() && r.body() != null && r.body().path("nodesHealthy").asInt() == nodes
                                ? Optional.of(true) : Optional.empty();
                    } catch (Http.UnreachableException e) {
                        return Optional.empty();
                    }
                });
        Http claims = new Http("claim-service", claimsUrl(), adminToken());
        Wait.until("claim-service placing on " + nodes + " healthy nodes of plugin " + pluginId,
                timeout, watched, () -> {
                    try {
                        Http.Response r = claims.get("/v1/status/placement");
                        return r.ok() && r.body() != null && healthyPlacementNodes(r.body(), pluginId) >= nodes
                                ? Optional.of(true) : Optional.empty();
                    } catch (Http.UnreachableException e) {
                        return Optional.empty();
                    }
                });
    }

    /** How many distinct nodes claim-service's placement entries ({@code GET /v1/status/placement}) list healthy for a plugin. */
    static long healthyPlacementNodes(com.fasterxml.jackson.databind.JsonNode entries, String pluginId) {
        java.util.Set<String> nodes = new java.util.HashSet<>();
        for (com.fasterxml.jackson.databind.JsonNode e : entries) {
            if ("node".equals(e.path("kind").asText()) && pluginId.equals(e.path("pluginId").asText())
                    && e.path("healthy").asBoolean(false)) {
                nodes.add(e.path("nodeId").asText());
            }
        }
        return nodes.size();
    }

    /** Waits (bounded, small backoff) until {@code url/q/health/ready} answers 200. */
    public void awaitReady(Proc proc, String url, Duration timeout) {
        Http http = new Http(proc.name(), url);
        Wait.until(proc.name() + " ready at " + url + "/q/health/ready", timeout, proc, () -> {
            try {
                return http.get("/q/health/ready").status() == 200 ? Optional.of(true) : Optional.empty();
            } catch (Http.UnreachableException e) {
                return Optional.empty();
            }
        });
    }

    private Path serviceJar(String module) {
        return built(module, home.resolve(module).resolve("target/quarkus-app/quarkus-run.jar"));
    }

    private static Path built(String module, Path jar) {
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException(jar + " is missing: build it with ./mvnw -B -q -DskipTests -pl " + module
                    + " -am package");
        }
        return jar;
    }

    private List<String> java(String name, int heapMb) {
        return java(name, heapMb, null, List.of());
    }

    /**
     * The services' young generation: 6 MB, not a third of a heap that grows to 40-47 MB (12-15 MB of eden and
     * survivors, every page of it touched by the allocations that cycle through it). Their live sets are ~20 MB and
     * what they allocate per operation dies young, so a smaller eden means more young collections of the same short
     * length, not more promotion. After the sweep (same-day A/B, `docs/bench/session30-2026-12-01-xmn.txt`): RSS
     * workers 208-210 -> 193-201 MB, claim-service 211-213 -> 208-210, the registry within its spread; CPU per
     * operation within the runs' spread.
     */
    private static final List<String> YOUNG_GENERATION = List.of("-Xmn6m");

    /**
     * claim-service's and the registry's heap after a full collection: grown to 10 % free at least (not 40 %), given
     * back above 20 % free (not 70 %), and given back at once (-ShrinkHeapInSteps): by default the serial collector
     * shrinks its tenured generation by 0 % of the excess at the first full collection, 10 % at the second, 40 % at
     * the third, and a service has one or two, at its start, when the start's garbage has filled the tenured
     * generation (claim-service: 33 MB of which 21.5 live, left at 34.7 MB; README "session 31"). After the sweep,
     * same day: claim-service 207 -> 202 (at once) -> 200 MiB (and 20 % free), its tenured generation 33.6 -> 28.8 ->
     * 26.6 MB (the floor: -Xms32m less the young generation); CPU per operation within the runs' spread. The workers,
     * which collect fully once, at their floor already, keep the default ratios (README "session 27"). Both also get
     * {@link #YOUNG_GENERATION}.
     */
    private static final List<String> HEAP_GIVEN_BACK = concat(List.of("-XX:MinHeapFreeRatio=10", "-XX:MaxHeapFreeRatio=20",
            "-XX:-ShrinkHeapInSteps"), YOUNG_GENERATION);

    /**
     * A Quarkus service's JVM running {@code jar}: on {@value #SERVICE_JAVA_HOME_ENV}'s JDK (or the newest JDK 25 or
     * later installed, {@link #aotCache(boolean)}) with its AOT cache when there is one ({@link ServiceJava}: the
     * cache is used, or, missing or stale, removed and written anew at the process's exit; the line saying which is
     * kept for {@link #takeServiceJavaLines()}), else as {@link #java(String, int)}.
     */
    private List<String> serviceJava(String name, int heapMb, Path jar) {
        return serviceJava(name, heapMb, jar, List.of());
    }

    /** As {@link #serviceJava(String, int, Path)}, with {@code heapOptions} before {@value #JVM_OPTIONS_ENV}'s. */
    private List<String> serviceJava(String name, int heapMb, Path jar, List<String> heapOptions) {
        String setting = extraEnv.getOrDefault(SERVICE_JAVA_HOME_ENV, System.getenv(SERVICE_JAVA_HOME_ENV));
        Path home = setting != null && !setting.isBlank() ? (setting.trim().equals(CLI_JAVA) ? null : Path.of(setting.trim()))
                : aotCache ? ServiceJava.newestAotHome(ServiceJava.candidateHomes(ServiceJava.SYSTEM_JDKS)).orElse(null)
                : null;
        if (home == null) {
            return java(name, heapMb, null, concat(concat(heapOptions, nativeHeapTrimmed(Runtime.version())),
                    sharedArchive(name, jar)));
        }
        ServiceJava service = ServiceJava.of(home, workDir.resolve("aot").resolve(name + ".aot"));
        ServiceJava.Aot aot = service.aot(jar);
        aot.prepare();
        serviceJavaLines.add(aot.line(name, workDir));
        return java(name, heapMb, service.java(), concat(concat(heapOptions, nativeHeapTrimmed(service.version())),
                aot.options()));
    }

    /**
     * A Quarkus service's native heap given back once a minute ({@code -XX:TrimNativeHeapInterval=60000}, JDK 17.0.9
     * and later): glibc keeps what the JVM frees (the start's class parsing, C1's compiler arenas, TLS handshakes) for
     * the next allocation, resident, and only a trim returns it. One trim of each running service, after the sweep
     * (`jcmd System.trim_native_heap`): claim-service -6 MB, the registry -6, the workers -10 each. The trimmer's
     * thread wakes once a minute (a malloc_trim: well under a millisecond of CPU), so memory freed by a burst of work
     * is back with the system within a minute. Same-day A/B after the sweep (README "session 32"): RSS claim-service
     * 201 -> 196 MiB, the registry 183 -> 176, the workers 195 + 199 -> 192 + 191; CPU per operation within the runs'
     * spread.
     */
    static List<String> nativeHeapTrimmed(Runtime.Version jvm) {
        return jvm.compareTo(NATIVE_HEAP_TRIM_SINCE) >= 0 ? List.of("-XX:TrimNativeHeapInterval=60000") : List.of();
    }

    /** As {@link #nativeHeapTrimmed(Runtime.Version)} for a JDK's version string; none when it cannot be read. */
    static List<String> nativeHeapTrimmed(String jvmVersion) {
        try {
            return nativeHeapTrimmed(Runtime.Version.parse(jvmVersion));
        } catch (IllegalArgumentException | NullPointerException e) {
            return List.of();
        }
    }

    private static final Runtime.Version NATIVE_HEAP_TRIM_SINCE = Runtime.Version.parse("17.0.9");

    /**
     * The options of a dynamic class-data archive for a JVM of the CLI's own JDK running {@code jar}
     * ({@link SharedArchive}: one per jar and JDK in {@code <jar's directory>/cds}, shared by every system started from
     * this build; a Quarkus service's start costs about a quarter less CPU with it); none when
     * {@value #SHARED_ARCHIVE_ENV} is {@code off}. The line saying what it does is kept for
     * {@link #takeServiceJavaLines()}.
     */
    private List<String> sharedArchive(String name, Path jar) {
        Path real = jar.toAbsolutePath().normalize();
        String base = real.getParent().getFileName().toString().equals("quarkus-app")
                ? real.getParent().getParent().getParent().getFileName().toString() // <module>/target/quarkus-app
                : real.getFileName().toString().replaceFirst("\\.jar$", "");
        return sharedArchive(name, List.of(real), base);
    }

    /** As {@link #sharedArchive(String, Path)} for a class path of jars, the archive named {@code base}. */
    private List<String> sharedArchive(String name, List<Path> classpath, String base) {
        String setting = extraEnv.getOrDefault(SHARED_ARCHIVE_ENV, System.getenv(SHARED_ARCHIVE_ENV));
        if ("off".equalsIgnoreCase(setting == null ? "" : setting.trim())
                || !classpath.stream().allMatch(p -> Files.isRegularFile(p) && p.toString().endsWith(".jar"))) {
            return List.of(); // a directory on the class path (a test run from target/classes) cannot be archived
        }
        List<String> layout = layoutFlags(null);
        SharedArchive.Plan plan = SharedArchive.plan(Path.of(System.getProperty("java.home"), "bin", "java"),
                classpath, classpath.get(0).getParent().resolve("cds"), layout.isEmpty() ? base : base + "-coh", layout);
        serviceJavaLines.add(name + ": class data archive " + (plan.archive() == null ? "none" : plan.archive())
                + " (" + plan.mode().name().toLowerCase(java.util.Locale.ROOT) + ": " + plan.reason() + ")");
        return plan.options();
    }

    /**
     * The object layout of a JVM of {@code java} (null: the CLI's own): compact object headers (JEP 519, 8 bytes a
     * header instead of 12) on JDK 25 or later with the measured runtime. With them every process cost less per
     * operation after 3 minutes of load (all processes 47.6 -> 42.1 ms on C1) and less memory (README "Runtime by
     * measurement").
     */
    private List<String> layoutFlags(Path java) {
        int feature = java == null ? Runtime.version().feature()
                : ServiceJava.feature(java.getParent().getParent());
        return measuredRuntime && feature >= ServiceJava.AOT_FEATURE ? List.of("-XX:+UseCompactObjectHeaders") : List.of();
    }

    /** {@code off}: no class-data archive for the system's JVMs ({@link #sharedArchive}). */
    public static final String SHARED_ARCHIVE_ENV = "CSI_SHARED_ARCHIVE";

    /** One line per Quarkus service started on {@value #SERVICE_JAVA_HOME_ENV}'s JDK since the last call: its AOT cache. */
    public List<String> takeServiceJavaLines() {
        synchronized (serviceJavaLines) {
            List<String> lines = List.copyOf(serviceJavaLines);
            serviceJavaLines.clear();
            return lines;
        }
    }

    private final List<String> serviceJavaLines = Collections.synchronizedList(new ArrayList<>());

    private static List<String> concat(List<String> first, List<String> then) {
        List<String> both = new ArrayList<>(first);
        both.addAll(then);
        return both;
    }

    /**
     * A JVM: {@code java} (null: the CLI's own), the settings of every JVM of the system, then {@code own}: the
     * process's own (its heap's, its class archive's or AOT cache's).
     */
    private List<String> java(String name, int heapMb, Path java, List<String> own) {
        List<String> cmd = new ArrayList<>();
        if (detached && Files.isExecutable(Path.of("/usr/bin/setsid"))) {
            cmd.add("/usr/bin/setsid"); // `csi up`: not in the terminal's process group, outlives the CLI
        }
        cmd.add((java != null ? java : Path.of(System.getProperty("java.home"), "bin", "java")).toString());
        // Local processes on a small machine: a bounded heap, serial GC, the simplest JIT tier (C1), except the broker of
        // a long-running system: after 3 minutes of load C2 made the broker 28 % cheaper per operation (9.8 -> 7.0 ms)
        // and every other process dearer or no cheaper, with more memory (README "Runtime by measurement").
        if (!(measuredRuntime && name.equals(KAFKA))) {
            cmd.add("-XX:TieredStopAtLevel=1");
        }
        cmd.addAll(layoutFlags(java));
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-Xmx" + heapMb + "m");
        // The initial heap defaults to 1/64 of the machine's memory (384 MB here, so every heap was born at its
        // maximum and its pages stayed resident): the heap grows from 32 MB as its live set needs instead. After
        // `./csi bench --rate 10 --duration 30s`, RSS claim-service 392 -> 292 MB, registry 350 -> 255, worker 303 -> 198,
        // CPU per operation unchanged (README "Throughput issue").
        cmd.add("-Xms32m");
        cmd.addAll(own);
        // CSI_JVM_OPTIONS: more options for every JVM of the system, after these (so they win): e.g. measuring the
        // full tiered JIT with -XX:TieredStopAtLevel=4 (README "Performance")
        String more = extraEnv.getOrDefault(JVM_OPTIONS_ENV, System.getenv(JVM_OPTIONS_ENV));
        if (more != null && !more.isBlank()) {
            cmd.addAll(List.of(more.trim().split("\\s+")));
        }
        return cmd;
    }

    private Proc start(String name, List<String> cmd, Map<String, String> env) throws IOException {
        Path log = logs().resolve(name + ".log");
        ProcessBuilder builder = new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        builder.environment().putAll(extraEnv);
        builder.environment().putAll(env);
        if (jsonLogs && cmd.stream().anyMatch(arg -> arg.endsWith("quarkus-run.jar"))) {
            builder.environment().put("QUARKUS_LOG_CONSOLE_JSON_ENABLED", "true");
        }
        Process process = builder.start();
        launches.put(name, new Launch(List.copyOf(cmd), Map.copyOf(env)));
        Proc proc = new Proc(name, process.toHandle(), log);
        procs.add(proc);
        Files.writeString(workDir.resolve(PIDS), name + " " + process.pid() + "\n", StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        return proc;
    }

    // ------------------------------------------------------------------ one process: kill -9, start again

    /** The process started last under {@code name}. */
    public Optional<Proc> proc(String name) {
        synchronized (procs) {
            for (int i = procs.size() - 1; i >= 0; i--) {
                if (procs.get(i).name().equals(name)) {
                    return Optional.of(procs.get(i));
                }
            }
        }
        return Optional.empty();
    }

    /** How {@code name} was last started. */
    public Optional<Launch> launch(String name) {
        return Optional.ofNullable(launches.get(name));
    }

    /**
     * {@code kill -9} of the process started last under {@code name} (its real pid, SIGKILL), waiting until it
     * is gone; returns its pid.
     */
    public long kill9(String name) {
        Proc proc = proc(name).orElseThrow(() -> new IllegalStateException("no process " + name));
        ProcessHandle handle = proc.handle();
        handle.destroyForcibly();
        try {
            handle.onExit().get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(name + " (pid " + handle.pid() + ") did not die of SIGKILL within 30 s", e);
        }
        return handle.pid();
    }

    /**
     * {@code kill -9} of the PostgreSQL server: the postmaster and every one of its processes (SIGKILL), then of
     * the {@code postgres} process that started it (it exits by itself when the server dies). Returns the pids.
     */
    public List<Long> kill9Postgres() {
        List<ProcessHandle> server = new ArrayList<>();
        postmasterPid().flatMap(ProcessHandle::of).ifPresent(postmaster -> {
            server.add(postmaster);
            server.addAll(postmaster.descendants().toList());
        });
        proc(POSTGRES).map(Proc::handle).filter(ProcessHandle::isAlive).ifPresent(server::add);
        server.forEach(ProcessHandle::destroyForcibly);
        List<Long> pids = new ArrayList<>();
        for (ProcessHandle process : server) {
            try {
                process.onExit().get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException("PostgreSQL process " + process.pid() + " did not die within 30 s", e);
            }
            pids.add(process.pid());
        }
        return pids;
    }

    /**
     * Starts {@code name} again with the command line and environment it was started with (a hostpath plugin:
     * its stale socket removed first, then waited for as {@link #startPlugin} does; Kafka and PostgreSQL:
     * waited for until they serve on their kept state and ports).
     */
    public Proc restart(String name) throws IOException {
        if (name.equals(KAFKA) || name.equals(POSTGRES)) {
            Proc proc = name.equals(KAFKA) ? startKafka() : startPostgres();
            awaitInfra(proc, name.equals(KAFKA) ? kafkaDir() : postgresDir());
            return proc;
        }
        Launch launch = launch(name).orElseThrow(() -> new IllegalStateException("never started: " + name));
        Path socket = null;
        if (name.startsWith("hostpath-")) {
            socket = pluginSocket(name.substring("hostpath-".length()));
            Files.deleteIfExists(socket);
        }
        Proc proc = start(name, launch.command(), launch.environment());
        if (socket != null) {
            Wait.forFile("hostpath plugin socket " + socket, socket, Duration.ofSeconds(60), proc);
        }
        return proc;
    }

    // ------------------------------------------------------------------ stopping

    /**
     * Stops the processes tier by tier, each tier in parallel: workers, then plugins, then the
     * central services, then Kafka and PostgreSQL (SIGTERM, then SIGKILL after {@code grace}).
     */
    public static List<String> stop(List<Proc> procs, Duration grace) {
        return stop(procs, grace, null);
    }

    /**
     * As {@link #stop(List, Duration)}; with {@code guardsUnder}, the workers' fence guards of that work dir are
     * stopped right after the workers ({@link FenceGuards}): the whole system goes down, its mounts with it.
     */
    public static List<String> stop(List<Proc> procs, Duration grace, Path guardsUnder) {
        List<String> killed = new ArrayList<>();
        for (int tier = 0; tier <= 3; tier++) {
            if (tier == 1 && guardsUnder != null) {
                FenceGuards.stopUnder(guardsUnder);
            }
            List<Proc> group = new ArrayList<>();
            for (Proc proc : procs) {
                if (tier(proc.name()) == tier && proc.handle().isAlive()) {
                    group.add(proc);
                }
            }
            group.forEach(p -> p.handle().destroy());
            long deadline = System.nanoTime() + grace.toNanos();
            for (Proc proc : group) {
                ProcessHandle handle = proc.handle();
                try {
                    handle.onExit().get(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), TimeUnit.MILLISECONDS);
                } catch (Exception e) {
                    handle.destroyForcibly();
                    killed.add(proc.name());
                    try {
                        handle.onExit().get(10, TimeUnit.SECONDS);
                    } catch (Exception ignored) {
                        // gone or stuck in the kernel: nothing more to do
                    }
                }
            }
        }
        return killed;
    }

    static int tier(String name) {
        if (name.startsWith("node-mount-worker") || name.equals(SIMULATOR)) {
            return 0;
        }
        if (name.startsWith("hostpath")) {
            return 1;
        }
        return name.equals(KAFKA) || name.equals(POSTGRES) ? 3 : 2;
    }

    public List<String> stopAll(Duration grace) {
        return stop(procs(), grace, workDir);
    }

    /** The processes of a pids file whose pid is still alive (with the same start). */
    public static List<Proc> readPids(Path workDir) throws IOException {
        List<Proc> found = new ArrayList<>();
        Path file = workDir.resolve(PIDS);
        if (!Files.exists(file)) {
            return found;
        }
        for (String line : Files.readAllLines(file)) {
            String[] parts = line.trim().split("\\s+");
            if (parts.length != 2) {
                continue;
            }
            Optional<ProcessHandle> handle = ProcessHandle.of(Long.parseLong(parts[1]));
            handle.filter(ProcessHandle::isAlive).filter(h -> h.info().command().map(c -> c.contains("java")
                    || c.contains("setsid")).orElse(true)).ifPresent(h -> found.add(
                    new Proc(parts[0], h, workDir.resolve("logs").resolve(parts[0] + ".log"))));
        }
        return found;
    }

    public void writeEndpoints() throws IOException {
        Properties props = new Properties();
        props.setProperty("claims.url", claimsUrl());
        props.setProperty("status.url", claimsUrl() + "/status/");
        props.setProperty("registry.url", registryUrl());
        props.setProperty("kafka.bootstrap.servers", kafkaBootstrap());
        props.setProperty(CertificateCredential.BOOTSTRAP_KEY, kafkaCertificateBootstrap());
        props.setProperty("csi.topics.prefix", TOPIC_PREFIX);
        // what a load generator needs to spread volumes over the nodes (the plugin registry lists them too)
        props.setProperty("nodes", String.join(",", nodes()));
        props.setProperty("plugin.id", simulatedNodes > 0 ? SIM_PLUGIN_ID : PLUGIN_ID);
        if (simulatedNodes > 0) {
            // no plugin socket: the simulated plugin has no CreateVolume, any externalId is a volume
            props.setProperty("simulated-nodes", Integer.toString(simulatedNodes));
            props.setProperty("simulator.url", simulatorUrl());
        } else {
            for (String node : NODES) {
                props.setProperty(node + ".plugins-dir", pluginsDir(node).toString());
                props.setProperty(node + ".worker.url", workerUrl(node));
            }
        }
        try (Writer writer = Files.newBufferedWriter(workDir.resolve(Endpoints.FILE))) {
            props.store(writer, "csi up");
        }
    }

    /** Something the demo waits for, with what to show when it does not come. */
    public interface Check extends Supplier<Optional<Boolean>> {
    }
}
