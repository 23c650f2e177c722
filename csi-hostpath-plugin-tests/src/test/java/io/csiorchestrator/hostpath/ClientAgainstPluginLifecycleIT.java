package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CapabilityConfirmation;
import io.csiorchestrator.csi.CsiCallException;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.CsiSocketException;
import io.csiorchestrator.csi.PluginFingerprint;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeResponse;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.DeleteVolumeRequest;
import io.csiorchestrator.csi.v1.ListVolumesRequest;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.csi.v1.VolumeCondition;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.csiorchestrator.csi.v1.PluginCapability;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesRequest;
import io.csiorchestrator.csi.v1.Volume;
import io.grpc.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.FileSystemException;
import java.nio.file.Path;

import static io.csiorchestrator.hostpath.PluginFixture.MULTI_WRITER;
import static io.csiorchestrator.hostpath.PluginFixture.WAIT;
import static io.csiorchestrator.hostpath.PluginFixture.WRITER;
import static io.csiorchestrator.hostpath.PluginFixture.mountAt;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The CSI client against the hostpath plugin, a separate process on a real socket, with real bind mounts. */
class ClientAgainstPluginLifecycleIT {

    @TempDir
    Path dir;

    private HostpathPluginProcess plugin;
    private CsiPluginClient client;

    @AfterEach
    void tearDown() throws IOException {
        PluginFixture.tearDown(plugin, client, dir);
    }

    @Test
    void fullLifecycleWithRealBindMounts() throws Exception {
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state")).start();
        assertTrue(plugin.command().contains("-jar"), "runs the packaged jar: " + plugin.command());
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());

        PluginFingerprint fingerprint = client.fingerprint().await().atMost(WAIT);
        assertEquals("hostpath.csi.csiorchestrator.io", fingerprint.name());
        assertTrue(fingerprint.ready());
        assertTrue(fingerprint.pluginCapabilities().contains(PluginCapability.Service.Type.CONTROLLER_SERVICE));
        assertTrue(fingerprint.pluginCapabilities()
                .contains(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS));
        assertTrue(fingerprint.requiresControllerPublish());
        assertTrue(fingerprint.requiresStaging());
        assertEquals("n1", fingerprint.node().orElseThrow().nodeId());

        Volume volume = client.createVolume(CreateVolumeRequest.newBuilder().setName("data")
                .addVolumeCapabilities(WRITER).build()).await().atMost(WAIT).getVolume();
        Path volumeDir = plugin.volumeDirectory(volume.getVolumeId());
        assertTrue(Files.isDirectory(volumeDir));
        assertEquals(volume, client.createVolume(CreateVolumeRequest.newBuilder().setName("data")
                .addVolumeCapabilities(WRITER).build()).await().atMost(WAIT).getVolume(), "CreateVolume is idempotent");

