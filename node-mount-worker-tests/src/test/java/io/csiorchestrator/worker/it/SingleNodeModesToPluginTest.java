package io.csiorchestrator.worker.it;

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
import io.csiorchestrator.worker.mount.NodeVolumePlugin;
import io.csiorchestrator.worker.mount.VolumeRequest;
import io.csiorchestrator.worker.plugin.PluginSettings;
import io.csiorchestrator.worker.plugin.PluginSupervisor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 34 item 5, the worker's side, against the real hostpath plugin on its unix socket with real bind mounts: the
 * CSI 1.5 modes go to a plugin that advertises SINGLE_NODE_MULTI_WRITER as they are, and to one that does not as
 * SINGLE_NODE_WRITER (that plugin refuses the new modes, so an unmapped stage would fail).
 */
class SingleNodeModesToPluginTest {

    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    private HostpathPlugin plugin;
    private PluginSupervisor supervisor;
    private NodeVolumePlugin volumes;
    private Path staged;
    private String volumeId;

    @AfterEach
    void stop() throws Exception {
        if (staged != null) {
            volumes.unstage(volumeId, staged);
        }
        if (supervisor != null) {
            supervisor.stop("test over");
        }
        if (plugin != null) {
            plugin.stop();
        }
    }

    @Test
    void aPluginWithoutTheCapabilityGetsSingleNodeWriter() throws Exception {
        start("--single-node-multi-writer=false");
        stage(AccessMode.SINGLE_NODE_MULTI_WRITER);
        String state = Files.readString(dir.resolve("state/plugin-state.json"));
        assertTrue(state.contains("\"SINGLE_NODE_WRITER\""), state);
        assertFalse(state.contains("SINGLE_NODE_MULTI_WRITER"), state);
    }

    @Test
    void aPluginWithTheCapabilityGetsTheModeAsItIs() throws Exception {
        start();
        stage(AccessMode.SINGLE_NODE_SINGLE_WRITER);
        String state = Files.readString(dir.resolve("state/plugin-state.json"));
        assertTrue(state.contains("\"SINGLE_NODE_SINGLE_WRITER\""), state);
    }

    private void start(String... args) throws Exception {
        List<String> all = new java.util.ArrayList<>(List.of("--controller-publish=false"));
        all.addAll(List.of(args));
        plugin = new HostpathPlugin("hp", dir.resolve("plugins"), dir.resolve("state"), all.toArray(String[]::new)).start();
        supervisor = new PluginSupervisor("hp", "test-node", plugin.socket, PluginSettings.DEFAULTS, dir.resolve("root"),
                new PluginSupervisor.Timing(Duration.ofSeconds(5), Duration.ofSeconds(5), Duration.ofSeconds(10), 1),
                (event, cause) -> { }, id -> { }, Clock.systemUTC());
        supervisor.check();
        assertTrue(supervisor.healthy(), supervisor.description());
        volumes = supervisor.volumesIfHealthy().orElseThrow();
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await().atMost(WAIT)) {
            volumeId = client.createVolume(CreateVolumeRequest.newBuilder().setName("v").addVolumeCapabilities(
                    VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER, CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE))
                    .build()).await().atMost(WAIT).getVolume().getVolumeId();
        }
    }

    private void stage(AccessMode mode) throws Exception {
        Path staging = Files.createDirectories(dir.resolve("staging/" + volumeId));
        volumes.stage(new VolumeRequest(volumeId, mode, AttachmentMode.FILE_SYSTEM, null, List.of(), Map.of(), Map.of(),
                Map.of(), false, staging, null));
        staged = staging;
        assertTrue(MountTable.readSelf().mountAt(staging).isPresent(), "staged with a real bind mount at " + staging);
    }
}
