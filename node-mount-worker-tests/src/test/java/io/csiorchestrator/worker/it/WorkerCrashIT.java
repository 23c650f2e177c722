package io.csiorchestrator.worker.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.testkit.KafkaBroker;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.ProducerRecord;
import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.TopicCatalog;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * kill -9 of the worker process between stage and publish, then a restart: the packaged worker
 * ({@code node-mount-worker/target/quarkus-app/quarkus-run.jar}) runs as a separate process against an in-process
 * Kafka broker and the hostpath plugin (also a process). NodePublishVolume is slowed down so the
 * worker is killed while the publish is in flight, right after the stage was answered. The
 * worker then restarts without Kafka (restore from the local record alone), is killed again, and
 * restarts with Kafka: the redelivered command is answered and nothing is mounted twice. The broker is closed as every
 * deployment's is (SASL_SSL, SCRAM, the StandardAuthorizer): the worker connects as {@code node-crash-node} with
 * exactly its {@code KafkaAccess} ACLs, the test writes node commands as {@code claim-service} and reads as the
 * super user. A second case (issue 36) kills the worker between two CSI calls of one combined attach (a mount with the
 * controller steps, on a plugin with PUBLISH_UNPUBLISH_VOLUME): ControllerPublishVolume is made once, for all that.
 */
class WorkerCrashIT {

    static final String NODE = "crash-node";
    static Path root;
    static KafkaBroker broker;
    static KafkaTestClient kafka;
    /** The test's stand-in for claim-service, the one writer of node-commands. */
    static KafkaTestClient claimService;
    static HostpathPlugin plugin;
    /** With PUBLISH_UNPUBLISH_VOLUME (its NodeStage refuses a volume not controller-published to its node). */
    static HostpathPlugin controllerPlugin;
    static final List<Process> workers = new ArrayList<>();

    @BeforeAll
    static void setUp() throws Exception {
        root = Files.createTempDirectory("csi-worker-crash").toRealPath();
        broker = KafkaBroker.builder().secured(true).start();
        broker.createTopic("node-commands", 4);
        broker.createContractTopics(""); // the rest, as claim-service makes them (a closed broker creates none)
        broker.issue(KafkaAccess.Principal.node(NODE), TopicCatalog.unprefixed());
        kafka = new KafkaTestClient(broker.bootstrapServers(), broker.adminSecurity());
        claimService = new KafkaTestClient(broker.bootstrapServers(),
                broker.issue(KafkaAccess.Principal.claimService(), TopicCatalog.unprefixed()));
        plugin = new HostpathPlugin("hp", root.resolve("plugins"), root.resolve("hp-state"),
                "--controller-publish=false").start();
        controllerPlugin = new HostpathPlugin("hpc", root.resolve("plugins"), root.resolve("hpc-state")).start();
    }

