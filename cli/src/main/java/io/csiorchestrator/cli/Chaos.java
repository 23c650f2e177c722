package io.csiorchestrator.cli;

import io.csiorchestrator.localinfra.FreePorts;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * {@code csi chaos}: the fault suite. Starts its own system in {@code .csi/chaos-<utc timestamp>/} (the shape of
 * {@code csi up}: Kafka and PostgreSQL as two processes with durable state, PostgreSQL with fsync; claim-service,
 * plugin-registry-service, two nodes with a worker and a hostpath plugin each), creates and registers volumes,
 * runs a scheduler of its own that claims and releases at a steady rate, and meanwhile does one fault after
 * another to the real processes (SIGKILL of their pids, restart with their original command line and
 * environment). Then it checks the invariants ({@link ChaosCheck}) over what the system published: the
 * claim-status and node-events topics read from the beginning, claim-service's REST API and the mount table.
 * Prints a table per fault, writes it as JSON ({@code --json F}), exits 1 on any violation, naming it.
 */
final class Chaos {

    /** Every fault, in the order they run. */
    static final List<String> FAULTS = List.of("claims-kill", "claims-failover", "registry-kill",
            "worker-kill-node-1", "worker-kill-node-2", "plugin-kill-node-1", "plugin-kill-node-2", "kafka-restart",
            "postgres-kill", "postgres-outage", "partition-node-1", "partition-node-1-in", "partition-node-1-out",
            "freeze-worker-node-1", "partition-node-1-claims-restart", "detach-live-node-2");
    /** The faults a run without {@code --faults} takes: every one, the fencing failovers of issue 19 included. */
    static final List<String> DEFAULT_FAULTS = FAULTS;
    /** The faults of {@code --short} (the verify build's ChaosIT). */
    static final List<String> SHORT_FAULTS = List.of("claims-failover", "worker-kill-node-1", "plugin-kill-node-2",
            "postgres-kill");
    static final String NAMESPACE = "chaos";
    static final String REPLICA = "claim-service-2";
    /** The second plugin-registry-service of {@code registry-kill}: it takes the killed one's node leases over. */
    static final String REGISTRY_REPLICA = "plugin-registry-service-2";
    static final String REGISTRY = "plugin-registry-service";
    static final Duration ANSWER_WAIT = Duration.ofSeconds(180);

    /**
     * The suite's own Kafka clients' warnings while kafka-restart has the broker down: every failed connection
     * ("Connection to node ... could not be established") and the producer's retries of a send the stopping broker
     * refused (NOT_LEADER_OR_FOLLOWER). Quieted to errors for that fault only; held here so that the levels set stay
     * (java.util.logging keeps loggers weakly). Netty's SO_KEEPALIVE note of each plugin socket is quieted for every
     * command (logging.properties).
     */
    private static final List<java.util.logging.Logger> KAFKA_RESTART_NOISE = List.of(
            java.util.logging.Logger.getLogger("org.apache.kafka.clients.NetworkClient"),
            java.util.logging.Logger.getLogger("org.apache.kafka.clients.producer.internals.Sender"));

    private final Args args;
    private final Path home;
    private final PrintStream out;
    private final Random random = new Random();
    private final Object lock = new Object();
    private final AtomicBoolean sending = new AtomicBoolean();
    private final AtomicBoolean reading = new AtomicBoolean(true);

    private Cluster cluster;
    private TopicCatalog topics;
    /** The scheduler's volumes, requests and the claim-status records read (under {@link #lock}). */
    private final ChaosBook book = new ChaosBook(NAMESPACE, Cluster.NODES, random);
    private final List<ChaosCheck.NodeEv> nodeEvents = new ArrayList<>();
    /** Every node-leases record read (issue 19: the registry restart's checks). */
    private final List<FenceCheck.LeaseEv> leases = new ArrayList<>();
    /** The registry restarts done ({@code registry-kill}), checked at the end once every record was read. */
    private final List<long[]> registryRestarts = new ArrayList<>();
    private int replicaPort;
    /** Issue 19's fencing faults ({@link FenceFaults}) and the violations their runs found. */
    private FenceFaults fence;
    private final List<ChaosCheck.Violation> fenceViolations = new ArrayList<>();
    private io.csiorchestrator.localinfra.NetNamespace nodeNamespace;

    Chaos(Args args, Path home, PrintStream out) {
        this.args = args;
        this.home = home;
        this.out = out;
    }

