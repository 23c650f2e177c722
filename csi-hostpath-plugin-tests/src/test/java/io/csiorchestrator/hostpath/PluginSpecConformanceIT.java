package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.v1.CapacityRange;
import io.csiorchestrator.csi.v1.ControllerGrpc;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.DeleteVolumeRequest;
import io.csiorchestrator.csi.v1.ListVolumesRequest;
import io.csiorchestrator.csi.v1.ListVolumesResponse;
import io.csiorchestrator.csi.v1.ListVolumesResponse.Entry;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest;
import io.csiorchestrator.csi.v1.NodeGrpc;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesRequest;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesResponse;
import io.csiorchestrator.csi.v1.VolumeCapability;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static io.csiorchestrator.hostpath.PluginFixture.MULTI_WRITER;
import static io.csiorchestrator.hostpath.PluginFixture.WRITER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The plugin's answers where the CSI spec prescribes a code, through plain grpc-java stubs (no
 * client retries in the way): idempotency, NOT_FOUND, INVALID_ARGUMENT, ALREADY_EXISTS,
 * FAILED_PRECONDITION, RESOURCE_EXHAUSTED and ABORTED.
 */
class PluginSpecConformanceIT {

    @TempDir
    static Path dir;

    /** Each call's own deadline, counted from when its stub is made ({@link #controller()}, {@link #node()}). */
    private static final long CALL_DEADLINE_MINUTES = 1;

    private static HostpathPluginProcess plugin;
    private static ManagedChannel channel;

    @BeforeAll
    static void start() throws IOException {
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state"))
                .maxVolumesPerNode(2).args("--known-node-ids", "n2").start();
        channel = Grpc.newChannelBuilder(plugin.endpoint(), InsecureChannelCredentials.create())
                .overrideAuthority("localhost").build();
    }

    @AfterAll
    static void stop() throws IOException {
        channel.shutdownNow();
        PluginFixture.tearDown(plugin, null, dir);
    }