    @AfterAll
    static void tearDown() throws Exception {
        for (Process w : workers) {
            w.destroyForcibly();
            w.waitFor(10, TimeUnit.SECONDS);
        }
        HostpathPlugin.killAll();
        WorkerRootResource.unmountAllUnder(root);
        if (kafka != null) {
            kafka.close();
        }
        if (claimService != null) {
            claimService.close();
        }
        if (broker != null) {
            broker.close();
        }
        try (Stream<Path> files = Files.walk(root)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private static Process startWorker(String name) throws IOException {
        return startWorker(name, broker.bootstrapServers());
    }

    private static Process startWorker(String name, String bootstrapServers) throws IOException {
        Path jar = Path.of(System.getProperty("csi.worker.jar", "../node-mount-worker/target/quarkus-app/quarkus-run.jar"));
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-Dcsi.worker.node-id=" + NODE,
                "-Dcsi.worker.root=" + root.resolve("worker"),
                "-Dcsi.worker.plugins-dir=" + root.resolve("plugins"),
                "-Dcsi.worker.probe-interval=500ms",
                "-Dcsi.worker.rescan-interval=1s",
                "-Dcsi.worker.call-timeout=20s",
                "-Dcsi.worker.call-attempts=1",
                // no plugin-registry-service here to grant a lease (node leases are on by default): without this
                // every mount of the crash cases would be refused NO_VALID_LEASE; leases are not what this test is about
                "-Dcsi.worker.fencing.enabled=false",
                "-Dkafka.bootstrap.servers=" + bootstrapServers,
                // its node's principal on the closed broker
                "-D" + KafkaClientSecurity.PROTOCOL + "=SASL_SSL",
                "-D" + KafkaClientSecurity.USERNAME + "=" + KafkaAccess.Principal.node(NODE).name(),
                "-D" + KafkaClientSecurity.PASSWORD_FILE + "=" + broker.passwordFileOf(KafkaAccess.Principal.node(NODE).name()),
                "-D" + KafkaClientSecurity.TRUSTSTORE + "=" + broker.truststore(),
                "-Dquarkus.http.port=0",
                "-jar", jar.toAbsolutePath().toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(root.resolve(name + ".log").toFile())).start();
        workers.add(p);
        return p;
    }

    /** The cases share the broker and the root: each starts its workers after the other's are gone. */
    private static void killWorkers() throws InterruptedException {
        for (Process w : workers) {
            w.destroyForcibly();
            w.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static String createVolume(String name) {
        return createVolume(plugin, name);
    }

    private static String createVolume(HostpathPlugin on, String name) {
        try (CsiPluginClient client = CsiPluginClient.connect(on.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            return client.createVolume(CreateVolumeRequest.newBuilder().setName(name)
                    .addVolumeCapabilities(VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_MULTI_WRITER,
                            CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE))
                    .build()).await().atMost(Duration.ofSeconds(20)).getVolume().getVolumeId();
        }
    }

    private static void send(NodeCommand command) {
        org.apache.kafka.common.header.internals.RecordHeaders headers = new org.apache.kafka.common.header.internals.RecordHeaders();
        io.csiorchestrator.events.CloudEventHeaders.create(io.csiorchestrator.events.EventType.NODE_COMMAND, "/test").writeTo(headers);
        claimService.send(new ProducerRecord<>("node-commands", NodePartitioner.partitionFor(NODE, 4), NODE,
                EventCodec.encodeToString(command), headers));
    }

    private static NodeCommand command(NodeCommandKind kind, String ext, String id) {
        boolean mount = kind == NodeCommandKind.MOUNT;
        return new NodeCommand(id, NODE, kind, "default", "vol", "hp", ext, "alloc-1",
                mount ? AccessMode.MULTI_NODE_MULTI_WRITER : null, mount ? AttachmentMode.FILE_SYSTEM : null, false,
                null, null, Map.of(), Map.of(), null, Instant.now());
    }

    private static long mountsAt(Path path) {
        return MountTable.readSelf().mounts().stream().filter(e -> e.mountPoint().equals(path.toString())).count();
    }

    @Test
    void killNineBetweenStageAndPublishThenRestartConverges() throws Exception {
        killWorkers();
        String ext = createVolume("crash-vol");
        Process first = startWorker("worker-1");
        kafka.awaitRecord("plugin-health", r -> r.key().equals(PluginHealth.key("hp", NODE))
                && EventCodec.decode(PluginHealth.class, r.value()).reportsHealthy(), Duration.ofSeconds(60));

        plugin.faults("latency NodePublishVolume 4s\n");
        NodeCommand mount = command(NodeCommandKind.MOUNT, ext, "mount-1");
        send(mount);
        // the publish has reached the plugin (and sleeps there 4 s): the stage was answered before it
        await().atMost(Duration.ofSeconds(30)).until(() -> plugin.startedCalls("NodePublishVolume") == 1);
        assertEquals(1, plugin.successfulCalls("NodeStageVolume"));
        first.destroyForcibly(); // kill -9 while the publish is in flight
        first.waitFor(10, TimeUnit.SECONDS);
        assertFalse(first.isAlive());
        plugin.faults("");
        // the plugin ends the dead worker's publish (answered, or CANCELLED when gRPC drops it with
        // the connection) before a new worker starts, so the restore cannot race it
        await().atMost(Duration.ofSeconds(30)).until(() -> plugin.calls("NodePublishVolume") == 1);

        WorkerPaths paths = new WorkerPaths(root.resolve("worker"), new PosixDirs());
        Path staging = paths.stagingPath("default", "vol");
        Path target = paths.targetPath("alloc-1", "default", "vol");
        VolumeRecord crashed = new MountRecordStore(paths).load(new VolumeKey("default", "vol")).orElseThrow();
        assertTrue(crashed.usage("alloc-1").isPresent(), "the usage reference was recorded before staging");

        // restart while Kafka is unreachable (a disconnected node): the restore needs no broker and
        // publishes the lost publication again from the record alone
        Process offline = startWorker("worker-2-offline", "127.0.0.1:1");
        await().atMost(Duration.ofSeconds(60)).until(() -> mountsAt(target) == 1 && mountsAt(staging) == 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> new MountRecordStore(paths)
                .load(new VolumeKey("default", "vol")).orElseThrow().usage("alloc-1")
                .map(u -> u.state() == PublishState.PUBLISHED).orElse(false));
        offline.destroyForcibly(); // and crash once more
        offline.waitFor(10, TimeUnit.SECONDS);

        startWorker("worker-3");
        MountDone done = EventCodec.decode(MountDone.class, kafka.awaitRecord("mount-done",
                r -> r.value().contains("\"commandId\":\"mount-1\""), Duration.ofSeconds(60)).value());
        assertTrue(done.succeeded(), done.toString());
        assertEquals(1, plugin.successfulCalls("NodeStageVolume"), "the volume is staged once");
        assertEquals(1, mountsAt(staging), "one staging mount");
        assertEquals(1, mountsAt(target), "one publication, no duplicate mount");
        await().atMost(Duration.ofSeconds(10)).until(() -> new MountRecordStore(paths)
                .load(new VolumeKey("default", "vol")).orElseThrow().usage("alloc-1")
                .map(u -> u.state() == PublishState.PUBLISHED).orElse(false));

        NodeCommand unmount = command(NodeCommandKind.UNMOUNT, ext, "unmount-1");
        send(unmount);
        MountDone released = EventCodec.decode(MountDone.class, kafka.awaitRecord("mount-done",
                r -> r.value().contains("\"commandId\":\"unmount-1\""), Duration.ofSeconds(60)).value());
        assertTrue(released.succeeded(), released.toString());
        assertEquals(0, mountsAt(target));
        assertEquals(0, mountsAt(staging));
        assertEquals(1, plugin.successfulCalls("NodeUnstageVolume"));
    }

    /**
     * Issue 36: kill -9 of the worker between two CSI calls of one combined attach. ControllerPublishVolume answered,
     * NodeStageVolume in flight (slowed down by the plugin's fault rule) when the worker dies; started again, the
     * worker gets the command again and completes it: ControllerPublishVolume was called exactly once (the publication
     * was recorded durably before the stage), the volume is staged and published, and the command has exactly one
     * answer on mount-done (counted once the answer of a later command, the combined unmount, is there).
     */
    @Test
    void killNineBetweenControllerPublishAndStageOfACombinedMountThenTheRedeliveryCompletesIt() throws Exception {
        killWorkers();
        String ext = createVolume(controllerPlugin, "combined-vol");
        Process first = startWorker("combined-worker-1");
        kafka.awaitRecord("plugin-health", r -> r.key().equals(PluginHealth.key("hpc", NODE))
                && EventCodec.decode(PluginHealth.class, r.value()).reportsHealthy(), Duration.ofSeconds(60));

        controllerPlugin.faults("latency NodeStageVolume 4s\n");
        send(combined(NodeCommandKind.MOUNT, ext, "combined-mount-1"));
        // the stage has reached the plugin (and sleeps there 4 s): the controller publish was answered before it
        await().atMost(Duration.ofSeconds(30)).until(() -> controllerPlugin.startedCalls("NodeStageVolume") == 1);
        assertEquals(1, controllerPlugin.successfulCalls("ControllerPublishVolume"));
        first.destroyForcibly(); // kill -9 while the stage is in flight
        first.waitFor(10, TimeUnit.SECONDS);
        assertFalse(first.isAlive());
        controllerPlugin.faults("");
        // the dead worker's stage ends (answered, or CANCELLED with the connection) before a new worker starts
        await().atMost(Duration.ofSeconds(30)).until(() -> controllerPlugin.calls("NodeStageVolume") == 1);

        WorkerPaths paths = new WorkerPaths(root.resolve("worker"), new PosixDirs());
        VolumeKey key = new VolumeKey("default", "combined-vol");
        VolumeRecord crashed = new MountRecordStore(paths).load(key).orElseThrow();
        assertTrue(crashed.controllerPublications().containsKey("test-node"),
                "the controller publication was on disk before the stage: " + crashed);

        startWorker("combined-worker-2");
        MountDone done = EventCodec.decode(MountDone.class, kafka.awaitRecord("mount-done",
                r -> r.value().contains("\"commandId\":\"combined-mount-1\""), Duration.ofSeconds(60)).value());
        assertTrue(done.succeeded(), done.toString());
        assertEquals(1, controllerPlugin.startedCalls("ControllerPublishVolume"), "ControllerPublishVolume once");
        Path staging = paths.stagingPath("default", "combined-vol");
        Path target = paths.targetPath("alloc-1", "default", "combined-vol");
        assertEquals(1, mountsAt(staging), "staged once");
        assertEquals(1, mountsAt(target), "published once");
        assertTrue(controllerPlugin.successfulCalls("NodePublishVolume") >= 1);

        send(combined(NodeCommandKind.UNMOUNT, ext, "combined-unmount-1"));
        MountDone released = EventCodec.decode(MountDone.class, kafka.awaitRecord("mount-done",
                r -> r.value().contains("\"commandId\":\"combined-unmount-1\""), Duration.ofSeconds(60)).value());
        assertTrue(released.succeeded(), released.toString());
        // mount-done is keyed by node: one partition, so an answer to the mount sent twice lies before this one
        long answers = kafka.readAll("mount-done").stream()
                .filter(r -> r.value().contains("\"commandId\":\"combined-mount-1\"")).count();
        assertEquals(1, answers, "exactly one answer to the combined mount");
        assertEquals(0, mountsAt(target));
        assertEquals(0, mountsAt(staging));
        assertEquals(1, controllerPlugin.successfulCalls("ControllerUnpublishVolume"));
        killWorkers();
    }

    private static NodeCommand combined(NodeCommandKind kind, String ext, String id) {
        boolean mount = kind == NodeCommandKind.MOUNT;
        return new NodeCommand(id, NODE, kind, "default", "combined-vol", "hpc", ext, "alloc-1",
                mount ? AccessMode.MULTI_NODE_MULTI_WRITER : null, mount ? AttachmentMode.FILE_SYSTEM : null, false,
                null, "test-node", Map.of(), Map.of(), null, Instant.now()).withControllerSteps();
    }
}