    int run() throws Exception {
        boolean shortRun = args.flag("short");
        jsonFile(args);
        List<String> faults = faults(args.option("faults").orElse(null), shortRun);
        double rate = Double.parseDouble(args.option("rate").orElse("4"));
        int volumeCount = Integer.parseInt(args.option("volumes").orElse(shortRun ? "12" : "40"));
        long outage = Long.parseLong(args.option("outage").orElse("130"));
        long limit = TimeUnit.SECONDS.toMillis(Long.parseLong(args.option("converge-limit").orElse("30")));
        if (rate <= 0 || volumeCount < 2 || outage < 1) {
            throw new Args.UsageException("--rate, --volumes (at least 2) and --outage must be positive");
        }
        if (FenceFaults.needsNamespace(faults)) {
            // before anything starts: without nft the run would fail at its first partition, many minutes in
            Prerequisites.require(home, "partitions");
        }
        Path work = args.option("work-dir").map(Path::of).orElse(home.resolve(".csi").resolve("chaos-"
                + DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").format(ZonedDateTime.now(ZoneOffset.UTC))));
        Map<String, String> env = env(args.option("env").orElse(null));
        cluster = new Cluster(home, work, Cluster.Ports.free(), false).durable(true)
                .measuredRuntime(Cluster.measuredRuntimeWanted()).environment(env);
        topics = new TopicCatalog(Cluster.TOPIC_PREFIX);
        Map<String, String> services = new HashMap<>(System.getenv());
        services.putAll(env);
        FenceCheck.Timers timers = FenceCheck.Timers.of(services,
                Duration.ofSeconds(Long.parseLong(args.option("fence-slack").orElse("30"))));
        fence = new FenceFaults(cluster, out, timers, feed(), NAMESPACE);
        Thread hook = new Thread(this::teardown, "csi-chaos-teardown");
        Runtime.getRuntime().addShutdownHook(hook);
        out.println("csi chaos: faults " + faults + ", " + volumeCount + " volumes, " + rate + " requests/s; work dir "
                + cluster.workDir() + " (logs in " + cluster.logs() + ")");
        ChaosCheck.Report report;
        List<ChaosCheck.Fault> done = new ArrayList<>();
        try {
            if (FenceFaults.needsNamespace(faults)) {
                nodeNamespace = io.csiorchestrator.localinfra.NetNamespace.create();
                cluster.isolate(FenceFaults.OLD_NODE, nodeNamespace);
                out.println("csi chaos: " + FenceFaults.OLD_NODE + "'s worker and plugin run in " + nodeNamespace);
            }
            if (faults.stream().anyMatch(FenceFaults::isFenceFault)) {
                out.println("csi chaos: fencing timers: " + timers);
            }
            start();
            createVolumes(volumeCount, fence.volumesOf(faults));
            fence.startSampling(fence.volumesOf(faults));
            Thread reader = new Thread(this::read, "csi-chaos-reader");
            reader.setDaemon(true);
            reader.start();
            try (KafkaProducer<String, byte[]> producer = producer()) {
                fenceProducer = producer;
                sending.set(true);
                Thread scheduler = new Thread(() -> schedule(producer, rate), "csi-chaos-scheduler");
                scheduler.setDaemon(true);
                scheduler.start();
                long windowStart = System.currentTimeMillis();
                pause(Duration.ofSeconds(shortRun ? 5 : 10)); // load before the first fault
                for (String fault : faults) {
                    done.add(fault(fault, windowStart, limit));
                    windowStart = done.get(done.size() - 1).windowEnd();
                }
                sending.set(false);
                scheduler.join(TimeUnit.SECONDS.toMillis(60));
                ChaosCheck.EndState end = finish(producer, limit);
                awaitTopicsRead();
                reading.set(false);
                reader.join(TimeUnit.SECONDS.toMillis(10));
                synchronized (lock) {
                    for (long[] r : registryRestarts) {
                        fenceViolations.addAll(FenceCheck.check(new FenceCheck.RegistryRestart("registry-kill",
                                Cluster.NODES, r[0], r[1], r[2], fence.timers(), List.copyOf(leases),
                                List.copyOf(nodeEvents), List.copyOf(book.answers))));
                    }
                    report = withFenceViolations(ChaosCheck.check(List.copyOf(book.requests), List.copyOf(book.answers),
                            List.copyOf(nodeEvents), done, end, limit, book.modes()), fenceViolations);
                }
            }
        } finally {
            sending.set(false);
            reading.set(false);
            teardown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs already
            }
        }
        print(report);
        Optional<String> json = jsonFile(args);
        if (json.isPresent()) {
            Files.writeString(Path.of(json.get()), Http.MAPPER.writerWithDefaultPrettyPrinter()
                    .writeValueAsString(toJson(report, done, rate, volumeCount)));
            out.println("csi chaos: table written to " + json.get());
        }
        if (!report.passed()) {
            out.println("csi chaos: FAILED, " + report.violations().size() + " violation(s); logs in " + cluster.logs());
            return 1;
        }
        out.println("csi chaos: every invariant held");
        return 0;
    }

    /**
     * {@code --json F}: {@code -json} is the CLI's flag for machine output, so the file is the word after it
     * (the command's one positional argument).
     */
    static Optional<String> jsonFile(Args args) {
        if (!args.flag("json")) {
            if (!args.positionals().isEmpty()) {
                throw new Args.UsageException("chaos takes no argument '" + args.positionals().get(0) + "'");
            }
            return Optional.empty();
        }
        return Optional.of(args.positional(0, "the file after --json"));
    }

    /** {@code --env K=V,K=V}: environment for every process of the system (e.g. shorter CSI_FENCING_* timers). */
    static Map<String, String> env(String option) {
        Map<String, String> env = new LinkedHashMap<>();
        if (option == null || option.isBlank()) {
            return env;
        }
        for (String pair : option.split(",")) {
            String[] kv = pair.split("=", 2);
            if (kv.length != 2 || !kv[0].matches("[A-Z_][A-Z0-9_]*")) {
                throw new Args.UsageException("--env takes NAME=VALUE,NAME=VALUE: '" + pair + "'");
            }
            env.put(kv[0], kv[1]);
        }
        return env;
    }

    /** The report with the fencing runs' violations added to their faults' rows. */
    static ChaosCheck.Report withFenceViolations(ChaosCheck.Report report, List<ChaosCheck.Violation> extra) {
        if (extra.isEmpty()) {
            return report;
        }
        List<ChaosCheck.Row> rows = new ArrayList<>();
        for (ChaosCheck.Row row : report.rows()) {
            List<ChaosCheck.Violation> mine = new ArrayList<>(row.violations());
            extra.stream().filter(v -> v.fault().equals(row.fault())).forEach(mine::add);
            rows.add(new ChaosCheck.Row(row.fault(), row.requests(), row.answers(), row.failed(), row.slowestMillis(),
                    row.convergeMillis(), List.copyOf(mine)));
        }
        List<ChaosCheck.Violation> all = new ArrayList<>(report.violations());
        all.addAll(extra);
        return new ChaosCheck.Report(rows, List.copyOf(all));
    }

    /** What a fencing run uses of the suite: its producer, and what its reader read. */
    private FenceFaults.Feed feed() {
        return new FenceFaults.Feed() {
            @Override
            public long send(ClaimRequested request) throws Exception {
                KafkaProducer<String, byte[]> p = fenceProducer;
                return p.send(ClaimClient.record(topics, request, ClaimClient.newTraceparent()))
                        .get(150, TimeUnit.SECONDS).timestamp();
            }

            @Override
            public Optional<ChaosCheck.Answer> finalAnswer(ClaimRequested request) {
                Set<ClaimState> finals = request.mode() == ClaimMode.RELEASE ? ChaosCheck.RELEASE_FINAL
                        : ChaosCheck.CLAIM_FINAL;
                synchronized (lock) {
                    return book.answers.stream().filter(a -> a.requestId().equals(request.requestId())
                            && finals.contains(a.state())).findFirst();
                }
            }

            @Override
            public List<ChaosCheck.NodeEv> nodeEvents(String volume) {
                synchronized (lock) {
                    return nodeEvents.stream().filter(e -> volume.equals(e.volume())).toList();
                }
            }
        };
    }

    private volatile KafkaProducer<String, byte[]> fenceProducer;

    static List<String> faults(String option, boolean shortRun) {
        if (option == null) {
            return shortRun ? SHORT_FAULTS : DEFAULT_FAULTS;
        }
        Set<String> wanted = new LinkedHashSet<>(List.of(option.split(",")));
        for (String f : wanted) {
            if (!FAULTS.contains(f)) {
                throw new Args.UsageException("unknown fault '" + f + "'; the faults: " + String.join(",", FAULTS));
            }
        }
        return FAULTS.stream().filter(wanted::contains).toList();
    }

    // ------------------------------------------------------------------ the system

    private void start() throws IOException {
        step("start Kafka and PostgreSQL (durable, fsync)", () -> {
            cluster.prepare();
            cluster.startInfra();
        });
        step("start plugin-registry-service and claim-service", () -> {
            Cluster.Proc registry = cluster.startRegistry();
            Cluster.Proc claims = cluster.startClaims();
            cluster.awaitReady(registry, cluster.registryUrl(), Demo.START_TIMEOUT);
            cluster.awaitReady(claims, cluster.claimsUrl(), Demo.START_TIMEOUT);
        });
        step("start the hostpath plugins and the workers of node-1 and node-2", () -> {
            cluster.startPlugins(Cluster.NODES);
            List<Cluster.Proc> workers = new ArrayList<>();
            for (String node : Cluster.NODES) {
                workers.add(cluster.startWorker(node));
            }
            for (int i = 0; i < workers.size(); i++) {
                cluster.awaitReady(workers.get(i), cluster.workerUrl(Cluster.NODES.get(i)), Demo.START_TIMEOUT);
            }
        });
        step("plugin hostpath healthy on both nodes", () -> {
            Http registry = new Http("plugin-registry-service", cluster.registryUrl(), cluster.adminToken());
            Wait.until("plugin hostpath with 2 healthy nodes and a healthy controller", Demo.START_TIMEOUT, null, () -> {
                Http.Response r = registry.get("/v1/plugins/" + Cluster.PLUGIN_ID);
                return r.ok() && r.body() != null && r.body().path("nodesHealthy").asInt() >= Cluster.NODES.size()
                        && r.body().path("controllersHealthy").asInt() >= 1 ? Optional.of(true) : Optional.empty();
            });
        });
    }

    private void createVolumes(int count, List<String> fenceVolumes) throws IOException {
        step("create and register " + (count + fenceVolumes.size()) + " volumes", () -> {
            List<Path> sockets = Cluster.NODES.stream().map(cluster::pluginSocket).toList();
            List<Map<String, Object>> bodies = new ArrayList<>();
            AccessMode[] modes = {AccessMode.MULTI_NODE_SINGLE_WRITER, AccessMode.SINGLE_NODE_WRITER,
                    AccessMode.MULTI_NODE_READER_ONLY};
            for (int i = 0; i < count; i++) {
                String id = String.format("chaos-v%02d", i);
                AccessMode mode = modes[i % modes.length];
                String externalId = PluginVolumes.create(id, sockets);
                bodies.add(Map.of("id", id, "namespace", NAMESPACE, "name", id, "externalId", externalId,
                        "pluginId", Cluster.PLUGIN_ID, "accessMode", mode.wire(),
                        "attachmentMode", AttachmentMode.FILE_SYSTEM.wire()));
                synchronized (lock) {
                    book.add(id, mode);
                }
            }
            for (String id : fenceVolumes) {
                // a fencing fault's own single-node-writer volume, outside the scheduler's load (its grants judged too)
                synchronized (lock) {
                    book.judgeToo(id, AccessMode.SINGLE_NODE_WRITER);
                }
                String externalId = PluginVolumes.create(id, sockets);
                bodies.add(Map.of("id", id, "namespace", NAMESPACE, "name", id, "externalId", externalId,
                        "pluginId", Cluster.PLUGIN_ID, "accessMode", AccessMode.SINGLE_NODE_WRITER.wire(),
                        "attachmentMode", AttachmentMode.FILE_SYSTEM.wire()));
            }
            Http claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
            Http.Response r = claims.post("/v1/volumes", Http.MAPPER.writeValueAsString(bodies));
            Demo.check(r.status() == 201, "POST /v1/volumes answered " + r.status() + ": " + r.raw());
            Wait.until("every volume schedulable", Duration.ofSeconds(120), null, () -> {
                Http.Response list = claims.get("/v1/volumes?namespace=" + NAMESPACE);
                if (!list.ok() || list.body() == null) {
                    return Optional.empty();
                }
                int schedulable = 0;
                for (JsonNode v : list.body()) {
                    schedulable += v.path("schedulable").asBoolean() ? 1 : 0;
                }
                return schedulable == count + fenceVolumes.size() ? Optional.of(true) : Optional.empty();
            });
        });
    }

    private void teardown() {
        if (cluster == null) {
            return;
        }
        if (fence != null) {
            fence.stopSampling();
        }
        // a worker left stopped by an aborted freeze would ignore SIGTERM until the SIGKILL
        cluster.proc("node-mount-worker-" + FenceFaults.OLD_NODE).filter(p -> p.handle().isAlive()).ifPresent(p -> {
            try {
                new ProcessBuilder("kill", "-CONT", Long.toString(p.handle().pid())).start().waitFor(10, TimeUnit.SECONDS);
            } catch (Exception ignored) {
                // gone
            }
        });
        List<String> killed = cluster.stopAll(Duration.ofSeconds(30));
        List<String> unmounted = Mounts.unmountAllUnder(cluster.workDir());
        if (!killed.isEmpty()) {
            out.println("csi chaos: teardown had to SIGKILL " + killed);
        }
        if (!unmounted.isEmpty()) {
            out.println("csi chaos: teardown unmounted " + unmounted);
        }
        if (nodeNamespace != null) {
            nodeNamespace.close();
        }
    }

    interface Action {
        void run() throws Exception;
    }

    private void step(String what, Action action) throws IOException {
        long started = System.nanoTime();
        out.print("csi chaos: " + what + " ... ");
        out.flush();
        try {
            action.run();
        } catch (IOException | RuntimeException e) {
            out.println("FAILED");
            throw e;
        } catch (Exception e) {
            out.println("FAILED");
            throw new IllegalStateException(what + ": " + e, e);
        }
        out.printf("%.1f s%n", (System.nanoTime() - started) / 1e9);
    }

    // ------------------------------------------------------------------ faults

    /**
     * Runs one fault in the middle of the load: a few seconds of load, the fault, then waits until the system
     * converged (or the limit and a margin passed), and a few seconds of load again. Returns its window.
     */
    private ChaosCheck.Fault fault(String name, long windowStart, long limit) throws Exception {
        try (Progress p = Progress.start(out, name, "the fault to start")) {
            progress = p;
            return runFault(name, windowStart, limit);
        } finally {
            progress = null;
            KAFKA_RESTART_NOISE.forEach(l -> l.setLevel(null));
        }
    }

    /** The running fault's progress lines ({@link #fault}); null between faults. */
    private volatile Progress progress;

    private void waitingFor(String what) {
        Progress p = progress;
        if (p != null) {
            p.waitingFor(what);
        }
    }

    private ChaosCheck.Fault runFault(String name, long windowStart, long limit) throws Exception {
        if (name.equals("claims-failover") && cluster.proc(REPLICA).map(p -> p.handle().isAlive()).orElse(false) == false) {
            replicaPort = FreePorts.take();
            Cluster.Proc replica = cluster.startClaims(REPLICA, replicaPort);
            cluster.awaitReady(replica, "http://127.0.0.1:" + replicaPort, Demo.START_TIMEOUT);
        }
        if (name.equals("registry-kill") && !cluster.proc(REGISTRY_REPLICA).map(p -> p.handle().isAlive()).orElse(false)) {
            registryReplicaPort = FreePorts.take();
            Cluster.Proc replica = cluster.startRegistry(REGISTRY_REPLICA, registryReplicaPort);
            cluster.awaitReady(replica, registryUrl(REGISTRY_REPLICA), Demo.START_TIMEOUT);
            // both members of the lease group, the partitions dealt and each node renewed since (by either)
            awaitRenewals(System.currentTimeMillis() + 8_000, Duration.ofSeconds(60));
        }
        pause(Duration.ofSeconds(3));
        long start = System.currentTimeMillis();
        String what;
        long end;
        if (FenceFaults.isFenceFault(name)) {
            FenceFaults.Outcome outcome = fence.run(name, this::waitingFor);
            start = outcome.start();
            end = outcome.end();
            what = outcome.what();
            synchronized (lock) {
                fenceViolations.addAll(outcome.violations());
            }
            outcome.violations().forEach(v -> out.println("csi chaos: " + v));
        } else {
            what = act(name);
            end = System.currentTimeMillis();
        }
        long deadline = end + limit + TimeUnit.SECONDS.toMillis(30);
        waitingFor("every request sent since the fault to be answered (convergence; given up "
                + TimeUnit.MILLISECONDS.toSeconds(deadline - end) + " s after the fault ended)");
        long converged = -1;
        while (System.currentTimeMillis() < deadline) {
            converged = convergedSoFar(new ChaosCheck.Fault(name, windowStart, start, end, Long.MAX_VALUE));
            if (converged >= 0) {
                break;
            }
            pause(Duration.ofMillis(250));
        }
        if (name.equals("claims-failover")) {
            // The survivor took over (or did not: the table says); now the killed instance comes back.
            Cluster.Proc restarted = cluster.restart("claim-service");
            cluster.awaitReady(restarted, cluster.claimsUrl(), Demo.START_TIMEOUT);
        }
        if (name.equals("registry-kill")) {
            what += "; " + restartRegistry();
        }
        pause(Duration.ofSeconds(2));
        long windowEnd = System.currentTimeMillis();
        out.printf("csi chaos: %-20s at %s %s; ended after %.1f s, %s%n", name, Instant.ofEpochMilli(start), what,
                (end - start) / 1000.0,
                converged < 0 ? "NOT converged" : String.format("converged %.1f s later", converged / 1000.0));
        return new ChaosCheck.Fault(name, windowStart, start, end, windowEnd);
    }

    /** Does the fault; returns once it has ended (the process back and serving), saying what it did. */
    private String act(String name) throws Exception {
        switch (name) {
            case "claims-kill" -> {
                waitingFor("claim-service to start again and be ready");
                long pid = cluster.kill9("claim-service");
                Cluster.Proc p = cluster.restart("claim-service");
                cluster.awaitReady(p, cluster.claimsUrl(), Demo.START_TIMEOUT);
                return "kill -9 claim-service (pid " + pid + "), restarted (pid " + p.handle().pid() + ")";
            }
            case "claims-failover" -> {
                long pid = cluster.kill9("claim-service");
                return "kill -9 claim-service (pid " + pid + ") with " + REPLICA + " running: the survivor takes over";
            }
            case "registry-kill" -> {
                // Two replicas (the second started before the fault): kill -9 the one that is node-1's lease
                // authority (Kafka deals the partitions by chance; killing the other would test no takeover); the
                // survivor must take its node-lease-requests partitions over (the group's session timeout, 6 s) and
                // renew every lease with the same epoch before any worker's fence time (ttl - budget after its last
                // renewal). The killed one comes back after the convergence wait (restartRegistry), and the leases
                // are watched past that.
                registryVictim = leaseAuthorityOf(FenceFaults.OLD_NODE);
                String survivor = registryVictim.equals(REGISTRY) ? REGISTRY_REPLICA : REGISTRY;
                long pid = cluster.kill9(registryVictim);
                long killedAt = System.currentTimeMillis();
                FenceCheck.Timers t = fence.timers();
                Map<String, Long> renewed = awaitRenewals(killedAt, t.leaseTtl().minus(t.budget()));
                registryKilledAt = killedAt;
                StringBuilder took = new StringBuilder();
                for (String node : Cluster.NODES) {
                    Long at = renewed.get(node);
                    took.append(took.length() == 0 ? "" : ", ").append(node).append(at == null ? " not renewed"
                            : String.format(java.util.Locale.ROOT, " renewed %.1f s after the kill", (at - killedAt) / 1000.0));
                }
                return "kill -9 " + registryVictim + " (pid " + pid + ", " + FenceFaults.OLD_NODE + "'s lease authority) with "
                        + survivor + " running: " + took;
            }
            case "worker-kill-node-1", "worker-kill-node-2" -> {
                String node = name.substring("worker-kill-".length());
                String proc = "node-mount-worker-" + node;
                long pid = cluster.kill9(proc);
                Cluster.Proc p = cluster.restart(proc);
                cluster.awaitReady(p, cluster.workerUrl(node), Demo.START_TIMEOUT);
                return "kill -9 " + proc + " (pid " + pid + "), restarted (pid " + p.handle().pid() + ")";
            }
            case "plugin-kill-node-1", "plugin-kill-node-2" -> {
                // The worker finds plugins by their sockets and does not start them: the suite restarts the
                // plugin as `up` started it.
                String proc = "hostpath-" + name.substring("plugin-kill-".length());
                long pid = cluster.kill9(proc);
                Cluster.Proc p = cluster.restart(proc);
                return "kill -9 " + proc + " (pid " + pid + "), restarted (pid " + p.handle().pid() + ")";
            }
            case "kafka-restart" -> {
                // the suite's own clients warn of every failed connection while the broker is down (hundreds of
                // lines that buried the suite's): expected here, so quiet until the fault converged (fault())
                KAFKA_RESTART_NOISE.forEach(l -> l.setLevel(java.util.logging.Level.SEVERE));
                waitingFor("Kafka to stop and start again (the suite's own Kafka clients' connection warnings are"
                        + " quieted until the fault converged)");
                Cluster.Proc kafka = cluster.proc(Cluster.KAFKA).orElseThrow();
                List<String> killed = Cluster.stop(List.of(kafka), Duration.ofSeconds(30));
                Cluster.Proc p = cluster.restart(Cluster.KAFKA);
                return "restart kafka (SIGTERM" + (killed.isEmpty() ? "" : ", SIGKILL after 30 s") + "; pid "
                        + p.handle().pid() + ")";
            }
            case "postgres-kill", "postgres-outage" -> {
                long away = name.equals("postgres-kill") ? 20 : Long.parseLong(args.option("outage").orElse("130"));
                List<Long> pids = cluster.kill9Postgres();
                waitingFor("the end of the PostgreSQL outage: away " + away + " s, then restarted");
                pause(Duration.ofSeconds(away));
                waitingFor("PostgreSQL to start again");
                Cluster.Proc p = cluster.restart(Cluster.POSTGRES);
                return "kill -9 PostgreSQL (pids " + pids + "), away " + away + " s, restarted (server pid "
                        + cluster.postmasterPid().map(String::valueOf).orElse("?") + ", process " + p.handle().pid() + ")";
            }
            default -> throw new IllegalArgumentException(name);
        }
    }

    private long registryKilledAt;
    private String registryVictim = REGISTRY;
    private int registryReplicaPort;

    private String registryUrl(String name) {
        return name.equals(REGISTRY) ? cluster.registryUrl() : "http://127.0.0.1:" + registryReplicaPort;
    }

    /**
     * Which registry replica is {@code node}'s lease authority ({@code GET /v1/nodes/{node}} answers
     * {@code authority: true} on the one owning its partition); asked for up to 30 s (a rebalance under way), then
     * the first.
     */
    private String leaseAuthorityOf(String node) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() - deadline < 0) {
            for (String name : List.of(REGISTRY, REGISTRY_REPLICA)) {
                try {
                    Http.Response r = new Http(name, registryUrl(name), cluster.adminToken()).get("/v1/nodes/" + node);
                    if (r.ok() && r.body() != null && r.body().path("authority").asBoolean()) {
                        return name;
                    }
                } catch (RuntimeException e) {
                    // not answering now: asked again
                }
            }
            pause(Duration.ofMillis(250));
        }
        out.println("csi chaos: note: no registry replica said it is " + node + "'s lease authority; killing " + REGISTRY);
        return REGISTRY;
    }

    /**
     * After {@code registry-kill}'s convergence wait: starts the killed registry again (the survivor keeps running)
     * and watches the leases past its start + ttl x (1 + drift) (the earliest lapse a process that just loaded them
     * may declare) and two renew intervals more, so that a lapse, a new epoch or renewals that stop at the rebalance
     * show ({@link FenceCheck.RegistryRestart}, checked at the end once every node-leases record was read).
     */
    private String restartRegistry() throws Exception {
        long restartAt = System.currentTimeMillis();
        Cluster.Proc p = cluster.restart(registryVictim);
        cluster.awaitReady(p, registryUrl(registryVictim), Demo.START_TIMEOUT);
        FenceCheck.Timers t = fence.timers();
        long watchedUntil = restartAt + Math.round(t.leaseTtl().toMillis() * (1 + t.clockDrift()))
                + 2 * t.leaseTtl().toMillis() / 6 + 2_000;
        pause(Duration.ofMillis(Math.max(0, watchedUntil - System.currentTimeMillis())));
        synchronized (lock) {
            registryRestarts.add(new long[] {registryKilledAt, restartAt, watchedUntil});
        }
        return registryVictim + " restarted (pid " + p.handle().pid() + "), leases watched until restart + "
                + (watchedUntil - restartAt) / 1000 + " s";
    }

    /**
     * Waits (at most {@code within}) until every node's lease was granted valid after {@code since} (the reader's
     * node-leases records, the registry's clock); returns when each was, by node (missing: not within the wait).
     */
    private Map<String, Long> awaitRenewals(long since, Duration within) {
        long deadline = System.nanoTime() + within.toNanos();
        Map<String, Long> renewed = new HashMap<>();
        while (true) {
            synchronized (lock) {
                for (FenceCheck.LeaseEv l : leases) {
                    if (l.state().equals("valid") && l.at() > since && Cluster.NODES.contains(l.node())) {
                        renewed.merge(l.node(), l.at(), Math::min);
                    }
                }
            }
            if (renewed.keySet().containsAll(Cluster.NODES) || System.nanoTime() - deadline >= 0) {
                return renewed;
            }
            pause(Duration.ofMillis(100));
        }
    }

    private long convergedSoFar(ChaosCheck.Fault fault) {
        synchronized (lock) {
            Map<String, ChaosCheck.Answer> done = ChaosCheck.finalAnswers(book.requests, book.answers);
            Set<String> nodes = new TreeSet<>(Cluster.NODES);
            return ChaosCheck.convergeMillis(fault, book.requests, done, nodes);
        }
    }

    // ------------------------------------------------------------------ the scheduler

    private KafkaProducer<String, byte[]> producer() {
        var props = ClaimClient.producerProps(cluster.kafkaBootstrap(), "csi-chaos");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
        return new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer());
    }

    /** Claims and releases at {@code rate} per second, at most one request in flight per volume. */
    private void schedule(KafkaProducer<String, byte[]> producer, double rate) {
        long interval = (long) (1_000_000_000L / rate);
        long next = System.nanoTime();
        while (sending.get()) {
            next += interval;
            ClaimRequested request = nextRequest();
            if (request != null) {
                send(producer, request);
            }
            long wait = next - System.nanoTime();
            if (wait > 0) {
                pause(Duration.ofNanos(wait));
            } else {
                next = System.nanoTime();
            }
        }
    }

    private ClaimRequested nextRequest() {
        synchronized (lock) {
            return book.next();
        }
    }

    /** Writes {@code request} (its volume marked busy with it by {@link ChaosBook#next}, or a release at the end). */
    private void send(KafkaProducer<String, byte[]> producer, ClaimRequested request) {
        long sentAt;
        try {
            sentAt = producer.send(ClaimClient.record(topics, request, ClaimClient.newTraceparent()))
                    .get(150, TimeUnit.SECONDS).timestamp();
        } catch (Exception e) {
            synchronized (lock) {
                // Maybe written, maybe not: not counted as a request; its allocation is released at the end.
                book.sendFailed(request);
            }
            out.println("csi chaos: note: sending " + request.mode().wire() + " of " + request.volumeId() + " failed: " + e);
            return;
        }
        synchronized (lock) {
            book.sent(request, sentAt);
        }
    }

    // ------------------------------------------------------------------ what the system published

    private void read() {
        String statusTopic = topics.name(Topic.CLAIM_STATUS);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                ClaimClient.consumerProps(cluster.kafkaBootstrap(), "csi-chaos-reader"))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (Topic topic : List.of(Topic.CLAIM_STATUS, Topic.NODE_EVENTS, Topic.NODE_LEASES)) {
                for (PartitionInfo info : consumer.partitionsFor(topics.name(topic), Duration.ofSeconds(30))) {
                    partitions.add(new TopicPartition(info.topic(), info.partition()));
                }
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            while (reading.get()) {
                try {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        take(r, statusTopic);
                    }
                    synchronized (lock) {
                        for (TopicPartition p : partitions) {
                            positions.put(p, consumer.position(p, Duration.ofSeconds(5)));
                        }
                    }
                } catch (org.apache.kafka.common.errors.WakeupException | org.apache.kafka.common.errors.InterruptException e) {
                    throw e;
                } catch (org.apache.kafka.common.KafkaException e) {
                    // Kafka away (its restart): keep polling, the consumer reconnects and goes on from its position
                    pause(Duration.ofMillis(200));
                }
            }
        } catch (RuntimeException e) {
            out.println("csi chaos: the reader of claim-status and node-events stopped: " + e);
        }
    }

    private final Map<TopicPartition, Long> positions = new HashMap<>();

    private void take(ConsumerRecord<String, String> record, String statusTopic) {
        try {
            if (record.topic().equals(statusTopic)) {
                ClaimStatus s = EventCodec.decode(ClaimStatus.class, record.value());
                ChaosCheck.Answer a = ChaosBook.answer(s, record.partition(), record.offset(), record.timestamp());
                Optional<String> note;
                synchronized (lock) {
                    note = book.take(a);
                }
                note.ifPresent(n -> out.println("csi chaos: note: " + n));
            } else if (record.topic().equals(topics.name(Topic.NODE_LEASES))) {
                if (record.value() == null) {
                    return; // a tombstone of the compacted topic
                }
                NodeLease l = EventCodec.decode(NodeLease.class, record.value());
                synchronized (lock) {
                    leases.add(new FenceCheck.LeaseEv(l.nodeId(), l.epoch(), l.state().wire(), l.at().toEpochMilli()));
                }
            } else {
                NodeEvent e = EventCodec.decode(NodeEvent.class, record.value());
                synchronized (lock) {
                    nodeEvents.add(new ChaosCheck.NodeEv(e.nodeId(), e.kind(), e.volumeId(), e.allocationId(),
                            Boolean.TRUE.equals(e.success()), e.occurredAt().toEpochMilli()));
                    if (e.kind() == io.csiorchestrator.events.NodeEventKind.FENCED && e.details() != null) {
                        // a fence ends publications of several volumes at once (details "ns/volume/alloc,..."): one
                        // entry per publication it removed, at the fence's time, so the checks see node-1's unmount
                        for (String key : List.of("unmounted", "lazilyDetached")) {
                            for (String pub : e.details().getOrDefault(key, "").split(",")) {
                                String[] parts = pub.split("/");
                                if (parts.length == 3) {
                                    nodeEvents.add(new ChaosCheck.NodeEv(e.nodeId(), e.kind(), parts[1], parts[2], true,
                                            e.occurredAt().toEpochMilli()));
                                }
                            }
                        }
                    }
                }
            }
        } catch (MalformedEventException e) {
            out.println("csi chaos: note: unreadable record on " + record.topic() + ": " + e.getMessage());
        }
    }

    /** Waits until the reader has read both topics up to their end offsets as of now. */
    private void awaitTopicsRead() {
        Map<TopicPartition, Long> ends;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(
                ClaimClient.consumerProps(cluster.kafkaBootstrap(), "csi-chaos-ends"))) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (Topic topic : List.of(Topic.CLAIM_STATUS, Topic.NODE_EVENTS)) {
                for (PartitionInfo info : consumer.partitionsFor(topics.name(topic), Duration.ofSeconds(30))) {
                    partitions.add(new TopicPartition(info.topic(), info.partition()));
                }
            }
            ends = consumer.endOffsets(partitions, Duration.ofSeconds(30));
        }
        Wait.until("claim-status and node-events read to their end", Duration.ofSeconds(60), null, () -> {
            synchronized (lock) {
                for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                    if (positions.getOrDefault(e.getKey(), 0L) < e.getValue()) {
                        return Optional.empty();
                    }
                }
                return Optional.of(true);
            }
        });
    }

    // ------------------------------------------------------------------ the end

    /**
     * After the last fault: waits for every answer, checks that claim-service holds every claim answered ready
     * and not released, releases every claim, and waits (up to {@code limit}) for no claim held and no mount
     * left under the work dir. Returns what was left.
     */
    private ChaosCheck.EndState finish(KafkaProducer<String, byte[]> producer, long limit) throws Exception {
        out.println("csi chaos: load stopped; waiting for every answer");
        try (Progress p = Progress.start(out, "the end", "an answer to every request (at most "
                + ANSWER_WAIT.toSeconds() + " s), then to every release")) {
            return finishRun(producer, limit);
        }
    }

    private ChaosCheck.EndState finishRun(KafkaProducer<String, byte[]> producer, long limit) throws Exception {
        try {
            Wait.until("an answer to every request", ANSWER_WAIT, null, () -> {
                synchronized (lock) {
                    return book.pending.isEmpty() ? Optional.of(true) : Optional.empty();
                }
            });
        } catch (Wait.WaitFailed e) {
            synchronized (lock) {
                out.println("csi chaos: " + book.pending.size() + " request(s) still unanswered");
            }
        }
        Http claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        List<String> lost = new ArrayList<>();
        List<String[]> toRelease;
        List<String> volumeIds;
        synchronized (lock) {
            toRelease = book.toRelease();
            volumeIds = book.volumes.stream().map(v -> v.id).toList();
        }
        for (String id : volumeIds) {
            Set<String> expected;
            synchronized (lock) {
                expected = book.expectedHeld(id);
            }
            if (expected.isEmpty()) {
                continue;
            }
            Http.Response r = claims.get("/v1/volumes/" + NAMESPACE + "/" + id);
            Set<String> heldThere = new TreeSet<>();
            if (r.ok() && r.body() != null) {
                for (JsonNode c : r.body().path("claims")) {
                    heldThere.add(c.path("allocationId").asText());
                }
            }
            lost.addAll(ChaosCheck.claimsLost(id, expected, heldThere, r.status()));
        }
        out.println("csi chaos: releasing " + toRelease.size() + " claim(s)");
        for (String[] vr : toRelease) {
            send(producer, ClaimClient.release(NAMESPACE, vr[0], vr[1]));
        }
        try {
            Wait.until("an answer to every release", ANSWER_WAIT, null, () -> {
                synchronized (lock) {
                    return book.pending.isEmpty() ? Optional.of(true) : Optional.empty();
                }
            });
        } catch (Wait.WaitFailed e) {
            out.println("csi chaos: releases unanswered: " + e.getMessage());
        }
        List<String> held = new ArrayList<>();
        List<String> mounts = new ArrayList<>();
        long deadline = System.currentTimeMillis() + limit;
        do {
            held = claimsHeld(claims);
            mounts = Mounts.under(cluster.workDir());
            if (held.isEmpty() && mounts.isEmpty()) {
                break;
            }
            pause(Duration.ofMillis(500));
        } while (System.currentTimeMillis() < deadline);
        return new ChaosCheck.EndState(held, mounts, lost);
    }

    private static List<String> claimsHeld(Http claims) {
        List<String> held = new ArrayList<>();
        Http.Response r;
        try {
            r = claims.get("/v1/volumes?namespace=" + NAMESPACE);
        } catch (Http.UnreachableException e) {
            return List.of("claim-service unreachable: " + e.getMessage());
        }
        if (!r.ok() || r.body() == null) {
            return List.of("GET /v1/volumes answered " + r.status());
        }
        for (JsonNode v : r.body()) {
            int n = v.path("currentReaders").asInt() + v.path("currentWriters").asInt();
            if (n > 0) {
                held.add("volume " + v.path("id").asText() + " holds " + v.path("currentReaders").asInt() + " reader(s), "
                        + v.path("currentWriters").asInt() + " writer(s)");
            }
        }
        return held;
    }

    // ------------------------------------------------------------------ the report

    static String table(ChaosCheck.Report report) {
        Table table = new Table("FAULT", "REQUESTS", "ANSWERS", "FAILED", "SLOWEST ANSWER", "CONVERGED AFTER",
                "VIOLATIONS");
        for (ChaosCheck.Row row : report.rows()) {
            Set<String> kinds = new TreeSet<>();
            row.violations().forEach(v -> kinds.add(v.kind()));
            table.row(row.fault(), row.requests(), row.answers(), row.failed(), seconds(row.slowestMillis()),
                    row.fault().equals(ChaosCheck.FINAL) ? "-" : row.convergeMillis() < 0 ? "never" : seconds(row.convergeMillis()),
                    row.violations().isEmpty() ? "0" : row.violations().size() + " " + kinds);
        }
        return table.render();
    }

    private static String seconds(long millis) {
        return millis < 0 ? "-" : String.format("%.1f s", millis / 1000.0);
    }

    private void print(ChaosCheck.Report report) {
        out.println();
        out.print(table(report));
        for (ChaosCheck.Violation v : report.violations()) {
            out.println("VIOLATION " + v);
        }
    }

    static Map<String, Object> toJson(ChaosCheck.Report report, List<ChaosCheck.Fault> faults, double rate, int volumes) {
        Map<String, Object> json = new LinkedHashMap<>();
        json.put("finishedAt", Instant.now().toString());
        json.put("faults", faults.stream().map(ChaosCheck.Fault::name).toList());
        json.put("rate", rate);
        json.put("volumes", volumes);
        json.put("passed", report.passed());
        List<Map<String, Object>> rows = new ArrayList<>();
        for (ChaosCheck.Row row : report.rows()) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("fault", row.fault());
            faults.stream().filter(f -> f.name().equals(row.fault())).findFirst().ifPresent(f -> {
                r.put("window", Instant.ofEpochMilli(f.windowStart()) + "/" + Instant.ofEpochMilli(f.windowEnd()));
                r.put("faultStart", Instant.ofEpochMilli(f.start()).toString());
                r.put("faultEnd", Instant.ofEpochMilli(f.end()).toString());
            });
            r.put("requests", row.requests());
            r.put("answers", row.answers());
            r.put("failed", row.failed());
            r.put("slowestAnswerMillis", row.slowestMillis());
            r.put("convergedAfterMillis", row.convergeMillis());
            List<Map<String, String>> violations = new ArrayList<>();
            for (ChaosCheck.Violation v : row.violations()) {
                violations.add(Map.of("kind", v.kind(), "detail", v.detail()));
            }
            r.put("violations", violations);
            rows.add(r);
        }
        json.put("rows", rows);
        return json;
    }

    private static void pause(Duration duration) {
        try {
            Thread.sleep(Math.max(1, duration.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        }
    }
}