    @Test
    void createVolumeIsIdempotentByNameAndRefusesAnIncompatibleRepeat() {
        CreateVolumeRequest request = CreateVolumeRequest.newBuilder().setName("team/sized")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1 << 20))
                .addVolumeCapabilities(WRITER).build();
        String id = controller().createVolume(request).getVolume().getVolumeId();
        assertEquals(id, controller().createVolume(request).getVolume().getVolumeId());
        assertEquals(1 << 20, controller().createVolume(request).getVolume().getCapacityBytes());

        assertCode(Status.Code.ALREADY_EXISTS, () -> controller().createVolume(request.toBuilder()
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1 << 30)).build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller().createVolume(request.toBuilder().clearName().build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller().createVolume(request.toBuilder()
                .setName("no-capabilities").clearVolumeCapabilities().build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller().createVolume(request.toBuilder().setName("block")
                .clearVolumeCapabilities().addVolumeCapabilities(VolumeCapability.newBuilder()
                        .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                        .setAccessMode(WRITER.getAccessMode())).build()));
        assertCode(Status.Code.OUT_OF_RANGE, () -> controller().createVolume(request.toBuilder().setName("huge")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1L << 50)).build()));
    }

    @Test
    void unknownVolumesAndNodesAreNotFoundAndDeletingOneIsOk() {
        controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId("hp-unknown").build());
        assertCode(Status.Code.NOT_FOUND, () -> controller().controllerPublishVolume(ControllerPublishVolumeRequest
                .newBuilder().setVolumeId("hp-unknown").setNodeId("n1").setVolumeCapability(WRITER).build()));
        String id = create("nodes");
        assertCode(Status.Code.NOT_FOUND, () -> controller().controllerPublishVolume(ControllerPublishVolumeRequest
                .newBuilder().setVolumeId(id).setNodeId("n9").setVolumeCapability(WRITER).build()));
        assertCode(Status.Code.NOT_FOUND, () -> controller().validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId("hp-unknown")
                        .addVolumeCapabilities(WRITER).build()));
        assertCode(Status.Code.NOT_FOUND, () -> node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
                .setVolumeId("hp-unknown").setTargetPath(dir.resolve("t").toString()).build()));
        assertCode(Status.Code.NOT_FOUND, () -> node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                .setVolumeId(id).setVolumePath(dir.resolve("nowhere").toString()).build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> controller().controllerPublishVolume(
                ControllerPublishVolumeRequest.newBuilder().setVolumeId("../etc").setNodeId("n1")
                        .setVolumeCapability(WRITER).build()));
    }

    /**
     * The spec's NOT_FOUND for "volume not accessible at the given path": NodeGetVolumeStats of an existing
     * volume at a path where it is not (an existing directory, an absolute path that does not exist, a relative
     * path, one with {@code ..}) is NOT_FOUND, never INVALID_ARGUMENT; only a missing path is INVALID_ARGUMENT.
     */
    @Test
    void volumeStatsAtAPathWhereTheVolumeIsNotAreNotFound() throws IOException {
        String id = create("stats-elsewhere"); // not published here: n1 has room for two volumes, the other tests take them
        Path elsewhere = Files.createDirectories(dir.resolve("not-the-volume"));
        for (String path : new String[] {elsewhere.toString(), dir.resolve("does/not/exist").toString(),
                "relative/not-there", "../" + elsewhere.getFileName(), elsewhere + "/../not-the-volume"}) {
            assertCode(Status.Code.NOT_FOUND, () -> node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
                    .setVolumeId(id).setVolumePath(path).build()));
        }
        assertCode(Status.Code.INVALID_ARGUMENT, () -> node().nodeGetVolumeStats(NodeGetVolumeStatsRequest
                .newBuilder().setVolumeId(id).build()));
    }

    /**
     * The spec: a volume that no longer exists can be regarded as unpublished, so ControllerUnpublishVolume of
     * a deleted volume (and of one that never existed) is OK, and a retried unpublish too.
     */
    @Test
    void controllerUnpublishOfAVolumeThatNoLongerExistsIsOk() {
        String id = create("deleted-before-unpublish");
        controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
        assertTrue(controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
                .map(Entry::getVolume).noneMatch(v -> v.getVolumeId().equals(id)), "deleted");

        ControllerUnpublishVolumeRequest unpublish = ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setNodeId("n1").build();
        controller().controllerUnpublishVolume(unpublish);
        controller().controllerUnpublishVolume(unpublish);
        controller().controllerUnpublishVolume(unpublish.toBuilder().setVolumeId("hp-never-existed").build());
    }

    @Test
    void singleNodeVolumesPublishToOneNodeAndMultiNodeOnesToMany() {
        // Node n2 takes the single-node volume and fills up (max 2); n1 keeps room for the node test.
        String single = create("single");
        publish(single, "n2", WRITER, false);
        publish(single, "n2", WRITER, false); // same again: OK
        assertCode(Status.Code.ALREADY_EXISTS, () -> publish(single, "n2", WRITER, true));
        assertCode(Status.Code.FAILED_PRECONDITION, () -> publish(single, "n1", WRITER, false));
        assertCode(Status.Code.FAILED_PRECONDITION, () -> controller().deleteVolume(
                DeleteVolumeRequest.newBuilder().setVolumeId(single).build()));

        String shared = create("shared");
        publish(shared, "n2", MULTI_WRITER, false);
        publish(shared, "n1", MULTI_WRITER, false);
        assertEquals(2, controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
                .filter(entry -> entry.getVolume().getVolumeId().equals(shared)).findFirst().orElseThrow()
                .getStatus().getPublishedNodeIdsCount());

        String third = create("third");
        assertCode(Status.Code.RESOURCE_EXHAUSTED, () -> publish(third, "n2", WRITER, false));
    }

    @Test
    void validateConfirmsMountCapabilitiesAndNotBlock() {
        String id = create("validate");
        ValidateVolumeCapabilitiesResponse ok = controller().validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(id).addVolumeCapabilities(WRITER)
                        .putVolumeContext("k", "v").build());
        assertEquals(WRITER, ok.getConfirmed().getVolumeCapabilities(0));
        assertEquals("v", ok.getConfirmed().getVolumeContextOrThrow("k"));
        ValidateVolumeCapabilitiesResponse block = controller().validateVolumeCapabilities(
                ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(id).addVolumeCapabilities(
                        VolumeCapability.newBuilder().setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
                                .setAccessMode(WRITER.getAccessMode())).build());
        assertFalse(block.hasConfirmed());
        assertTrue(block.getMessage().contains("block"), block.getMessage());
    }

    @Test
    void listVolumesPagesAndRefusesABadToken() {
        create("page-a");
        create("page-b");
        ListVolumesResponse first = controller().listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(1).build());
        assertEquals(1, first.getEntriesCount());
        assertFalse(first.getNextToken().isEmpty());
        ListVolumesResponse second = controller().listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(1)
                .setStartingToken(first.getNextToken()).build());
        assertFalse(first.getEntries(0).equals(second.getEntries(0)));
        assertCode(Status.Code.ABORTED, () -> controller().listVolumes(ListVolumesRequest.newBuilder()
                .setStartingToken("not-a-token").build()));
    }

    @Test
    void nodeCallsFollowTheSpecsIdempotencyAndPreconditions() throws IOException {
        String id = create("node-rules");
        Path staging = Files.createDirectories(dir.resolve("staging/node-rules"));
        NodeStageVolumeRequest stage = NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(MULTI_WRITER).build();
        assertCode(Status.Code.FAILED_PRECONDITION, () -> node().nodeStageVolume(stage)); // not controller-published
        publish(id, "n1", MULTI_WRITER, false);
        assertCode(Status.Code.INVALID_ARGUMENT, () -> node().nodeStageVolume(stage.toBuilder()
                .clearVolumeCapability().build()));
        assertCode(Status.Code.INVALID_ARGUMENT, () -> node().nodeStageVolume(stage.toBuilder()
                .setStagingTargetPath("relative/path").build()));
        node().nodeStageVolume(stage);
        node().nodeStageVolume(stage);
        assertCode(Status.Code.ALREADY_EXISTS, () -> node().nodeStageVolume(stage.toBuilder()
                .setVolumeCapability(WRITER).build()));

        Path target = dir.resolve("targets/node-rules");
        Files.createDirectories(target.getParent());
        NodePublishVolumeRequest publish = NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(MULTI_WRITER).build();
        assertCode(Status.Code.INVALID_ARGUMENT, () -> node().nodePublishVolume(publish.toBuilder()
                .clearStagingTargetPath().build()));
        assertCode(Status.Code.FAILED_PRECONDITION, () -> node().nodePublishVolume(publish.toBuilder()
                .setStagingTargetPath(dir.resolve("staging/elsewhere").toString()).build()));
        node().nodePublishVolume(publish);
        assertCode(Status.Code.FAILED_PRECONDITION, () -> node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
                .setVolumeId(id).setStagingTargetPath(staging.toString()).build())); // still published
        assertTrue(node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                .setVolumePath(target.toString()).build()).getUsageCount() > 0);

        NodeUnpublishVolumeRequest unpublish = NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setTargetPath(target.toString()).build();
        node().nodeUnpublishVolume(unpublish);
        node().nodeUnpublishVolume(unpublish); // absent: OK
        node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).build());
        assertFalse(PluginFixture.mountAt(staging).isPresent());
        assertFalse(PluginFixture.mountAt(target).isPresent());
    }

    /**
     * A stub whose deadline starts now: {@code withDeadlineAfter} fixes an absolute deadline, so a stub
     * kept for the whole class would fail every call made more than a minute after the class started.
     */
    private static ControllerGrpc.ControllerBlockingStub controller() {
        return ControllerGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_DEADLINE_MINUTES, TimeUnit.MINUTES);
    }

    /** Like {@link #controller()}: a fresh deadline for each call. */
    private static NodeGrpc.NodeBlockingStub node() {
        return NodeGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_DEADLINE_MINUTES, TimeUnit.MINUTES);
    }

    private static String create(String name) {
        return controller().createVolume(CreateVolumeRequest.newBuilder().setName(name)
                .addVolumeCapabilities(MULTI_WRITER).build()).getVolume().getVolumeId();
    }

    private static void publish(String volumeId, String nodeId, VolumeCapability capability, boolean readonly) {
        controller().controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(volumeId)
                .setNodeId(nodeId).setVolumeCapability(capability).setReadonly(readonly).build());
    }

    private static void assertCode(Status.Code expected, Executable call) {
        StatusRuntimeException failure = assertThrows(StatusRuntimeException.class, call);
        assertEquals(expected, failure.getStatus().getCode(), failure.getStatus().toString());
    }
}
