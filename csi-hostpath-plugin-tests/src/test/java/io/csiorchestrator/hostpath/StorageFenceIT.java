package io.csiorchestrator.hostpath;

import static io.csiorchestrator.hostpath.PluginFixture.WRITER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.v1.ControllerGrpc;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.NodeGrpc;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The storage fence of {@code --fence-on-controller-unpublish}, with two real plugin processes (nodes n1 and
 * n2, one {@code --shared-dir}) over their unix sockets and real bind mounts: n1 is the node being fenced, n2
 * the healthy node whose controller answers ControllerUnpublishVolume(vol, n1). Node n3 is known to the
 * plugins but has no plugin running. (Without the flag nothing of this happens: {@link SharedDirIT}.)
 */
class StorageFenceIT {

    @TempDir
    static Path dir;

    private static HostpathPluginProcess n1;
    private static HostpathPluginProcess n2;
    private static ManagedChannel channel1;
    private static ManagedChannel channel2;

    @BeforeAll
    static void start() throws IOException {
        Path shared = dir.resolve("shared");
        n1 = HostpathPluginProcess.builder(dir.resolve("n1.sock"), "n1", dir.resolve("n1-state"))
                .args("--known-node-ids", "n2,n3", "--shared-dir", shared.toString(),
                        "--fence-on-controller-unpublish", "--fence-ack-timeout", "2s").start();
        n2 = HostpathPluginProcess.builder(dir.resolve("n2.sock"), "n2", dir.resolve("n2-state"))
                .args("--known-node-ids", "n1,n3", "--shared-dir", shared.toString(),
                        "--fence-on-controller-unpublish", "--fence-ack-timeout", "2s").start();
        channel1 = channel(n1);
        channel2 = channel(n2);
    }

    @AfterAll
    static void stop() throws IOException {
        channel1.shutdownNow();
        channel2.shutdownNow();
        n2.stop();
        PluginFixture.tearDown(n1, null, dir);
    }

    /**
     * ControllerUnpublishVolume(vol, n1) answered by n2's plugin returns OK only once n1's plugin made n1's
     * staging and target of vol read-only: a write through n1's target then fails with EROFS ("Read-only file
     * system") and n1's NodeStage and NodePublish of vol fail FAILED_PRECONDITION "fenced", while n2 gets the
     * volume (ControllerPublish, stage, publish) and writes to it; a repeated ControllerUnpublishVolume(vol, n1),
     * answered after n1's plugin enforced its fences again, leaves n2's mounts of vol read-write.
     */
    @Test
    void controllerUnpublishMakesTheNodesMountsReadOnlyAndRefusesItsStageAndPublish() throws IOException {
        String id = createVolume("fence-basic");
        Path staging1 = dir.resolve("n1-stage-basic");
        Path target1 = dir.resolve("n1-target-basic");
        publishOn(channel1, "n1", id, staging1, target1);
        Files.writeString(target1.resolve("before.txt"), "written by n1 before the fence");

        controller(channel2).controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId(id).setNodeId("n1").build());

        assertTrue(mount(staging1).readOnly(), "n1's staging is read-only: " + mount(staging1));
        assertTrue(mount(target1).readOnly(), "n1's target is read-only: " + mount(target1));
        FileSystemException refused = assertThrows(FileSystemException.class,
                () -> Files.writeString(target1.resolve("after.txt"), "written by n1 after the fence"));
        assertTrue(String.valueOf(refused.getReason()).contains("Read-only file system"), refused.toString());
        assertThrows(FileSystemException.class, () -> Files.writeString(target1.resolve("before.txt"), "overwrite",
                StandardOpenOption.TRUNCATE_EXISTING));
        assertEquals("written by n1 before the fence", Files.readString(target1.resolve("before.txt")));

