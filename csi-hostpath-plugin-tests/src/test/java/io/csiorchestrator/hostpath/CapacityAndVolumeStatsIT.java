package io.csiorchestrator.hostpath;

import static io.csiorchestrator.hostpath.PluginFixture.WAIT;
import static io.csiorchestrator.hostpath.PluginFixture.WRITER;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.CsiCallException;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.VolumeCapabilities;
import io.csiorchestrator.csi.v1.CapacityRange;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.GetCapacityRequest;
import io.csiorchestrator.csi.v1.GetCapacityResponse;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsResponse;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.Topology;
import io.csiorchestrator.csi.v1.VolumeUsage;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * GetCapacity and NodeGetVolumeStats of the hostpath plugin (issue 34 items 2 and 3) with real statvfs figures: the
 * plugin's state dir is a tmpfs of a known size and inode count mounted for the test, the plugin a separate process on
 * its unix socket, the publications real bind mounts.
 */
class CapacityAndVolumeStatsIT {

    private static final long MIB = 1L << 20;
    private static final long FS_BYTES = 64 * MIB;
    private static final long FS_INODES = 4096;

    @TempDir
    Path dir;

    private HostpathPluginProcess plugin;
    private CsiPluginClient client;
    private Path fs;

    @AfterEach
    void tearDown() throws IOException {
        PluginFixture.tearDown(plugin, client, dir);
    }

    private void start() throws Exception {
        fs = Files.createDirectories(dir.resolve("fs"));
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + FS_BYTES + ",nr_inodes=" + FS_INODES,
                "tmpfs", fs.toString()).inheritIO().start();
        assertEquals(0, mount.waitFor(), "mount a tmpfs at " + fs);
        plugin = HostpathPluginProcess.builder(dir.resolve("csi.sock"), "n1", fs.resolve("state")).start();
        client = PluginFixture.connect(plugin, CsiClientOptions.defaults());
    }

    private GetCapacityResponse capacity(GetCapacityRequest.Builder request) {
        return client.getCapacity(request.build()).await().atMost(WAIT);
    }

    @Test
    void getCapacityIsWhatTheFileSystemOfTheVolumesHasLeftForThisNodesSegmentOnly() throws Exception {
        start();
        assertTrue(client.controllerGetCapabilities().await().atMost(WAIT).getCapabilitiesList().stream()
                .anyMatch(c -> c.getRpc().getType() == ControllerServiceCapability.RPC.Type.GET_CAPACITY));
        long before = capacity(GetCapacityRequest.newBuilder()).getAvailableCapacity();
        assertEquals(Files.getFileStore(fs).getUsableSpace(), before);
        // one statvfs gives what the JDK's FileStore computes (f_blocks and f_bavail times f_frsize), and the inodes
        FileSystemFigures figures = FileSystemFigures.of(fs);
        assertEquals(Files.getFileStore(fs).getTotalSpace(), figures.totalBytes());
        assertEquals(FS_BYTES, figures.totalBytes());
        assertEquals(before, figures.availableBytes());
        assertEquals(FS_INODES, figures.inodes().orElseThrow().total());
        assertTrue(before > FS_BYTES - 2 * MIB && before <= FS_BYTES, "a 64 MiB tmpfs with a few state files: " + before);

        Files.write(fs.resolve("filler"), new byte[(int) (8 * MIB)]);
        GetCapacityResponse mine = capacity(GetCapacityRequest.newBuilder().setAccessibleTopology(
                Topology.newBuilder().putSegments(ControllerService.TOPOLOGY_KEY, "n1")));
        assertEquals(before - 8 * MIB, mine.getAvailableCapacity(), "8 MiB written take 8 MiB of the capacity");
        assertEquals(mine.getAvailableCapacity(), mine.getMaximumVolumeSize().getValue());

        GetCapacityResponse other = capacity(GetCapacityRequest.newBuilder().setAccessibleTopology(
                Topology.newBuilder().putSegments(ControllerService.TOPOLOGY_KEY, "n2")));
        assertEquals(0, other.getAvailableCapacity(), "another node's segment holds none of this node's volumes");
        GetCapacityResponse block = capacity(GetCapacityRequest.newBuilder().addVolumeCapabilities(
                VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER, CsiAttachmentMode.BLOCK_DEVICE,
                        io.csiorchestrator.csi.MountOptions.NONE)));
        assertEquals(0, block.getAvailableCapacity(), "no block volumes");
    }

    @Test
    void nodeGetVolumeStatsReportsInodesOfThePublishedPathAndNoMoreBytesThanTheFileSystemHas() throws Exception {
        start();
        // a capacity of 1 GiB on a 64 MiB file system: the statvfs figures bound what is available
        String id = client.createVolume(CreateVolumeRequest.newBuilder().setName("stats").addVolumeCapabilities(WRITER)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1024 * MIB)).build())
                .await().atMost(WAIT).getVolume().getVolumeId();
        client.controllerPublish(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("n1")
                .setVolumeCapability(WRITER).build()).await().atMost(WAIT);
        Path staging = Files.createDirectories(dir.resolve("staging/" + id));
        client.nodeStage(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                .setVolumeCapability(WRITER).build()).await().atMost(WAIT);
        Path target = dir.resolve("targets/a1/stats");
        Files.createDirectories(target.getParent());
        client.nodePublish(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                .setTargetPath(target.toString()).setVolumeCapability(WRITER).build()).await().atMost(WAIT);

        VolumeUsage inodesBefore = inodes(stats(id, target));
        assertEquals(FS_INODES, inodesBefore.getTotal());
        for (int i = 0; i < 5; i++) {
            Files.write(target.resolve("f" + i), new byte[1000]);
        }
        NodeGetVolumeStatsResponse after = stats(id, target);
        VolumeUsage inodes = inodes(after);
        assertEquals(inodesBefore.getUsed() + 5, inodes.getUsed(), "five files take five inodes");
        assertEquals(FS_INODES - inodes.getUsed(), inodes.getAvailable());
        VolumeUsage bytes = after.getUsageList().stream().filter(u -> u.getUnit() == VolumeUsage.Unit.BYTES)
                .findFirst().orElseThrow();
        assertEquals(1024 * MIB, bytes.getTotal());
        assertEquals(5000, bytes.getUsed());
        assertEquals(Files.getFileStore(target).getUsableSpace(), bytes.getAvailable(),
                "no more available than the file system holding the volume has left");

        CsiCallException unknown = org.junit.jupiter.api.Assertions.assertThrows(CsiCallException.class,
                () -> client.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                        .setVolumePath(dir.resolve("targets/a2/stats").toString()).build()).await().atMost(WAIT));
        assertEquals(Status.Code.NOT_FOUND, unknown.code());
    }

    private NodeGetVolumeStatsResponse stats(String id, Path target) {
        return client.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                .setVolumePath(target.toString()).build()).await().atMost(WAIT);
    }

    private static VolumeUsage inodes(NodeGetVolumeStatsResponse response) {
        List<VolumeUsage> found = response.getUsageList().stream()
                .filter(u -> u.getUnit() == VolumeUsage.Unit.INODES).toList();
        assertEquals(1, found.size(), "one INODES usage in " + response);
        return found.get(0);
    }
}
