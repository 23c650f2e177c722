package io.csiorchestrator.worker.it;

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
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.worker.mount.ControllerVolumePlugin;
import io.csiorchestrator.worker.mount.NodeVolumePlugin;
import io.csiorchestrator.worker.mount.PluginDirectory;
import io.csiorchestrator.worker.mount.SecretOpener;
import io.csiorchestrator.worker.mount.VolumeOperations;
import io.csiorchestrator.worker.plugin.CsiVolumePlugin;
import io.csiorchestrator.worker.plugin.PluginSettings;
import io.csiorchestrator.worker.plugin.PluginSupervisor;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 36 item 1, the worker's side: a mount or unmount with the controller steps ({@code withController}) makes the
 * whole attach or detach in one command, in the CSI order, against the real hostpath plugin (a process, with
 * PUBLISH_UNPUBLISH_VOLUME: its NodeStage refuses a volume not controller-published to its node) over its unix socket,
 * with real bind mounts; the calls are read from the plugin's own call log. {@link VolumeOperations} runs in this JVM
 * with the real record store; the kill -9 between two calls of one attach is {@code WorkerCrashIT}'s.
 */
class ControllerStepsTest {

    private static final Duration WAIT = Duration.ofSeconds(30);
    /** The hostpath plugin's node id (HostpathPlugin starts it with --node-id test-node): the external node id. */
    private static final String EXTERNAL_NODE = "test-node";
    private static final String[] CSI_STEPS = {"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
            "NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"};

    @TempDir
    Path dir;

    private HostpathPlugin plugin;
    private PluginSupervisor supervisor;
    private WorkerPaths paths;
    private VolumeOperations ops;
    private String externalId;
    private final List<NodeEvent> events = new ArrayList<>();
    private int commands;

