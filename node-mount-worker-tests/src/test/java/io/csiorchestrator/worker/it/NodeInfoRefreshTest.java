package io.csiorchestrator.worker.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.worker.EventSink;
import io.csiorchestrator.worker.mount.PluginCallFailure;
import io.csiorchestrator.worker.mount.VolumeRequest;
import io.csiorchestrator.worker.plugin.PluginSettings;
import io.csiorchestrator.worker.plugin.PluginSupervisor;
import io.opentelemetry.context.Context;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 34 item 1, the worker's side: NodeGetInfo asked again of the real hostpath plugin (a separate process on its
 * unix socket) whose limit a test changes while it runs. A changed limit or topology goes out at once as a plugin-health
 * report (not a heartbeat); an unchanged one sends nothing; a call answered RESOURCE_EXHAUSTED asks again by itself.
 */
class NodeInfoRefreshTest {

    @TempDir
    Path dir;

    private HostpathPlugin plugin;
    private PluginSupervisor supervisor;
    private final ExecutorService refresher = Executors.newSingleThreadExecutor();
    private final List<PluginHealth> reports = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() throws Exception {
        if (supervisor != null) {
            supervisor.stop("test over");
        }
        refresher.shutdownNow();
        if (plugin != null) {
            plugin.stop();
        }
    }

    @Test
    void aChangedLimitGoesOutAtOnceAndRESOURCE_EXHAUSTEDAsksAgain() throws Exception {
        Path state = dir.resolve("state");
        plugin = new HostpathPlugin("hp", dir.resolve("plugins"), state, "--controller-publish=false",
                "--max-volumes-per-node=3", "--topology", "zone=a",
                "--fault", "NodeStageVolume RESOURCE_EXHAUSTED 100").start();
        EventSink sink = (ContractEvent event, Context cause) -> {
            if (event instanceof PluginHealth h) {
                reports.add(h);
            }
        };
        supervisor = new PluginSupervisor("hp", "test-node", plugin.socket, PluginSettings.DEFAULTS, dir.resolve("root"),
                new PluginSupervisor.Timing(Duration.ofSeconds(5), Duration.ofSeconds(5), Duration.ofSeconds(5), 1),
                sink, id -> { }, Clock.systemUTC()).refreshNodeInfoOn(refresher);
        supervisor.check();
        assertTrue(supervisor.healthy(), supervisor.description());
        PluginHealth first = last();
        assertEquals(3L, first.nodeInfo().maxVolumes());
        assertEquals("a", first.nodeInfo().accessibleTopology().get("zone"));

        int before = reports.size();
        assertFalse(supervisor.refreshNodeInfo(), "the same answer");
        assertEquals(before, reports.size(), "nothing sent for an unchanged limit");

        Files.writeString(state.resolve("max-volumes-per-node"), "1");
        assertTrue(supervisor.refreshNodeInfo());
        PluginHealth lowered = last();
        assertEquals(1L, lowered.nodeInfo().maxVolumes());
        assertFalse(lowered.heartbeat(), "a report of its own, not a heartbeat");
        assertTrue(lowered.healthy());
        assertEquals(1L, supervisor.fingerprint().orElseThrow().node().orElseThrow().maxVolumesPerNode());

        // the plugin's limit changes again; nobody refreshes, but a stage answered RESOURCE_EXHAUSTED asks again
        Files.writeString(state.resolve("max-volumes-per-node"), "2");
        PluginCallFailure full = assertThrows(PluginCallFailure.class, () -> supervisor.volumesIfHealthy().orElseThrow()
                .stage(new VolumeRequest("v1", AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, null, List.of(),
                        Map.of(), Map.of(), Map.of(), false, dir.resolve("staging/v1"), null)));
        assertEquals("RESOURCE_EXHAUSTED", full.code());
        await().atMost(Duration.ofSeconds(30)).until(() -> last().nodeInfo().maxVolumes() == 2L);
    }

    private PluginHealth last() {
        assertFalse(reports.isEmpty(), "no plugin-health report yet");
        return reports.get(reports.size() - 1);
    }
}
