package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CsiCallException;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.CsiRetryPolicy;
import io.csiorchestrator.csi.v1.CapacityRange;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeResponse;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateSnapshotRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.DeleteSnapshotRequest;
import io.csiorchestrator.csi.v1.ListSnapshotsRequest;
import io.csiorchestrator.csi.v1.ListSnapshotsResponse;
import io.csiorchestrator.csi.v1.ListVolumesRequest;
import io.csiorchestrator.csi.v1.ListVolumesResponse;
import io.csiorchestrator.csi.v1.NodeExpandVolumeRequest;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.csiorchestrator.csi.v1.PluginCapability;
import io.csiorchestrator.csi.v1.Snapshot;
import io.csiorchestrator.csi.v1.Volume;
import io.csiorchestrator.csi.v1.VolumeContentSource;
import io.csiorchestrator.csi.v1.VolumeUsage;
import io.grpc.Status;
import io.smallrye.mutiny.Uni;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;

import static io.csiorchestrator.hostpath.PluginFixture.WAIT;
import static io.csiorchestrator.hostpath.PluginFixture.WRITER;
import static io.csiorchestrator.hostpath.PluginFixture.mountAt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Snapshots, restores, clones, paging and expansion of the hostpath plugin (issue 14 item 6): the CSI
 * client against the plugin as a separate process on its unix socket, with real directories and real
 * bind mounts; CSI's idempotency and error codes, and the plugin's fault injection for the new calls.
 */
class VolumeLifecycleIT {

    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    private HostpathPluginProcess plugin;
    private CsiPluginClient client;

    @AfterEach
    void tearDown() throws IOException {
        PluginFixture.tearDown(plugin, client, dir);
    }

    private void start() throws IOException {
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state")).start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());
    }

    private Volume create(CreateVolumeRequest.Builder request) {
        return client.createVolume(request.addVolumeCapabilities(WRITER).build()).await().atMost(WAIT).getVolume();
    }

    private Snapshot snapshot(String name, String source) {
        return client.createSnapshot(CreateSnapshotRequest.newBuilder().setName(name).setSourceVolumeId(source).build())
                .await().atMost(WAIT).getSnapshot();
    }

    private static CsiCallException failure(Uni<?> call) {
        return assertThrows(CsiCallException.class, () -> call.await().atMost(WAIT));
    }

    private static VolumeContentSource fromSnapshot(String id) {
        return VolumeContentSource.newBuilder().setSnapshot(VolumeContentSource.SnapshotSource.newBuilder()
                .setSnapshotId(id)).build();
    }

    private static VolumeContentSource fromVolume(String id) {
        return VolumeContentSource.newBuilder().setVolume(VolumeContentSource.VolumeSource.newBuilder()
                .setVolumeId(id)).build();
    }

    /**
     * The capability flags say what the plugin does; a snapshot is a point-in-time copy (ready to use,
     * sized as its source) that a restore reads back after the source changed; a clone copies the volume
     * as it is now; a link in a volume is copied as a link, never followed. CreateSnapshot and CreateVolume
     * are idempotent by name, and the same name with another source is ALREADY_EXISTS; unknown sources are
     * NOT_FOUND, a missing name INVALID_ARGUMENT. ListSnapshots and ListVolumes page with max_entries and
     * next_token, filter by id and source, and answer ABORTED to a bad token. DeleteSnapshot removes the
     * copy, is OK when repeated, and leaves a volume restored from it intact.
     */
    @Test
    void snapshotsRestoresAndClonesCopyTheContentWithCsiIdempotencyPagingAndErrors() throws Exception {
        start();
        assertTrue(client.controllerGetCapabilities().await().atMost(WAIT).getCapabilitiesList().stream()
                .map(c -> c.getRpc().getType()).toList().containsAll(Set.of(
                        ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
                        ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS,
                        ControllerServiceCapability.RPC.Type.CLONE_VOLUME,
                        ControllerServiceCapability.RPC.Type.EXPAND_VOLUME,
                        ControllerServiceCapability.RPC.Type.LIST_VOLUMES)));
        assertTrue(client.nodeGetCapabilities().await().atMost(WAIT).getCapabilitiesList().stream()
                .anyMatch(c -> c.getRpc().getType() == NodeServiceCapability.RPC.Type.EXPAND_VOLUME));
        assertTrue(client.getPluginCapabilities().await().atMost(WAIT).getCapabilitiesList().stream()
                .anyMatch(c -> c.getVolumeExpansion().getType() == PluginCapability.VolumeExpansion.Type.ONLINE));

        Volume source = create(CreateVolumeRequest.newBuilder().setName("source")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(2 * MIB)));
        Path sourceDir = plugin.volumeDirectory(source.getVolumeId());
        Files.writeString(sourceDir.resolve("data.txt"), "original");
        Files.createDirectories(sourceDir.resolve("sub"));
        Files.writeString(sourceDir.resolve("sub/nested.txt"), "nested");
        Path outside = Files.createDirectory(dir.resolve("outside"));
        Files.writeString(outside.resolve("private.txt"), "not part of any volume");
        Files.createSymbolicLink(sourceDir.resolve("escape"), outside);

