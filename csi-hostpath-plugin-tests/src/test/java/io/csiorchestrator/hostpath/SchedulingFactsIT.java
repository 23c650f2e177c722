package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.CsiCallException;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.PluginFingerprint;
import io.csiorchestrator.csi.VolumeCapabilities;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.VolumeCapability;
import io.grpc.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static io.csiorchestrator.hostpath.PluginFixture.WAIT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 34: what the reference plugin tells a scheduler, over its real socket: topology segments per node, a volume
 * limit a test changes while the plugin runs (the file re-read on NodeGetInfo and on the RESOURCE_EXHAUSTED checks),
 * and the SINGLE_NODE_MULTI_WRITER capability with the CSI 1.5 modes (refused when not advertised).
 */
class SchedulingFactsIT {

    @TempDir
    Path dir;

    private HostpathPluginProcess plugin;
    private CsiPluginClient client;

    @AfterEach
    void tearDown() throws IOException {
        PluginFixture.tearDown(plugin, client, dir);
    }

    @Test
    void nodeInfoReportsTopologySegmentsAndALimitThatChangesAtRunTime() throws Exception {
        Path state = dir.resolve("state");
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", state)
                .maxVolumesPerNode(3).args("--topology", "zone=a", "--topology=rack=r1").start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());

        PluginFingerprint.NodeFingerprint node = client.fingerprint().await().atMost(WAIT).node().orElseThrow();
        assertEquals(3, node.maxVolumesPerNode());
        assertEquals(Map.of("zone", "a", "rack", "r1", ControllerService.TOPOLOGY_KEY, "n1"), node.topology());

        Files.writeString(state.resolve(PluginOptions.MAX_VOLUMES_FILE_NAME), "1\n");
        assertEquals(1, client.nodeGetInfo().await().atMost(WAIT).getMaxVolumesPerNode(), "the file's limit, at once");

        VolumeCapability writer = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER, CsiAttachmentMode.FILE_SYSTEM,
                MountOptions.NONE);
        String first = create("first", writer);
        String second = create("second", writer);
        publish(first, writer);
        CsiCallException full = assertThrows(CsiCallException.class, () -> publish(second, writer));
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, full.code());
        assertTrue(full.getMessage().contains("maximum of 1 volumes"), full.getMessage());

        Files.writeString(state.resolve(PluginOptions.MAX_VOLUMES_FILE_NAME), "not a number");
        assertEquals(3, client.nodeGetInfo().await().atMost(WAIT).getMaxVolumesPerNode(), "a bad file: the flag's limit");
        publish(second, writer);
    }

    @Test
    void theSingleNodeMultiWriterModesAreAdvertisedAndTaken() throws Exception {
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state")).start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());
        PluginFingerprint fp = client.fingerprint().await().atMost(WAIT);
        assertTrue(fp.controllerCapabilities().contains(ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER));
        assertTrue(fp.node().orElseThrow().capabilities().contains(NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER));

        VolumeCapability sssw = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_SINGLE_WRITER, true,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE, MountOptions.NONE);
        String id = create("rwop", sssw);
        publish(id, sssw);
        Path staging = Files.createDirectories(dir.resolve("staging/" + id));
        client.nodeStage(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                .setVolumeCapability(sssw).build()).await().atMost(WAIT);
        assertTrue(PluginFixture.mountAt(staging).isPresent());
    }

    @Test
    void aPluginWithoutTheCapabilityRefusesTheNewModesAndTakesTheMappedOne() throws Exception {
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", dir.resolve("state"))
                .args("--single-node-multi-writer=false").start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());
        PluginFingerprint fp = client.fingerprint().await().atMost(WAIT);
        assertFalse(fp.controllerCapabilities().contains(ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER));
        assertFalse(fp.node().orElseThrow().capabilities().contains(NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER));

        VolumeCapability unmapped = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_MULTI_WRITER, true,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE, MountOptions.NONE);
        CsiCallException refused = assertThrows(CsiCallException.class, () -> create("old", unmapped));
        assertEquals(Status.Code.INVALID_ARGUMENT, refused.code());
        assertTrue(refused.getMessage().contains("SINGLE_NODE_MULTI_WRITER"), refused.getMessage());

        VolumeCapability mapped = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_MULTI_WRITER, false,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE, MountOptions.NONE);
        publish(create("old", mapped), mapped);
    }

    private String create(String name, VolumeCapability capability) {
        return client.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(capability).build())
                .await().atMost(WAIT).getVolume().getVolumeId();
    }

    private void publish(String volumeId, VolumeCapability capability) {
        client.controllerPublish(ControllerPublishVolumeRequest.newBuilder().setVolumeId(volumeId).setNodeId("n1")
                .setVolumeCapability(capability).build()).await().atMost(WAIT);
    }
}
