package io.csiorchestrator.hostpath;

import static io.csiorchestrator.hostpath.PluginFixture.WRITER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.v1.ControllerGrpc;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.ListVolumesRequest;
import io.csiorchestrator.csi.v1.ListVolumesResponse;
import io.csiorchestrator.csi.v1.NodeGrpc;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two plugin processes (nodes n1 and n2) with one {@code --shared-dir}, as the demo runs them: a
 * volume created through one is known to the other and reported accessible from every node (no topology), a ControllerPublish to n2 answered by n1's
 * plugin lets n2's plugin stage it, and a ControllerUnpublish through n2 is seen by n1.
 */
class SharedDirIT {

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
                .args("--known-node-ids", "n2", "--shared-dir", shared.toString()).start();
        n2 = HostpathPluginProcess.builder(dir.resolve("n2.sock"), "n2", dir.resolve("n2-state"))
                .args("--known-node-ids", "n1", "--shared-dir", shared.toString()).start();
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

    @Test
    void controllerStateAndVolumesAreSharedNodeStateIsNot() throws IOException {
        io.csiorchestrator.csi.v1.Volume created = controller(channel1).createVolume(CreateVolumeRequest.newBuilder()
                .setName("shared-one").addVolumeCapabilities(WRITER).build()).getVolume();
        String id = created.getVolumeId();
        // The shared dir is reached from every node sharing it: no accessible topology (CSI: accessible from all nodes),
        // not n1's segment, which would keep the volume from being used on n2.
        assertEquals(List.of(), created.getAccessibleTopologyList(), "a shared volume is accessible from every node");
        assertEquals(id, controller(channel2).createVolume(CreateVolumeRequest.newBuilder().setName("shared-one")
                .addVolumeCapabilities(WRITER).build()).getVolume().getVolumeId(), "same name, same volume");
        Files.writeString(dir.resolve("shared").resolve("volumes").resolve(id).resolve("data.txt"), "from n1");

        Path staging = dir.resolve("n2-staging");
        NodeStageVolumeRequest stage = NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(WRITER).build();
        StatusRuntimeException unpublished = assertThrows(StatusRuntimeException.class,
                () -> node(channel2).nodeStageVolume(stage));
        assertEquals(Status.Code.FAILED_PRECONDITION, unpublished.getStatus().getCode());

        controller(channel1).controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
                .setNodeId("n2").setVolumeCapability(WRITER).build());
        node(channel2).nodeStageVolume(stage);
        assertTrue(PluginFixture.mountAt(staging).isPresent());
        assertEquals("from n1", Files.readString(staging.resolve("data.txt")));
        assertTrue(controller(channel1).listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
                .anyMatch(e -> e.getVolume().getVolumeId().equals(id)
                        && e.getStatus().getPublishedNodeIdsList().contains("n2")));

        // A single-node writer is on n2 now: n1's plugin refuses to publish it to n1 too.
        StatusRuntimeException busy = assertThrows(StatusRuntimeException.class, () -> controller(channel1)
                .controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("n1")
                        .setVolumeCapability(WRITER).build()));
        assertEquals(Status.Code.FAILED_PRECONDITION, busy.getStatus().getCode());

        node(channel2).nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).build());
        assertFalse(PluginFixture.mountAt(staging).isPresent());
        controller(channel2).controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setNodeId("n2").build());
        List<ListVolumesResponse.Entry> listed = controller(channel1).listVolumes(ListVolumesRequest.getDefaultInstance())
                .getEntriesList().stream().filter(e -> e.getVolume().getVolumeId().equals(id)).toList();
        assertEquals(1, listed.size(), "n1 still lists the unpublished volume, once: " + listed);
        assertEquals(List.of(), listed.get(0).getStatus().getPublishedNodeIdsList(), "published to no node");

        // The controller half is in the shared dir; the node half stays per process (n1 never staged anything).
        assertTrue(Files.readString(dir.resolve("shared").resolve("controller-state.json")).contains(id));
        for (String name : List.of("plugin-state.json", "plugin-state.journal")) {
            Path n1State = n1.stateDir().resolve(name);
            assertFalse(Files.exists(n1State) && Files.readString(n1State).contains(id), name);
        }
    }

    /**
     * Without {@code --fence-on-controller-unpublish} a ControllerUnpublishVolume(vol, n2) answered by n1's
     * plugin fences nothing: n2's target stays read-write and is written through, n2 still publishes vol at a
     * second target from its staging, and no {@code fences.json} is written ({@link StorageFenceIT} has the flag).
     */
    @Test
    void withoutTheFenceFlagControllerUnpublishLeavesTheNodesMountsWritable() throws IOException {
        String id = controller(channel1).createVolume(CreateVolumeRequest.newBuilder().setName("shared-unfenced")
                .addVolumeCapabilities(WRITER).build()).getVolume().getVolumeId();
        controller(channel2).controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
                .setNodeId("n2").setVolumeCapability(WRITER).build());
        Path staging = dir.resolve("n2-staging-unfenced");
        Path target = dir.resolve("n2-target-unfenced");
        node(channel2).nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setVolumeCapability(WRITER).build());
        node(channel2).nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(WRITER).build());

        controller(channel1).controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
                .setNodeId("n2").build());

        assertFalse(PluginFixture.mountAt(target).orElseThrow().readOnly());
        Files.writeString(target.resolve("after-unpublish.txt"), "still writable");
        assertEquals("still writable", Files.readString(dir.resolve("shared").resolve("volumes").resolve(id)
                .resolve("after-unpublish.txt")));
        Path second = dir.resolve("n2-target-unfenced-2");
        node(channel2).nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
                .setStagingTargetPath(staging.toString()).setTargetPath(second.toString())
                .setVolumeCapability(WRITER).build());
        assertFalse(PluginFixture.mountAt(second).orElseThrow().readOnly());
        assertFalse(Files.exists(dir.resolve("shared").resolve("fences.json")));
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