        CapabilityConfirmation confirmation = client.validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest
                .newBuilder().setVolumeId(volume.getVolumeId()).addVolumeCapabilities(WRITER).build())
                .await().atMost(WAIT);
        assertEquals(CapabilityConfirmation.Outcome.CONFIRMED, confirmation.outcome(), confirmation.message());

        ControllerPublishVolumeResponse published = client.controllerPublish(ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId(volume.getVolumeId()).setNodeId("n1").setVolumeCapability(WRITER).build())
                .await().atMost(WAIT);

        Path staging = Files.createDirectories(dir.resolve("staging/" + volume.getVolumeId()));
        NodeStageVolumeRequest stage = NodeStageVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setStagingTargetPath(staging.toString()).setVolumeCapability(WRITER)
                .putAllPublishContext(published.getPublishContextMap()).build();
        client.nodeStage(stage).await().atMost(WAIT);
        assertTrue(mountAt(staging).isPresent(), "staging is a mount point in mountinfo");
        assertTrue(mountAt(staging).get().root().endsWith("/volumes/" + volume.getVolumeId()));
        client.nodeStage(stage).await().atMost(WAIT); // same again: OK

        Path target = dir.resolve("targets/alloc-1/data");
        Files.createDirectories(target.getParent());
        NodePublishVolumeRequest publish = NodePublishVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(WRITER).build();
        client.nodePublish(publish).await().atMost(WAIT);
        client.nodePublish(publish).await().atMost(WAIT); // same again: OK
        assertTrue(mountAt(target).isPresent(), "target is a mount point in mountinfo");
        assertFalse(mountAt(target).get().readOnly());

        Files.writeString(target.resolve("hello.txt"), "written through the target");
        assertEquals("written through the target", Files.readString(volumeDir.resolve("hello.txt")));

        assertTrue(client.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setVolumePath(target.toString()).build()).await().atMost(WAIT).getUsage(0).getTotal() > 0);

        // VOLUME_CONDITION: normal, abnormal while the marker file is in the volume's directory (written
        // here through the target), normal again once it is removed
        NodeGetVolumeStatsRequest stats = NodeGetVolumeStatsRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setVolumePath(target.toString()).build();
        assertTrue(client.nodeGetCapabilities().await().atMost(WAIT).getCapabilitiesList().stream()
                .anyMatch(c -> c.getRpc().getType() == NodeServiceCapability.RPC.Type.VOLUME_CONDITION));
        assertFalse(client.nodeGetVolumeStats(stats).await().atMost(WAIT).getVolumeCondition().getAbnormal());
        Files.writeString(target.resolve(".csi-condition-abnormal"), "disk failing\nsecond line");
        VolumeCondition abnormal = client.nodeGetVolumeStats(stats).await().atMost(WAIT).getVolumeCondition();
        assertTrue(abnormal.getAbnormal());
        assertEquals("disk failing", abnormal.getMessage());
        Files.delete(volumeDir.resolve(".csi-condition-abnormal"));
        assertFalse(client.nodeGetVolumeStats(stats).await().atMost(WAIT).getVolumeCondition().getAbnormal());

        CsiCallException incompatible = assertThrows(CsiCallException.class, () -> client.nodePublish(
                publish.toBuilder().setReadonly(true).build()).await().atMost(WAIT));
        assertEquals(Status.Code.ALREADY_EXISTS, incompatible.code());
        assertEquals(1, incompatible.attempts());
        assertTrue(incompatible.getMessage().startsWith("volume " + volume.getVolumeId() + " is already published at "
                + target + " with capabilities or read-only setting incompatible"), incompatible.getMessage());

        assertEquals(1, client.listVolumes(ListVolumesRequest.getDefaultInstance()).await().atMost(WAIT)
                .getEntries(0).getStatus().getPublishedNodeIdsCount());

        client.nodeUnpublish(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setTargetPath(target.toString()).build()).await().atMost(WAIT);
        assertFalse(mountAt(target).isPresent());
        assertFalse(Files.exists(target), "the plugin removes the target it created");
        client.nodeUnstage(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setStagingTargetPath(staging.toString()).build()).await().atMost(WAIT);
        assertFalse(mountAt(staging).isPresent());
        client.nodeUnstage(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setStagingTargetPath(staging.toString()).build()).await().atMost(WAIT); // absent: OK
        client.controllerUnpublish(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setNodeId("n1").build()).await().atMost(WAIT);
        client.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId()).build())
                .await().atMost(WAIT);
        assertFalse(Files.exists(volumeDir));
        assertEquals(0, client.listVolumes(ListVolumesRequest.getDefaultInstance()).await().atMost(WAIT)
                .getEntriesCount());
    }

    @Test
    void readOnlyPublishWithoutStagingOrControllerPublish() throws Exception {
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state"))
                .stageUnstage(false).controllerPublish(false).start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());
        PluginFingerprint fingerprint = client.fingerprint().await().atMost(WAIT);
        assertFalse(fingerprint.requiresStaging());
        assertFalse(fingerprint.requiresControllerPublish());
        assertFalse(fingerprint.controllerCapabilities()
                .contains(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME));

        Volume volume = client.createVolume(CreateVolumeRequest.newBuilder().setName("shared")
                .addVolumeCapabilities(MULTI_WRITER).build()).await().atMost(WAIT).getVolume();
        Files.writeString(plugin.volumeDirectory(volume.getVolumeId()).resolve("seed.txt"), "seed");

        Path writable = dir.resolve("targets/rw");
        Path readOnly = dir.resolve("targets/ro");
        Files.createDirectories(writable.getParent());
        client.nodePublish(NodePublishVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setTargetPath(writable.toString()).setVolumeCapability(MULTI_WRITER).build()).await().atMost(WAIT);
        client.nodePublish(NodePublishVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setTargetPath(readOnly.toString()).setVolumeCapability(MULTI_WRITER).setReadonly(true).build())
                .await().atMost(WAIT);

        assertTrue(mountAt(readOnly).orElseThrow().readOnly(), "mountinfo shows the ro mount");
        assertFalse(mountAt(writable).orElseThrow().readOnly());
        assertEquals("seed", Files.readString(readOnly.resolve("seed.txt")));
        assertThrows(FileSystemException.class, () -> Files.writeString(readOnly.resolve("no.txt"), "x"));
        Files.writeString(writable.resolve("yes.txt"), "y");
        assertEquals("y", Files.readString(readOnly.resolve("yes.txt")));

        CsiCallException unimplemented = assertThrows(CsiCallException.class, () -> client.nodeStage(
                NodeStageVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                        .setStagingTargetPath(dir.resolve("staging").toString()).setVolumeCapability(MULTI_WRITER)
                        .build()).await().atMost(WAIT));
        assertEquals(Status.Code.UNIMPLEMENTED, unimplemented.code());

        for (Path target : new Path[]{writable, readOnly}) {
            client.nodeUnpublish(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                    .setTargetPath(target.toString()).build()).await().atMost(WAIT);
            assertFalse(mountAt(target).isPresent());
        }
    }

    @Test
    void stateSurvivesARestartAndStagingMountsDieWithThePluginWhenAsked() throws Exception {
        Path socket = dir.resolve("csi.sock");
        Path stateDir = dir.resolve("state");
        plugin = HostpathPluginProcess.builder(socket, "n1", stateDir).unmountStagingOnExit().start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());
        Volume volume = client.createVolume(CreateVolumeRequest.newBuilder().setName("db")
                .addVolumeCapabilities(WRITER).build()).await().atMost(WAIT).getVolume();
        client.controllerPublish(ControllerPublishVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setNodeId("n1").setVolumeCapability(WRITER).build()).await().atMost(WAIT);
        Path staging = Files.createDirectories(dir.resolve("staging/db"));
        NodeStageVolumeRequest stage = NodeStageVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setStagingTargetPath(staging.toString()).setVolumeCapability(WRITER).build();
        client.nodeStage(stage).await().atMost(WAIT);
        assertTrue(mountAt(staging).isPresent());

        plugin.stop();
        assertFalse(mountAt(staging).isPresent(), "the staging mount died with the plugin");
        CsiSocketException gone = assertThrows(CsiSocketException.class, () -> CsiPluginClient.connect(socket,
                CsiClientOptions.defaults()).await().atMost(WAIT));
        assertTrue(gone.getMessage().startsWith("failed to open CSI socket " + socket + ": check that the plugin runs"),
                gone.getMessage());

        plugin = HostpathPluginProcess.builder(socket, "n1", stateDir).unmountStagingOnExit().start();
        assertEquals(1, client.listVolumes(ListVolumesRequest.getDefaultInstance()).await().atMost(WAIT)
                .getEntriesCount(), "the old channel reconnects to the new plugin, which remembers the volume");

        Path target = dir.resolve("targets/db");
        Files.createDirectories(target.getParent());
        NodePublishVolumeRequest publish = NodePublishVolumeRequest.newBuilder().setVolumeId(volume.getVolumeId())
                .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
                .setVolumeCapability(WRITER).build();
        CsiCallException notStaged = assertThrows(CsiCallException.class,
                () -> client.nodePublish(publish).await().atMost(WAIT));
        assertEquals(Status.Code.FAILED_PRECONDITION, notStaged.code());
        assertTrue(notStaged.pluginMessage().contains("stage the volume again"), notStaged.pluginMessage());

        client.nodeStage(stage).await().atMost(WAIT); // heals the staging mount
        assertTrue(mountAt(staging).isPresent());
        client.nodePublish(publish).await().atMost(WAIT);
        Files.writeString(target.resolve("after-restart.txt"), "ok");
        assertEquals("ok", Files.readString(plugin.volumeDirectory(volume.getVolumeId()).resolve("after-restart.txt")));
    }
}