    @BeforeEach
    void start() throws Exception {
        Path root = dir.toRealPath();
        plugin = new HostpathPlugin("hp", root.resolve("plugins"), root.resolve("state")).start();
        paths = new WorkerPaths(root.resolve("worker"), new PosixDirs());
        supervisor = new PluginSupervisor("hp", "node-1", plugin.socket, PluginSettings.DEFAULTS, paths.root(),
                new PluginSupervisor.Timing(Duration.ofSeconds(5), Duration.ofSeconds(5), Duration.ofSeconds(10), 1),
                (event, cause) -> { }, id -> { }, Clock.systemUTC());
        supervisor.check();
        assertTrue(supervisor.healthy(), supervisor.description());
        CsiVolumePlugin volumes = supervisor.volumesIfHealthy().orElseThrow();
        PluginDirectory directory = new PluginDirectory() {
            @Override
            public Optional<NodeVolumePlugin> node(String pluginId) {
                return pluginId.equals("hp") ? Optional.of(volumes) : Optional.empty();
            }

            @Override
            public Optional<ControllerVolumePlugin> controller(String pluginId) {
                return pluginId.equals("hp") ? Optional.of(volumes) : Optional.empty();
            }
        };
        ops = new VolumeOperations("node-1", paths, new MountRecordStore(paths), directory, MountTable::readSelf,
                SecretOpener.none(), events::add, Clock.systemUTC());
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(WAIT)) {
            externalId = client.createVolume(CreateVolumeRequest.newBuilder().setName("v").addVolumeCapabilities(
                            VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_MULTI_WRITER, CsiAttachmentMode.FILE_SYSTEM,
                                    MountOptions.NONE)).build())
                    .await().atMost(WAIT).getVolume().getVolumeId();
        }
    }

    @AfterEach
    void stop() throws Exception {
        if (supervisor != null) {
            supervisor.stop("test over");
        }
        if (plugin != null) {
            plugin.stop();
        }
        WorkerRootResource.unmountAllUnder(dir.toRealPath());
    }

    private NodeCommand combined(NodeCommandKind kind, String alloc) {
        boolean mount = kind == NodeCommandKind.MOUNT;
        return new NodeCommand("c" + (++commands), "node-1", kind, "ns", "vol", "hp", externalId, alloc,
                mount ? AccessMode.MULTI_NODE_MULTI_WRITER : null, mount ? AttachmentMode.FILE_SYSTEM : null, false,
                null, EXTERNAL_NODE, Map.of(), Map.of(), null, Instant.now()).withControllerSteps();
    }

    private VolumeRecord record() {
        return ops.record(new VolumeKey("ns", "vol")).orElseThrow();
    }

    private VolumeRecord recordOnDisk() throws Exception {
        return new MountRecordStore(paths).load(new VolumeKey("ns", "vol")).orElseThrow();
    }

    private static boolean mounted(Path path) {
        return MountTable.readSelf().isMountPoint(path);
    }

    private long mountEvents() {
        return events.stream().filter(e -> e.kind() == NodeEventKind.MOUNT).count();
    }

    /**
     * (a) One combined mount: ControllerPublish, NodeStage, NodePublish in that order, one answer (with the publish
     * context), the publication in the record; the same command id again is answered from the record without a call;
     * the combined unmount: NodeUnpublish, NodeUnstage, ControllerUnpublish in that order.
     */
    @Test
    void aCombinedMountAttachesInTheCsiOrderAndTheCombinedUnmountDetachesInTheReverseOrder() throws Exception {
        NodeCommand mount = combined(NodeCommandKind.MOUNT, "a1");
        MountDone done = ops.execute(mount);
        assertTrue(done.succeeded(), done.toString());
        assertEquals(List.of("ControllerPublishVolume OK", "NodeStageVolume OK", "NodePublishVolume OK"),
                plugin.answered(CSI_STEPS));
        assertEquals(1, mountEvents(), events.toString());
        assertTrue(mounted(Path.of(done.hostPath())), "published with a real bind mount at " + done.hostPath());
        Map<String, String> context = recordOnDisk().controllerPublications().get(EXTERNAL_NODE);
        assertTrue(context != null && !context.isEmpty(), "the publication and its context are on disk: "
                + recordOnDisk().controllerPublications());
        assertEquals(context, done.publishContext(), "the answer carries the controller's publish context");
        assertEquals(context, record().usage("a1").orElseThrow().publishContext(),
                "staged and published with it (the restore uses the usage's)");

        int before = plugin.answered(CSI_STEPS).size();
        assertEquals(done, ops.execute(mount), "a redelivery is answered from the record");
        assertEquals(before, plugin.answered(CSI_STEPS).size(), "without a plugin call");

        MountDone released = ops.execute(combined(NodeCommandKind.UNMOUNT, "a1"));
        assertTrue(released.succeeded(), released.toString());
        assertEquals(List.of("ControllerPublishVolume OK", "NodeStageVolume OK", "NodePublishVolume OK",
                "NodeUnpublishVolume OK", "NodeUnstageVolume OK", "ControllerUnpublishVolume OK"),
                plugin.answered(CSI_STEPS));
        assertTrue(recordOnDisk().controllerPublications().isEmpty(), recordOnDisk().toString());
        assertTrue(recordOnDisk().idle(), recordOnDisk().toString());
        assertFalse(mounted(Path.of(done.hostPath())));
        assertFalse(mounted(Path.of(done.stagingPath())));
    }

    /**
     * (b) NodePublish INTERNAL in a combined mount: answered failed with the plugin's message, the node rollback
     * (NodeUnpublish, NodeUnstage) done, the controller publication kept (no ControllerUnpublish from the mount);
     * the combined unmount that follows calls ControllerUnpublish after the NodeUnstage.
     */
    @Test
    void aFailedNodePublishRollsBackTheNodeStepsAndLeavesTheControllerPublicationToTheUnmount() throws Exception {
        plugin.faults("NodePublishVolume INTERNAL 1 the disk is on fire\n");
        MountDone failed = ops.execute(combined(NodeCommandKind.MOUNT, "a1"));
        assertFalse(failed.succeeded(), failed.toString());
        assertEquals("INTERNAL", failed.errorCode());
        assertTrue(failed.errorMessage().contains("the disk is on fire"), failed.errorMessage());
        assertEquals(List.of("ControllerPublishVolume OK", "NodeStageVolume OK", "NodePublishVolume INTERNAL",
                "NodeUnpublishVolume OK", "NodeUnstageVolume OK"), plugin.answered(CSI_STEPS));
        VolumeRecord afterFailure = recordOnDisk();
        assertTrue(afterFailure.usages().isEmpty(), afterFailure.toString());
        assertEquals(StageState.UNSTAGED, afterFailure.stage());
        assertTrue(afterFailure.controllerPublications().containsKey(EXTERNAL_NODE), afterFailure.toString());

        MountDone released = ops.execute(combined(NodeCommandKind.UNMOUNT, "a1"));
        assertTrue(released.succeeded(), released.toString());
        assertEquals(List.of("ControllerPublishVolume OK", "NodeStageVolume OK", "NodePublishVolume INTERNAL",
                "NodeUnpublishVolume OK", "NodeUnstageVolume OK", "ControllerUnpublishVolume OK"),
                plugin.answered(CSI_STEPS));
        assertTrue(recordOnDisk().controllerPublications().isEmpty(), recordOnDisk().toString());
    }

    /**
     * A retryable NodeStage failure in a combined mount: the node steps are rolled back (nothing of the volume is in
     * use or staged here any more), so the mount sent again (a new command id, as claim-service re-sends it) makes the
     * controller publication again (idempotent, the same context) before it stages and publishes: a publication the
     * record names while nothing uses the volume here is not trusted (see the next test). A redelivery of a command
     * interrupted between two calls, whose usage is still recorded, skips it (WorkerCrashIT's kill -9).
     */
    @Test
    void aMountSentAgainAfterARetryableFailureCompletesTheAttach() throws Exception {
        plugin.faults("NodeStageVolume UNAVAILABLE 1 try later\n");
        MountDone failed = ops.execute(combined(NodeCommandKind.MOUNT, "a1"));
        assertFalse(failed.succeeded(), failed.toString());
        assertEquals("UNAVAILABLE", failed.errorCode());

        MountDone again = ops.execute(combined(NodeCommandKind.MOUNT, "a1"));
        assertTrue(again.succeeded(), again.toString());
        List<String> calls = plugin.answered(CSI_STEPS);
        assertEquals(List.of("ControllerPublishVolume OK", "NodeStageVolume OK", "NodePublishVolume OK"),
                calls.subList(calls.size() - 3, calls.size()), calls.toString());
        assertTrue(mounted(Path.of(again.hostPath())));
        assertEquals(1, recordOnDisk().controllerPublications().size(), recordOnDisk().toString());
    }

    /**
     * A publication the record still names after the volume's last use on this node ended without the controller
     * step (an unmount that left it to another claim, or a fence), then ended elsewhere (a controller-unpublish sent to
     * another node's controller while this node was cut off): the next combined mount does not trust it and makes the
     * controller publication again, so its NodeStage (which the hostpath plugin refuses for a volume not published to
     * this node) succeeds.
     */
    @Test
    void aStalePublicationInTheRecordIsMadeAgainByTheNextAttach() throws Exception {
        assertTrue(ops.execute(combined(NodeCommandKind.MOUNT, "a1")).succeeded());
        NodeCommand plainUnmount = new NodeCommand("c" + (++commands), "node-1", NodeCommandKind.UNMOUNT, "ns", "vol",
                "hp", externalId, "a1", null, null, false, null, null, Map.of(), Map.of(), null, Instant.now());
        assertTrue(ops.execute(plainUnmount).succeeded());
        assertTrue(recordOnDisk().controllerPublications().containsKey(EXTERNAL_NODE), "left in the record");
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(WAIT)) {
            client.controllerUnpublish(io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest.newBuilder()
                    .setVolumeId(externalId).setNodeId(EXTERNAL_NODE).build()).await().atMost(WAIT);
        }

        MountDone next = ops.execute(combined(NodeCommandKind.MOUNT, "a2"));
        assertTrue(next.succeeded(), next.toString());
        List<String> calls = plugin.answered(CSI_STEPS);
        assertEquals(List.of("ControllerUnpublishVolume OK", "ControllerPublishVolume OK", "NodeStageVolume OK",
                "NodePublishVolume OK"), calls.subList(calls.size() - 4, calls.size()), calls.toString());
    }

    /**
     * A failed ControllerPublish: answered with the plugin's code and message, no node call at all (nothing staged, so
     * no NodeUnstage either), the usage rolled back and nothing recorded as published.
     */
    @Test
    void aFailedControllerPublishMakesNoNodeCallAndRollsBackTheUsage() throws Exception {
        plugin.faults("ControllerPublishVolume FAILED_PRECONDITION 1 published on another node\n");
        MountDone failed = ops.execute(combined(NodeCommandKind.MOUNT, "a1"));
        assertFalse(failed.succeeded(), failed.toString());
        assertEquals("FAILED_PRECONDITION", failed.errorCode());
        assertTrue(failed.errorMessage().contains("published on another node"), failed.errorMessage());
        assertEquals(List.of("ControllerPublishVolume FAILED_PRECONDITION"), plugin.answered(CSI_STEPS));
        VolumeRecord record = recordOnDisk();
        assertTrue(record.idle(), "no usage, unstaged, no publication: " + record);
        assertFalse(Files.exists(paths.stagingPath("ns", "vol")), "no staging directory made");
    }

    /**
     * (d) Two allocations of the volume on this node: the first one's combined unmount leaves the controller
     * publication (and the staging) to the second; the second one's ends both, ControllerUnpublish last.
     */
    @Test
    void theControllerPublicationEndsWithTheLastAllocationOnTheNode() throws Exception {
        assertTrue(ops.execute(combined(NodeCommandKind.MOUNT, "a1")).succeeded());
        assertTrue(ops.execute(combined(NodeCommandKind.MOUNT, "a2")).succeeded());
        assertEquals(List.of("ControllerPublishVolume OK", "NodeStageVolume OK", "NodePublishVolume OK",
                "NodePublishVolume OK"), plugin.answered(CSI_STEPS), "the second mount finds it published and staged");

        MountDone first = ops.execute(combined(NodeCommandKind.UNMOUNT, "a1"));
        assertTrue(first.succeeded(), first.toString());
        assertEquals(0, plugin.calls("ControllerUnpublishVolume"), "a2 still uses the volume");
        assertEquals(0, plugin.calls("NodeUnstageVolume"));
        assertTrue(recordOnDisk().controllerPublications().containsKey(EXTERNAL_NODE));

        MountDone last = ops.execute(combined(NodeCommandKind.UNMOUNT, "a2"));
        assertTrue(last.succeeded(), last.toString());
        List<String> calls = plugin.answered(CSI_STEPS);
        assertEquals(List.of("NodeUnpublishVolume OK", "NodeUnpublishVolume OK", "NodeUnstageVolume OK",
                "ControllerUnpublishVolume OK"), calls.subList(4, calls.size()));
        assertTrue(recordOnDisk().idle(), recordOnDisk().toString());
    }
}