        Snapshot snap = snapshot("snap-1", source.getVolumeId());
        assertTrue(snap.getReadyToUse());
        assertEquals(source.getVolumeId(), snap.getSourceVolumeId());
        assertEquals(2 * MIB, snap.getSizeBytes());
        assertTrue(snap.getCreationTime().getSeconds() > 0);
        assertEquals(snap, snapshot("snap-1", source.getVolumeId()), "CreateSnapshot is idempotent by name");
        Volume other = create(CreateVolumeRequest.newBuilder().setName("other"));
        CsiCallException sameName = failure(client.createSnapshot(CreateSnapshotRequest.newBuilder().setName("snap-1")
                .setSourceVolumeId(other.getVolumeId()).build()));
        assertEquals(Status.Code.ALREADY_EXISTS, sameName.code());
        assertEquals(1, sameName.attempts());
        assertEquals(Status.Code.NOT_FOUND, failure(client.createSnapshot(CreateSnapshotRequest.newBuilder()
                .setName("snap-x").setSourceVolumeId("hp-unknown").build())).code());
        assertEquals(Status.Code.INVALID_ARGUMENT, failure(client.createSnapshot(CreateSnapshotRequest.newBuilder()
                .setSourceVolumeId(source.getVolumeId()).build())).code());

        // the source changes after the snapshot: a restore has the old content, a clone the new
        Files.writeString(sourceDir.resolve("data.txt"), "changed");
        CreateVolumeRequest.Builder restore = CreateVolumeRequest.newBuilder().setName("restored")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB))
                .setVolumeContentSource(fromSnapshot(snap.getSnapshotId()));
        Volume restored = create(restore.clone());
        assertEquals(2 * MIB, restored.getCapacityBytes(), "a restore holds at least the snapshot's size");
        assertEquals(fromSnapshot(snap.getSnapshotId()), restored.getContentSource());
        Path restoredDir = plugin.volumeDirectory(restored.getVolumeId());
        assertEquals("original", Files.readString(restoredDir.resolve("data.txt")));
        assertEquals("nested", Files.readString(restoredDir.resolve("sub/nested.txt")));
        assertTrue(Files.isSymbolicLink(restoredDir.resolve("escape")), "a link is copied as a link");
        assertTrue(Files.isSymbolicLink(dir.resolve("state/snapshots/" + snap.getSnapshotId() + "/escape")),
                "the snapshot holds the link, not the content it points to");
        assertEquals(restored, create(restore.clone()), "CreateVolume from a snapshot is idempotent by name");
        assertEquals(Status.Code.ALREADY_EXISTS, failure(client.createVolume(restore.clone()
                .setVolumeContentSource(fromVolume(source.getVolumeId())).addVolumeCapabilities(WRITER).build())).code());
        assertEquals(Status.Code.NOT_FOUND, failure(client.createVolume(CreateVolumeRequest.newBuilder()
                .setName("from-nothing").setVolumeContentSource(fromSnapshot("hps-unknown"))
                .addVolumeCapabilities(WRITER).build())).code());
        assertEquals(Status.Code.NOT_FOUND, failure(client.createVolume(CreateVolumeRequest.newBuilder()
                .setName("clone-of-nothing").setVolumeContentSource(fromVolume("hp-unknown"))
                .addVolumeCapabilities(WRITER).build())).code());

        Volume clone = create(CreateVolumeRequest.newBuilder().setName("clone")
                .setVolumeContentSource(fromVolume(source.getVolumeId())));
        assertEquals("changed", Files.readString(plugin.volumeDirectory(clone.getVolumeId()).resolve("data.txt")));
        assertEquals(fromVolume(source.getVolumeId()), clone.getContentSource());

        // paging, filters, bad token
        Snapshot snap2 = snapshot("snap-2", source.getVolumeId());
        Snapshot snap3 = snapshot("snap-3", other.getVolumeId());
        ListSnapshotsResponse page1 = client.listSnapshots(ListSnapshotsRequest.newBuilder().setMaxEntries(2).build())
                .await().atMost(WAIT);
        assertEquals(2, page1.getEntriesCount());
        assertFalse(page1.getNextToken().isEmpty());
        ListSnapshotsResponse page2 = client.listSnapshots(ListSnapshotsRequest.newBuilder().setMaxEntries(2)
                .setStartingToken(page1.getNextToken()).build()).await().atMost(WAIT);
        assertEquals(1, page2.getEntriesCount());
        assertTrue(page2.getNextToken().isEmpty());
        assertEquals(Set.of(snap.getSnapshotId(), snap2.getSnapshotId(), snap3.getSnapshotId()), Set.of(
                page1.getEntries(0).getSnapshot().getSnapshotId(), page1.getEntries(1).getSnapshot().getSnapshotId(),
                page2.getEntries(0).getSnapshot().getSnapshotId()));
        assertEquals(2, client.listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(source.getVolumeId())
                .build()).await().atMost(WAIT).getEntriesCount());
        assertEquals(snap3, client.listSnapshots(ListSnapshotsRequest.newBuilder().setSnapshotId(snap3.getSnapshotId())
                .build()).await().atMost(WAIT).getEntries(0).getSnapshot());
        assertEquals(0, client.listSnapshots(ListSnapshotsRequest.newBuilder().setSnapshotId("hps-unknown").build())
                .await().atMost(WAIT).getEntriesCount());
        assertEquals(Status.Code.ABORTED, failure(client.listSnapshots(ListSnapshotsRequest.newBuilder()
                .setStartingToken("not-a-token").build())).code());
        ListVolumesResponse volumes1 = client.listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(3).build())
                .await().atMost(WAIT);
        assertEquals(3, volumes1.getEntriesCount());
        assertEquals(1, client.listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(3)
                .setStartingToken(volumes1.getNextToken()).build()).await().atMost(WAIT).getEntriesCount(),
                "source, other, restored, clone: 4 volumes");
        assertEquals(Status.Code.ABORTED, failure(client.listVolumes(ListVolumesRequest.newBuilder()
                .setStartingToken("99").build())).code());

        // delete: the copy goes, a repeat is OK, the volume restored from it stays
        client.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap.getSnapshotId()).build())
                .await().atMost(WAIT);
        client.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap.getSnapshotId()).build())
                .await().atMost(WAIT);
        assertFalse(Files.exists(dir.resolve("state/snapshots/" + snap.getSnapshotId())));
        assertEquals(0, client.listSnapshots(ListSnapshotsRequest.newBuilder().setSnapshotId(snap.getSnapshotId())
                .build()).await().atMost(WAIT).getEntriesCount());
        assertEquals("original", Files.readString(restoredDir.resolve("data.txt")));
        assertEquals("not part of any volume", Files.readString(outside.resolve("private.txt")));
    }

    /**
     * A volume published with real bind mounts is expanded online: NodeExpandVolume before the controller
     * expanded it is FAILED_PRECONDITION and sent once, even by a client whose policy retries that code;
     * ControllerExpandVolume records the capacity (ListVolumes reports it), asks for node expansion, never
     * shrinks, and is idempotent; NodeGetVolumeStats shows the old size until NodeExpandVolume ran, then the
     * new one, with the bytes the directory holds as used; past the capacity the condition is abnormal. The
     * target stays mounted and writable throughout. Wrong ids, paths and limits get their CSI codes.
     */
    @Test
    void aPublishedVolumeIsExpandedOnlineAndNodesSeeTheNewSizeAfterNodeExpandVolume() throws Exception {
        start();
        Volume volume = create(CreateVolumeRequest.newBuilder().setName("grow")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB)));
        String id = volume.getVolumeId();
        client.controllerPublish(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("n1")
                .setVolumeCapability(WRITER).build()).await().atMost(WAIT);
        Path staging = Files.createDirectories(dir.resolve("staging/" + id));
        client.nodeStage(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                .setVolumeCapability(WRITER).build()).await().atMost(WAIT);
        Path target = dir.resolve("targets/a1/grow");
        Files.createDirectories(target.getParent());
        client.nodePublish(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                .setTargetPath(target.toString()).setVolumeCapability(WRITER).build()).await().atMost(WAIT);
        Files.write(target.resolve("blob"), new byte[1000]);
        NodeGetVolumeStatsRequest stats = NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                .setVolumePath(target.toString()).build();
        VolumeUsage usage = client.nodeGetVolumeStats(stats).await().atMost(WAIT).getUsage(0);
        assertEquals(MIB, usage.getTotal());
        assertEquals(1000, usage.getUsed());
        assertEquals(MIB - 1000, usage.getAvailable());

        NodeExpandVolumeRequest nodeExpand = NodeExpandVolumeRequest.newBuilder().setVolumeId(id)
                .setVolumePath(target.toString()).setStagingTargetPath(staging.toString())
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(4 * MIB)).build();
        CsiPluginClient retriesPreconditions = client.withOptions(CsiClientOptions.defaults().withRetryPolicy(
                CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(1), Duration.ofMillis(5))
                        .withRetryableCodes(Set.of(Status.Code.FAILED_PRECONDITION))));
        long nodeExpandCalls = plugin.callCount("NodeExpandVolume");
        CsiCallException early = failure(retriesPreconditions.nodeExpandVolume(nodeExpand));
        assertEquals(Status.Code.FAILED_PRECONDITION, early.code());
        assertEquals(1, early.attempts());
        assertEquals(nodeExpandCalls + 1, plugin.callCount("NodeExpandVolume"), "sent once, never retried");
        assertTrue(early.pluginMessage().contains("ControllerExpandVolume has not expanded it"), early.pluginMessage());

        ControllerExpandVolumeRequest expand = ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(4 * MIB)).build();
        ControllerExpandVolumeResponse expanded = client.controllerExpandVolume(expand).await().atMost(WAIT);
        assertEquals(4 * MIB, expanded.getCapacityBytes());
        assertTrue(expanded.getNodeExpansionRequired());
        assertEquals(expanded, client.controllerExpandVolume(expand).await().atMost(WAIT), "idempotent");
        assertEquals(4 * MIB, client.controllerExpandVolume(expand.toBuilder().setCapacityRange(CapacityRange
                .newBuilder().setRequiredBytes(2 * MIB)).build()).await().atMost(WAIT).getCapacityBytes(), "no shrink");
        assertEquals(4 * MIB, client.listVolumes(ListVolumesRequest.getDefaultInstance()).await().atMost(WAIT)
                .getEntries(0).getVolume().getCapacityBytes());
        assertEquals(MIB, client.nodeGetVolumeStats(stats).await().atMost(WAIT).getUsage(0).getTotal(),
                "this node has not expanded its file system yet");

        assertEquals(4 * MIB, client.nodeExpandVolume(nodeExpand).await().atMost(WAIT).getCapacityBytes());
        assertEquals(4 * MIB, client.nodeGetVolumeStats(stats).await().atMost(WAIT).getUsage(0).getTotal());
        assertEquals(4 * MIB, client.nodeExpandVolume(nodeExpand).await().atMost(WAIT).getCapacityBytes(), "idempotent");
        assertTrue(mountAt(target).isPresent(), "the target stays mounted");
        Files.writeString(target.resolve("after.txt"), "still writable");

        // past the capacity: reported as an abnormal condition (a directory enforces no quota)
        Files.write(target.resolve("big"), new byte[(int) (4 * MIB)]);
        assertTrue(client.nodeGetVolumeStats(stats).await().atMost(WAIT).getVolumeCondition().getMessage()
                .contains("more than its capacity of " + 4 * MIB + " bytes"));
        Files.delete(target.resolve("big"));
        assertFalse(client.nodeGetVolumeStats(stats).await().atMost(WAIT).getVolumeCondition().getAbnormal());

        assertEquals(Status.Code.NOT_FOUND, failure(client.controllerExpandVolume(expand.toBuilder()
                .setVolumeId("hp-unknown").build())).code());
        assertEquals(Status.Code.OUT_OF_RANGE, failure(client.controllerExpandVolume(expand.toBuilder()
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB).setLimitBytes(2 * MIB)).build())).code());
        assertEquals(Status.Code.INVALID_ARGUMENT, failure(client.controllerExpandVolume(expand.toBuilder()
                .clearCapacityRange().build())).code());
        assertEquals(Status.Code.NOT_FOUND, failure(client.nodeExpandVolume(nodeExpand.toBuilder()
                .setVolumePath(dir.resolve("elsewhere").toString()).build())).code());
        assertEquals(Status.Code.INVALID_ARGUMENT, failure(client.nodeExpandVolume(nodeExpand.toBuilder()
                .clearVolumePath().build())).code());

        client.nodeUnpublish(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
                .build()).await().atMost(WAIT);
        client.nodeUnstage(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).build()).await().atMost(WAIT);
        client.controllerUnpublish(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("n1").build())
                .await().atMost(WAIT);
    }

    /**
     * {@code --volume-expansion=offline} (issue 14): GetPluginCapabilities advertises the VolumeExpansion type OFFLINE
     * (the client's fingerprint reads it; a default plugin's says ONLINE), and ControllerExpandVolume of a volume that
     * is controller-published is FAILED_PRECONDITION naming the node and saying to unpublish it first; once
     * unpublished, the same call expands it.
     */
    @Test
    void anOfflineExpansionPluginSaysSoAndRefusesToExpandAPublishedVolume() throws Exception {
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state"))
                .args("--volume-expansion=offline").start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());
        assertEquals(PluginCapability.VolumeExpansion.Type.OFFLINE, client.fingerprint().await().atMost(WAIT)
                .volumeExpansion());
        String id = create(CreateVolumeRequest.newBuilder().setName("offline")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB))).getVolumeId();
        client.controllerPublish(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("n1")
                .setVolumeCapability(WRITER).build()).await().atMost(WAIT);
        ControllerExpandVolumeRequest expand = ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(2 * MIB)).build();
        CsiCallException published = failure(client.controllerExpandVolume(expand));
        assertEquals(Status.Code.FAILED_PRECONDITION, published.code());
        assertTrue(published.pluginMessage().contains("controller-published to node n1")
                && published.pluginMessage().contains("offline only"), published.pluginMessage());
        client.controllerUnpublish(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("n1").build())
                .await().atMost(WAIT);
        assertEquals(2 * MIB, client.controllerExpandVolume(expand).await().atMost(WAIT).getCapacityBytes());
        client.close();
        plugin.stop();

        start();
        assertEquals(PluginCapability.VolumeExpansion.Type.ONLINE, client.fingerprint().await().atMost(WAIT)
                .volumeExpansion(), "the default");
    }

    /**
     * The fault file drives the new calls like the old ones: an injected UNAVAILABLE or ABORTED is retried
     * and the call then succeeds (two attempts), an injected INTERNAL fails at once, and an injected
     * FAILED_PRECONDITION of NodeExpandVolume is sent once even by a client whose policy retries it.
     */
    @Test
    void faultsInjectedIntoTheNewCallsGetTheRetriesTheCsiRulesGive() throws Exception {
        start();
        PluginFixture.AttemptRecorder recorder = new PluginFixture.AttemptRecorder();
        CsiPluginClient recorded = client.withOptions(recorder.options());
        Volume volume = create(CreateVolumeRequest.newBuilder().setName("faulty")
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(MIB)));

        plugin.injectFaults("CreateSnapshot UNAVAILABLE 1", "ControllerExpandVolume ABORTED 1",
                "ListSnapshots UNAVAILABLE 1", "DeleteSnapshot INTERNAL 1 backend broke");
        Snapshot snap = recorded.createSnapshot(CreateSnapshotRequest.newBuilder().setName("s")
                .setSourceVolumeId(volume.getVolumeId()).build()).await().atMost(WAIT).getSnapshot();
        assertEquals(2, recorder.of("CreateSnapshot").size());
        assertEquals(2 * MIB, recorded.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
                .setVolumeId(volume.getVolumeId()).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(2 * MIB))
                .build()).await().atMost(WAIT).getCapacityBytes(), "expanded after ABORTED");
        assertEquals(2, recorder.of("ControllerExpandVolume").size());
        assertEquals(1, recorded.listSnapshots(ListSnapshotsRequest.getDefaultInstance()).await().atMost(WAIT)
                .getEntriesCount());
        assertEquals(2, recorder.of("ListSnapshots").size());
        CsiCallException internal = failure(recorded.deleteSnapshot(DeleteSnapshotRequest.newBuilder()
                .setSnapshotId(snap.getSnapshotId()).build()));
        assertEquals(Status.Code.INTERNAL, internal.code());
        assertEquals(1, internal.attempts());
        assertTrue(internal.pluginMessage().contains("backend broke"), internal.pluginMessage());

        plugin.injectFaults("NodeExpandVolume FAILED_PRECONDITION 3 not now");
        CsiPluginClient retriesPreconditions = client.withOptions(CsiClientOptions.defaults().withRetryPolicy(
                CsiRetryPolicy.defaults().withBackoff(Duration.ofMillis(1), Duration.ofMillis(5))
                        .withRetryableCodes(Set.of(Status.Code.FAILED_PRECONDITION))));
        long before = plugin.callCount("NodeExpandVolume");
        CsiCallException precondition = failure(retriesPreconditions.nodeExpandVolume(NodeExpandVolumeRequest
                .newBuilder().setVolumeId(volume.getVolumeId()).setVolumePath("/x").build()));
        assertEquals(Status.Code.FAILED_PRECONDITION, precondition.code());
        assertEquals(before + 1, plugin.callCount("NodeExpandVolume"));
    }
}
