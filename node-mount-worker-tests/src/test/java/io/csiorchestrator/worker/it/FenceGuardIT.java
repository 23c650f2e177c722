package io.csiorchestrator.worker.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaBroker;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.lease.FenceGuard;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The guard process beside the real packaged worker ({@code node-mount-worker/target/quarkus-app/quarkus-run.jar}, started as
 * {@link WorkerCrashIT} starts it) with fencing on, the hostpath plugin process and an in-process broker; this test
 * stands in for plugin-registry-service and grants every lease request of the node (epoch 1, ttl {@value #TTL_MS} ms,
 * budget 3 s: a grant counts from the worker's request, and the first one waits for the test's consumer to join its
 * group; with 8 s it arrived expired on a CI machine loaded by parallel modules, granted 05:46:50.267 and fenced 361 ms
 * later, and 2.5 s was once not enough either).
 * A fenceOnLapse mount goes through the real plugin; then the worker is frozen with SIGSTOP: the guard, starved,
 * unmounts the target and the staging while the worker is still stopped (its /proc state is checked before SIGCONT)
 * and its marker names both. Then SIGCONT; then kill -9 of the worker: the guard lives on and a new worker takes it
 * over (same pid, no second guard). No time is asserted, only the order. The broker is closed as every deployment's is
 * (SASL_SSL, SCRAM, the StandardAuthorizer): the worker connects as {@code node-guard-node} with exactly its
 * {@code KafkaAccess} ACLs; the test writes node commands as {@code claim-service}, answers lease requests as
 * {@code plugin-registry-service} and reads as the super user.
 */
class FenceGuardIT {

    static final String NODE = "guard-node";
    static final Duration AWAIT = Duration.ofSeconds(60);
    static final long TTL_MS = 20_000;
    static Path root;
    static Path workerRoot;
    static KafkaBroker broker;
    static KafkaTestClient kafka;
    /** The test's stand-ins for claim-service (node-commands) and the registry (node-leases), as their principals. */
    static KafkaTestClient claimService;
    static KafkaTestClient registryWriter;
    static HostpathPlugin plugin;
    static Process worker;
    static Thread registry;
    static volatile boolean granting = true;

    @BeforeAll
    static void setUp() throws Exception {
        root = Files.createTempDirectory("csi-fence-guard-it").toRealPath();
        workerRoot = root.resolve("worker");
        broker = KafkaBroker.builder().secured(true).start();
        broker.createTopic("node-commands", 4);
        broker.createTopic(Topic.NODE_LEASE_REQUESTS.baseName(), 6);
        broker.createTopic(Topic.NODE_LEASES.baseName(), 6, Map.of("cleanup.policy", "compact"));
        broker.createContractTopics(""); // the rest, as claim-service makes them (a closed broker creates none)
        broker.issue(KafkaAccess.Principal.node(NODE), TopicCatalog.unprefixed());
        kafka = new KafkaTestClient(broker.bootstrapServers(), broker.adminSecurity());
        claimService = new KafkaTestClient(broker.bootstrapServers(),
                broker.issue(KafkaAccess.Principal.claimService(), TopicCatalog.unprefixed()));
        registryWriter = new KafkaTestClient(broker.bootstrapServers(),
                broker.issue(KafkaAccess.Principal.pluginRegistry(), TopicCatalog.unprefixed()));
        plugin = new HostpathPlugin("hp", root.resolve("plugins"), root.resolve("hp-state"),
                "--controller-publish=false").start();
        registry = new Thread(FenceGuardIT::grantEveryRequest, "test-registry");
        registry.setDaemon(true);
        registry.start();
    }

    @AfterAll
    static void tearDown() throws Exception {
        granting = false;
        if (worker != null) {
            worker.destroyForcibly(); // SIGKILL ends a stopped process too
            worker.waitFor(10, TimeUnit.SECONDS);
        }
        if (workerRoot != null) {
            FenceGuard.liveGuard(workerRoot).ifPresent(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
        }
        if (registry != null) {
            registry.join(10_000);
        }
        HostpathPlugin.killAll();
        WorkerRootResource.unmountAllUnder(root);
        if (kafka != null) {
            kafka.close();
        }
        if (claimService != null) {
            claimService.close();
        }
        if (registryWriter != null) {
            registryWriter.close();
        }
        if (broker != null) {
            broker.close();
        }
        keepLogs();
        try (Stream<Path> files = Files.walk(root)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** The workers' and the guard's logs, kept under target/fence-guard-it for a look after a failure. */
    private static void keepLogs() throws IOException {
        Path kept = Files.createDirectories(Path.of("target", "fence-guard-it"));
        try (Stream<Path> logs = Files.list(root)) {
            for (Path log : logs.filter(p -> p.toString().endsWith(".log")).toList()) {
                Files.copy(log, kept.resolve(log.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        Path guard = workerRoot.resolve(FenceGuard.LOG_FILE);
        if (Files.exists(guard)) {
            Files.copy(guard, kept.resolve("guard-" + guard.getFileName()), StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /** The epoch the test's registry grants now. */
    static final java.util.concurrent.atomic.AtomicLong epoch = new java.util.concurrent.atomic.AtomicLong(1);

    /**
     * The registry's part: every request of the node is answered with a valid lease of {@link #epoch}; the test moves
     * it on when the worker reports FENCED, as plugin-registry-service does (the next grant after a fence is E+1).
     */
    /** Grants the test's registry could not send (each logged); named in a failed wait for the guard. */
    static final java.util.concurrent.atomic.AtomicInteger grantFailures = new java.util.concurrent.atomic.AtomicInteger();

    static void grantEveryRequest() {
        Properties c = registryWriter.security().applyTo(new Properties());
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        // a group of the registry's own (its principal may read groups plugin-registry-service*, no other)
        c.put(ConsumerConfig.GROUP_ID_CONFIG, KafkaAccess.PLUGIN_REGISTRY + "-fence-guard-it");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> requests = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            requests.subscribe(List.of(Topic.NODE_LEASE_REQUESTS.baseName()));
            while (granting) {
                for (ConsumerRecord<String, String> r : requests.poll(Duration.ofMillis(100))) {
                    NodeLeaseRequested request = EventCodec.decode(NodeLeaseRequested.class, r.value());
                    if (!NODE.equals(request.nodeId())) {
                        continue;
                    }
                    NodeLease lease = new NodeLease(NODE, epoch.get(), NodeLeaseState.VALID, request.requestId(), TTL_MS,
                            3_000, Instant.now());
                    RecordHeaders h = new RecordHeaders();
                    CloudEventHeaders.create(EventType.NODE_LEASE, "/test-registry").writeTo(h);
                    try {
                        registryWriter.send(new ProducerRecord<>(Topic.NODE_LEASES.baseName(), null, NODE,
                                EventCodec.encodeToString(lease), h));
                    } catch (RuntimeException e) {
                        // a send that timed out on a loaded machine must not end the grants for good: the worker asks
                        // again within ttl / 6, and that request is answered
                        grantFailures.incrementAndGet();
                        System.err.println("test registry: could not grant request " + request.requestId() + ": " + e);
                    }
                }
            }
        }
    }

    private static Process startWorker(String name) throws IOException {
        Path jar = Path.of(System.getProperty("csi.worker.jar", "../node-mount-worker/target/quarkus-app/quarkus-run.jar"));
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-Dcsi.worker.node-id=" + NODE,
                "-Dcsi.worker.root=" + workerRoot,
                "-Dcsi.worker.plugins-dir=" + root.resolve("plugins"),
                "-Dcsi.worker.probe-interval=500ms",
                "-Dcsi.worker.rescan-interval=1s",
                "-Dcsi.worker.call-timeout=20s",
                "-Dcsi.worker.call-attempts=1",
                "-Dcsi.worker.fencing.enabled=true",
                "-Dcsi.fencing.lease-ttl=" + TTL_MS / 1000 + "s",
                "-Dkafka.bootstrap.servers=" + broker.bootstrapServers(),
                // its node's principal on the closed broker
                "-D" + KafkaClientSecurity.PROTOCOL + "=SASL_SSL",
                "-D" + KafkaClientSecurity.USERNAME + "=" + KafkaAccess.Principal.node(NODE).name(),
                "-D" + KafkaClientSecurity.PASSWORD_FILE + "=" + broker.passwordFileOf(KafkaAccess.Principal.node(NODE).name()),
                "-D" + KafkaClientSecurity.TRUSTSTORE + "=" + broker.truststore(),
                "-Dquarkus.http.port=0",
                "-jar", jar.toAbsolutePath().toString());
        return new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(root.resolve(name + ".log").toFile())).start();
    }

    private static String createVolume(String name) {
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            return client.createVolume(CreateVolumeRequest.newBuilder().setName(name)
                    .addVolumeCapabilities(VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                            CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE))
                    .build()).await().atMost(Duration.ofSeconds(20)).getVolume().getVolumeId();
        }
    }

    private static void send(NodeCommand command) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_COMMAND, "/test").writeTo(headers);
        claimService.send(new ProducerRecord<>("node-commands", NodePartitioner.partitionFor(NODE, 4), NODE,
                EventCodec.encodeToString(command), headers));
    }

    private static boolean mounted(Path path) {
        return MountTable.readSelf().mounts().stream().anyMatch(e -> e.mountPoint().equals(path.toString()));
    }

    private static String guardLog() throws IOException {
        Path log = workerRoot.resolve(FenceGuard.LOG_FILE);
        return Files.exists(log) ? Files.readString(log) : "";
    }

    /**
     * Waits for {@code line} in the guard's log; a miss names what the guard and the worker {@code workerName} logged
     * (the last 40 lines of each), which is what tells a guard never fed from a lease never valid.
     */
    private static void awaitGuardLog(String line, String workerName) {
        await().atMost(AWAIT).untilAsserted(() -> assertTrue(guardLog().contains(line), () -> "no \"" + line
                + "\" in the guard's log, which ends:\n" + tail(readOrEmpty(workerRoot.resolve(FenceGuard.LOG_FILE)))
                + "\nthe worker's log ends:\n" + tail(readOrEmpty(root.resolve(workerName + ".log")))
                + "\ngrants the test's registry could not send: " + grantFailures.get() + ", its thread alive: "
                + registry.isAlive()));
    }

    private static String readOrEmpty(Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "";
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    private static String tail(String text) {
        List<String> lines = text.lines().toList();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }

    private static void signal(String name, long pid) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).redirectErrorStream(true).start();
        assertTrue(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0, "kill -" + name + " " + pid);
    }

    /** The process state letter in /proc/<pid>/stat: T while stopped by SIGSTOP. */
    private static char procState(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        return stat.charAt(stat.lastIndexOf(')') + 2);
    }

    @Test
    void aFrozenWorkersGuardUnmountsItsFenceOnLapseMountWhileItIsStoppedThenOutlivesItsKillAndIsTakenOver() throws Exception {
        String ext = createVolume("guarded-vol");
        worker = startWorker("worker");
        kafka.awaitRecord("plugin-health", r -> r.key().equals(PluginHealth.key("hp", NODE))
                && EventCodec.decode(PluginHealth.class, r.value()).reportsHealthy(), AWAIT);
        // fed once the lease is valid: armed with no path yet
        awaitGuardLog("armed for epoch 1 with 0 path(s)", "worker");
        long guardPid = FenceGuard.liveGuard(workerRoot).orElseThrow();
        assertTrue(Files.readString(root.resolve("worker.log")).contains("fence guard pid " + guardPid + " started"));

        send(new NodeCommand("mount-1", NODE, NodeCommandKind.MOUNT, "default", "vol", "hp", ext, "alloc-1",
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, Map.of(), Map.of(),
                null, Instant.now()).withFencing(1L, 1L, true));
        MountDone done = EventCodec.decode(MountDone.class, kafka.awaitRecord("mount-done",
                r -> r.value().contains("\"commandId\":\"mount-1\""), AWAIT).value());
        assertTrue(done.succeeded(), done.toString());
        WorkerPaths paths = new WorkerPaths(workerRoot, new PosixDirs());
        Path target = paths.targetPath("alloc-1", "default", "vol");
        Path staging = paths.stagingPath("default", "vol");
        assertTrue(mounted(target) && mounted(staging));
        // the fence plan reached the guard: the target and the staging
        awaitGuardLog("armed for epoch 1 with 2 path(s)", "worker");

        signal("STOP", worker.pid()); // frozen: no renewal, no feed, no self-fence
        Path marker = workerRoot.resolve(FenceGuard.MARKER);
        await().atMost(AWAIT).until(() -> !mounted(target) && !mounted(staging) && Files.exists(marker));
        assertEquals('T', procState(worker.pid()), "unmounted while the worker is still stopped");
        assertEquals(List.of("epoch 1", "unmounted " + target, "unmounted " + staging),
                Files.readAllLines(marker).stream().filter(l -> !l.startsWith("at ")).toList(),
                "the marker names both, target first (then the time of the fence)");
        assertTrue(ProcessHandle.of(guardPid).isPresent(), "the guard lives on and waits for a newer epoch");

        long fencedEpoch = epoch.get();
        signal("CONT", worker.pid());
        assertTrue(worker.isAlive());
        // continued: the worker takes the guard's marker in, reports FENCED by the guard, and gets a newer epoch
        ConsumerRecord<String, String> fenced = kafka.awaitRecord("node-events", r -> r.value().contains("\"kind\":\"fenced\"")
                && r.value().contains("\"fencedBy\":\"guard\""), AWAIT);
        assertTrue(fenced.value().contains("\"epoch\":\"" + fencedEpoch + "\""), fenced.value());
        await().atMost(AWAIT).until(() -> !Files.exists(marker));
        epoch.incrementAndGet(); // the registry took the FENCED report in: its next grant is a newer epoch
        NodeEvent unfenced = EventCodec.decode(NodeEvent.class, kafka.awaitRecord("node-events",
                r -> r.value().contains("\"kind\":\"unfenced\""), AWAIT).value());
        // the worker's own word that it holds the newer epoch (not the test's counter, which the test itself moved)
        assertEquals(fencedEpoch + 1, unfenced.leaseEpoch(), "a newer epoch was granted after the fence: " + unfenced);
        assertEquals(String.valueOf(fencedEpoch + 1), unfenced.details().get("epoch"), unfenced.toString());
        assertEquals(String.valueOf(fencedEpoch), unfenced.details().get("fencedEpoch"), unfenced.toString());
        // a command of the fenced epoch is refused before any plugin call; nothing is mounted again
        send(new NodeCommand("mount-stale", NODE, NodeCommandKind.MOUNT, "default", "vol", "hp", ext, "alloc-1",
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, Map.of(), Map.of(),
                null, Instant.now()).withFencing(fencedEpoch, 1L, true));
        MountDone stale = EventCodec.decode(MountDone.class, kafka.awaitRecord("mount-done",
                r -> r.value().contains("\"commandId\":\"mount-stale\""), AWAIT).value());
        assertEquals(false, stale.succeeded(), stale.toString());
        assertEquals("STALE_LEASE_EPOCH", stale.errorCode(), stale.toString());
        assertTrue(!mounted(target) && !mounted(staging), "the fenced volume stays unmounted");

        // kill -9 of the worker: the guard (its own session) lives on, and the next worker takes it over
        worker.destroyForcibly();
        assertTrue(worker.waitFor(10, TimeUnit.SECONDS));
        assertTrue(ProcessHandle.of(guardPid).isPresent(), "the guard outlives the killed worker");
        worker = startWorker("worker-2");
        await().atMost(AWAIT).until(() -> Files.readString(root.resolve("worker-2.log"))
                .contains("fence guard pid " + guardPid + " taken over"));
        assertEquals(guardPid, FenceGuard.liveGuard(workerRoot).orElseThrow(), "no second guard");
    }
}
