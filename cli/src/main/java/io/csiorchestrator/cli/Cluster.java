package io.csiorchestrator.cli;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The whole system as local processes in one work directory: the infrastructure process (Kafka
 * and PostgreSQL), claim-service, plugin-registry-service, and per node a hostpath plugin and a
 * node-mount-worker. Every process logs to {@code <work>/logs/<name>.log}; {@code <work>/pids}
 * lists {@code <name> <pid>} in start order, so {@code csi down} can stop what {@code csi up} left.
 */
public final class Cluster {

    public static final String PLUGIN_ID = "hostpath";
    public static final String PIDS = "pids";
    /** Topic prefix of the local system, so its topics stand apart on a shared broker. */
    public static final String TOPIC_PREFIX = "csi.";
    public static final List<String> NODES = List.of("node-1", "node-2");

    /** A started process. */
    public record Proc(String name, ProcessHandle handle, Path log) {
    }

    /** Ports of the HTTP services. */
    public record Ports(int claims, int registry, Map<String, Integer> workers) {
        public static Ports free() {
            Map<String, Integer> workers = new LinkedHashMap<>();
            for (String node : NODES) {
                workers.put(node, freePort());
            }
            return new Ports(freePort(), freePort(), workers);
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
    private final String keyring;
    private Properties infra;
    private boolean jsonLogs;

    public Cluster(Path home, Path workDir, Ports ports, boolean detached) {
        this.home = home.toAbsolutePath().normalize();
        this.workDir = workDir.toAbsolutePath().normalize();
        this.ports = ports;
        this.detached = detached;
        byte[] key = new byte[32];
        new SecureRandom().nextBytes(key);
        // Sealing key of this run: handed to the services in their environment only, never written or printed.
        this.keyring = "local-" + System.currentTimeMillis() + ":" + Base64.getEncoder().encodeToString(key);
    }

    /** The services log JSON lines (QUARKUS_LOG_CONSOLE_JSON_ENABLED=true), as a log shipper wants them. */
    public Cluster jsonLogs(boolean on) {
        this.jsonLogs = on;
        return this;
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
        return "http://127.0.0.1:" + ports.workers().get(node);
    }

    public String kafkaBootstrap() {
        return infra.getProperty("kafka.bootstrap.servers");
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
        Files.createDirectories(hostpathShared());
        for (String node : NODES) {
            Files.createDirectories(workerRoot(node));
            Files.createDirectories(pluginsDir(node).resolve(PLUGIN_ID));
            Files.createDirectories(nodeDir(node).resolve("hostpath-state"));
        }
    }

    // ------------------------------------------------------------------ processes

    public void startInfra() throws IOException {
        List<String> cmd = java("infra", 512);
        cmd.add("-cp");
        List<String> classPath = new ArrayList<>();
        // csi.cli.classpath: the packaged CLI jar (tests run from a surefire booter jar).
        String own = System.getProperty("csi.cli.classpath", System.getProperty("java.class.path"));
        for (String entry : own.split(java.io.File.pathSeparator)) {
            classPath.add(Path.of(entry).toAbsolutePath().toString());
        }
        cmd.add(String.join(java.io.File.pathSeparator, classPath));
        cmd.add("-Djava.util.logging.manager=org.jboss.logmanager.LogManager");
        cmd.add(Main.class.getName());
        cmd.add("infra");
        cmd.add(workDir.toString());
        cmd.add("--topic-prefix=" + TOPIC_PREFIX);
        Proc proc = start("infra", cmd, Map.of());
        Path file = workDir.resolve(Infra.FILE);
        Wait.forFile("Kafka and PostgreSQL (" + Infra.FILE + ")", file, Duration.ofSeconds(180), proc);
        infra = new Properties();
        try (Reader reader = Files.newBufferedReader(file)) {
            infra.load(reader);
        }
    }

    public void loadInfra() throws IOException {
        infra = new Properties();
        try (Reader reader = Files.newBufferedReader(workDir.resolve(Infra.FILE))) {
            infra.load(reader);
        }
    }

    public Proc startRegistry() throws IOException {
        List<String> cmd = java("plugin-registry-service", 384);
        cmd.addAll(List.of(
                "-Dquarkus.http.port=" + ports.registry(),
                "-Dkafka.bootstrap.servers=" + kafkaBootstrap(),
                "-Dcsi.topics.prefix=" + TOPIC_PREFIX,
                "-Dquarkus.datasource.reactive.url=" + infra.getProperty("postgres.plugin_registry.reactive"),
                "-Dquarkus.datasource.username=" + infra.getProperty("postgres.username"),
                "-jar", serviceJar("plugin-registry-service").toString()));
        return start("plugin-registry-service", cmd, Map.of("QUARKUS_DATASOURCE_PASSWORD", "postgres"));
    }

    public Proc startClaims() throws IOException {
        List<String> cmd = java("claim-service", 384);
        cmd.addAll(List.of(
                "-Dquarkus.http.port=" + ports.claims(),
                "-Dkafka.bootstrap.servers=" + kafkaBootstrap(),
                "-Dcsi.topics.prefix=" + TOPIC_PREFIX,
                "-Dquarkus.datasource.reactive.url=" + infra.getProperty("postgres.claims.reactive"),
                "-Dquarkus.datasource.username=" + infra.getProperty("postgres.username"),
                "-Dcsi.claims.reconcile-interval=1s",
                "-jar", serviceJar("claim-service").toString()));
        return start("claim-service", cmd, Map.of("QUARKUS_DATASOURCE_PASSWORD", "postgres",
                "CSI_SECRETS_KEYRING", keyring));
    }

    public Proc startPlugin(String node) throws IOException {
        List<String> cmd = java("hostpath-" + node, 192);
        cmd.addAll(List.of("-jar", built("csi-hostpath-plugin",
                        home.resolve("csi-hostpath-plugin/target/csi-hostpath-plugin.jar")).toString(),
                "--endpoint", "unix://" + pluginSocket(node),
                "--node-id", node,
                "--state-dir", nodeDir(node).resolve("hostpath-state").toString(),
                "--known-node-ids", String.join(",", NODES),
                // Volumes and controller publications in one place for both nodes' plugins: a ControllerPublish
                // answered by node-1's plugin is known to node-2's NodeStage.
                "--shared-dir", hostpathShared().toString()));
        Proc proc = start("hostpath-" + node, cmd, Map.of());
        Path socket = pluginSocket(node);
        Wait.forFile("hostpath plugin socket " + socket, socket, Duration.ofSeconds(60), proc);
        return proc;
    }

    public Proc startWorker(String node) throws IOException {
        List<String> cmd = java("node-mount-worker-" + node, 384);
        cmd.addAll(List.of(
                "-Dquarkus.http.port=" + ports.workers().get(node),
                "-Dkafka.bootstrap.servers=" + kafkaBootstrap(),
                "-Dcsi.topics.prefix=" + TOPIC_PREFIX,
                "-Dcsi.worker.node-id=" + node,
                "-Dcsi.worker.root=" + workerRoot(node),
                "-Dcsi.worker.plugins-dir=" + pluginsDir(node),
                "-Dcsi.worker.probe-interval=1s",
                "-Dcsi.worker.heartbeat-interval=10s",
                "-jar", serviceJar("node-mount-worker").toString()));
        return start("node-mount-worker-" + node, cmd, Map.of("CSI_SECRETS_KEYRING", keyring));
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
        List<String> cmd = new ArrayList<>();
        if (detached && Files.isExecutable(Path.of("/usr/bin/setsid"))) {
            cmd.add("/usr/bin/setsid"); // `csi up`: not in the terminal's process group, outlives the CLI
        }
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        // Short-lived local processes on a small machine: the simplest JIT tier, a bounded heap, serial GC.
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-Xmx" + heapMb + "m");
        return cmd;
    }

    private Proc start(String name, List<String> cmd, Map<String, String> env) throws IOException {
        Path log = logs().resolve(name + ".log");
        ProcessBuilder builder = new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        builder.environment().putAll(env);
        if (jsonLogs && cmd.stream().anyMatch(arg -> arg.endsWith("quarkus-run.jar"))) {
            builder.environment().put("QUARKUS_LOG_CONSOLE_JSON_ENABLED", "true");
        }
        Process process = builder.start();
        Proc proc = new Proc(name, process.toHandle(), log);
        procs.add(proc);
        Files.writeString(workDir.resolve(PIDS), name + " " + process.pid() + "\n", StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        return proc;
    }

    // ------------------------------------------------------------------ stopping

    /**
     * Stops the processes tier by tier, each tier in parallel: workers, then plugins, then the
     * central services, then Kafka and PostgreSQL (SIGTERM, then SIGKILL after {@code grace}).
     */
    public static List<String> stop(List<Proc> procs, Duration grace) {
        List<String> killed = new ArrayList<>();
        for (int tier = 0; tier <= 3; tier++) {
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
        if (name.startsWith("node-mount-worker")) {
            return 0;
        }
        if (name.startsWith("hostpath")) {
            return 1;
        }
        return name.equals("infra") ? 3 : 2;
    }

    public List<String> stopAll(Duration grace) {
        return stop(procs(), grace);
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
        props.setProperty("registry.url", registryUrl());
        props.setProperty("kafka.bootstrap.servers", kafkaBootstrap());
        props.setProperty("csi.topics.prefix", TOPIC_PREFIX);
        for (String node : NODES) {
            props.setProperty(node + ".plugins-dir", pluginsDir(node).toString());
            props.setProperty(node + ".worker.url", workerUrl(node));
        }
        try (Writer writer = Files.newBufferedWriter(workDir.resolve(Endpoints.FILE))) {
            props.store(writer, "csi up");
        }
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static boolean portFree(int port) {
        try (ServerSocket socket = new ServerSocket(port)) {
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Something the demo waits for, with what to show when it does not come. */
    public interface Check extends Supplier<Optional<Boolean>> {
    }
}