        StatusRuntimeException publish = assertThrows(StatusRuntimeException.class, () -> node(channel1)
                .nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                        .setStagingTargetPath(staging1.toString()).setTargetPath(dir.resolve("n1-target-basic-2").toString())
                        .setVolumeCapability(WRITER).build()));
        assertEquals(Status.Code.FAILED_PRECONDITION, publish.getStatus().getCode());
        assertEquals("volume " + id + " is fenced from node n1 (ControllerUnpublishVolume; ControllerPublishVolume"
                + " lifts it)", publish.getStatus().getDescription());
        StatusRuntimeException stage = assertThrows(StatusRuntimeException.class, () -> node(channel1)
                .nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                        .setStagingTargetPath(staging1.toString()).setVolumeCapability(WRITER).build()));
        assertEquals(Status.Code.FAILED_PRECONDITION, stage.getStatus().getCode());
        assertTrue(stage.getStatus().getDescription().contains("is fenced from node n1"), stage.toString());
        assertFalse(Files.exists(dir.resolve("n1-target-basic-2")) && mountAt(dir.resolve("n1-target-basic-2")),
                "no new target on n1");

        Path staging2 = dir.resolve("n2-stage-basic");
        Path target2 = dir.resolve("n2-target-basic");
        publishOn(channel2, "n2", id, staging2, target2);
        Files.writeString(target2.resolve("from-n2.txt"), "the new writer");
        assertEquals("the new writer", Files.readString(n1.stateDir().resolveSibling("shared").resolve("volumes")
                .resolve(id).resolve("from-n2.txt")));

        // Both nodes' plugins share this machine's mount table: n1's plugin, answering a repeated
        // ControllerUnpublish(vol, n1) after a pass over its fences, leaves n2's mounts of vol read-write.
        controller(channel2).controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId(id).setNodeId("n1").build());
        assertFalse(mount(staging2).readOnly(), "n2's staging untouched: " + mount(staging2));
        assertFalse(mount(target2).readOnly(), "n2's target untouched: " + mount(target2));
        Files.writeString(target2.resolve("from-n2.txt"), "n2 still writes");
    }

    /**
     * ControllerPublishVolume(vol, n1) lifts the fence: after n1's fenced mounts are unpublished and unstaged,
     * n1 stages and publishes vol again and writes through the new target.
     */
    @Test
    void controllerPublishLiftsTheFence() throws IOException {
        String id = createVolume("fence-lift");
        Path staging1 = dir.resolve("n1-stage-lift");
        Path target1 = dir.resolve("n1-target-lift");
        publishOn(channel1, "n1", id, staging1, target1);
        controller(channel2).controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId(id).setNodeId("n1").build());
        assertTrue(mount(target1).readOnly());
        node(channel1).nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setTargetPath(target1.toString()).build());
        node(channel1).nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging1.toString()).build());
        assertFalse(mountAt(staging1), "unstaging works while fenced");

        publishOn(channel1, "n1", id, staging1, target1);

        assertFalse(mount(target1).readOnly(), "read-write again: " + mount(target1));
        Files.writeString(target1.resolve("after-lift.txt"), "n1 writes again");
        assertEquals("n1 writes again", Files.readString(target1.resolve("after-lift.txt")));
    }

    /**
     * What the fence cannot stop: while a file is open for writing through n1's target, the kernel refuses to
     * make that mount read-only (busy), so ControllerUnpublishVolume answers FAILED_PRECONDITION "not a complete
     * fence" and the open file (and any new file through that target) is still written to the volume; new
     * stages and publishes on n1 are refused all the same. Once the file is closed, ControllerUnpublishVolume
     * again returns OK and the target is read-only.
     */
    @Test
    void aFileOpenForWritingKeepsItsMountWritableAndTheFenceIsNotConfirmed() throws IOException {
        String id = createVolume("fence-open-fd");
        Path staging1 = dir.resolve("n1-stage-fd");
        Path target1 = dir.resolve("n1-target-fd");
        publishOn(channel1, "n1", id, staging1, target1);
        Path volumeFile = n1.stateDir().resolveSibling("shared").resolve("volumes").resolve(id).resolve("open.log");
        ControllerUnpublishVolumeRequest unpublish = ControllerUnpublishVolumeRequest.newBuilder()
                .setVolumeId(id).setNodeId("n1").build();

        try (FileChannel open = FileChannel.open(target1.resolve("open.log"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            StatusRuntimeException incomplete = assertThrows(StatusRuntimeException.class,
                    () -> controller(channel2).controllerUnpublishVolume(unpublish));
            assertEquals(Status.Code.FAILED_PRECONDITION, incomplete.getStatus().getCode());
            String message = incomplete.getStatus().getDescription();
            assertTrue(message.contains(target1 + " is still writable") && message.contains("a file is open for writing")
                    && message.contains("this is not a complete fence"), message);

            open.write(ByteBuffer.wrap("still written after the fence\n".getBytes(StandardCharsets.UTF_8)));
            open.force(true);
            assertEquals("still written after the fence\n", Files.readString(volumeFile));
            assertFalse(mount(target1).readOnly(), "the busy target stays writable");
            Files.writeString(target1.resolve("new-file.txt"), "also still possible");
            assertTrue(mount(staging1).readOnly(), "the staging, with nothing open, is read-only");
            StatusRuntimeException publish = assertThrows(StatusRuntimeException.class, () -> node(channel1)
                    .nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                            .setStagingTargetPath(staging1.toString())
                            .setTargetPath(dir.resolve("n1-target-fd-2").toString()).setVolumeCapability(WRITER).build()));
            assertEquals(Status.Code.FAILED_PRECONDITION, publish.getStatus().getCode());
        }

        controller(channel2).controllerUnpublishVolume(unpublish);
        assertTrue(mount(target1).readOnly(), "read-only once the file is closed: " + mount(target1));
        assertThrows(FileSystemException.class, () -> Files.writeString(target1.resolve("open.log"), "x"));
    }

    /**
     * A node whose plugin does not answer (n3: known, published, no plugin running; as a node that is down
     * or frozen) cannot confirm the fence: ControllerUnpublishVolume(vol, n3) fails UNAVAILABLE after the
     * {@code --fence-ack-timeout} instead of answering OK, so it never counts as a fence.
     */
    @Test
    void aNodeWhosePluginDoesNotAnswerIsNotReportedFenced() {
        String id = createVolume("fence-silent-node");
        controller(channel2).controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
                .setNodeId("n3").setVolumeCapability(WRITER).build());

        StatusRuntimeException unconfirmed = assertThrows(StatusRuntimeException.class, () -> controller(channel2)
                .controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                        .setNodeId("n3").build()));

        assertEquals(Status.Code.UNAVAILABLE, unconfirmed.getStatus().getCode());
        assertTrue(unconfirmed.getStatus().getDescription().contains("[n3] is recorded, but their plugin did not"
                + " confirm it in time"), unconfirmed.getStatus().getDescription());
    }

    /**
     * A fence set while the node's plugin is down (n4, killed with SIGKILL; its mounts stay) is not confirmed
     * (UNAVAILABLE) and leaves n4's target writable; the restarted plugin makes it read-only before it serves
     * (checked as soon as the restart returned, before any call), and a retried ControllerUnpublishVolume is OK.
     */
    @Test
    void aPluginRestartedWhileFencedEnforcesTheFenceBeforeItServes() throws IOException {
        Path shared = dir.resolve("shared");
        HostpathPluginProcess.Builder n4Plugin = HostpathPluginProcess.builder(dir.resolve("n4.sock"), "n4",
                dir.resolve("n4-state")).args("--known-node-ids", "n1,n2", "--shared-dir", shared.toString(),
                "--fence-on-controller-unpublish", "--fence-ack-timeout", "2s");
        HostpathPluginProcess n4 = n4Plugin.start();
        ManagedChannel channel4 = channel(n4);
        try {
            String id = createVolume("fence-restart");
            Path staging4 = dir.resolve("n4-stage-restart");
            Path target4 = dir.resolve("n4-target-restart");
            publishOn(channel4, "n4", id, staging4, target4);
            n4.kill();
            ControllerUnpublishVolumeRequest unpublish = ControllerUnpublishVolumeRequest.newBuilder()
                    .setVolumeId(id).setNodeId("n4").build();

            StatusRuntimeException unconfirmed = assertThrows(StatusRuntimeException.class,
                    () -> controller(channel2).controllerUnpublishVolume(unpublish));
            assertEquals(Status.Code.UNAVAILABLE, unconfirmed.getStatus().getCode());
            assertFalse(mount(target4).readOnly(), "nobody enforced it while n4's plugin was down");

            n4 = n4Plugin.start();
            assertTrue(mount(staging4).readOnly(), "read-only once restarted: " + mount(staging4));
            assertTrue(mount(target4).readOnly(), "read-only once restarted: " + mount(target4));
            channel4.shutdownNow();
            channel4 = channel(n4);
            controller(channel2).controllerUnpublishVolume(unpublish);
            assertThrows(FileSystemException.class, () -> Files.writeString(target4.resolve("late.txt"), "x"));
        } finally {
            channel4.shutdownNow();
            n4.stop();
        }
    }

    // ---------------------------------------------------------------- helpers

    private static String createVolume(String name) {
        return controller(channel1).createVolume(CreateVolumeRequest.newBuilder().setName(name)
                .addVolumeCapabilities(WRITER).build()).getVolume().getVolumeId();
    }

    /** ControllerPublish to the node (through that node's plugin), NodeStage and NodePublish read-write there. */
    private static void publishOn(ManagedChannel channel, String nodeId, String id, Path staging, Path target) {
        controller(channel).controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
                .setNodeId(nodeId).setVolumeCapability(WRITER).build());
        node(channel).nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(WRITER).build());
        node(channel).nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(WRITER).build());
        assertFalse(mount(target).readOnly(), "published read-write on " + nodeId);
    }

    private static MountInfo mount(Path path) {
        return PluginFixture.mountAt(path).orElseThrow(() -> new AssertionError("nothing mounted at " + path));
    }

    private static boolean mountAt(Path path) {
        return PluginFixture.mountAt(path).isPresent();
    }

    private static ManagedChannel channel(HostpathPluginProcess plugin) {
        return Grpc.newChannelBuilder(plugin.endpoint(), InsecureChannelCredentials.create())
                .overrideAuthority("localhost").build();
    }

    private static ControllerGrpc.ControllerBlockingStub controller(ManagedChannel channel) {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(1, TimeUnit.MINUTES);
    }

    private static NodeGrpc.NodeBlockingStub node(ManagedChannel channel) {
        return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(1, TimeUnit.MINUTES);
    }
}
