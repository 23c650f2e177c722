package io.csiorchestrator.hostpath;

import io.csiorchestrator.hostpath.faults.FaultInjector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which calls run on the event loop thread (issue 36 item 6) and which keep a pool thread. */
class CallThreadsTest {

    @TempDir
    Path dir;

    @Test
    void aClaimsCallsRunOnTheEventLoopAndLongOnesOnThePool() {
        try (CallThreads threads = new CallThreads(new FaultInjector(dir.resolve("faults")), false)) {
            for (String method : new String[] {"ControllerPublishVolume", "ControllerUnpublishVolume"}) {
                assertTrue(threads.onEventLoop("csi.v1.Controller/" + method), method);
            }
            for (String method : new String[] {"NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume",
                    "NodeUnstageVolume"}) {
                assertTrue(threads.onEventLoop("csi.v1.Node/" + method), method);
            }
            assertTrue(threads.onEventLoop("csi.v1.Identity/Probe"));
            for (String method : new String[] {"csi.v1.Node/NodeGetVolumeStats", "csi.v1.Node/NodeExpandVolume",
                    "csi.v1.Controller/CreateVolume", "csi.v1.Controller/DeleteVolume",
                    "csi.v1.Controller/CreateSnapshot", "csi.v1.Controller/ControllerExpandVolume"}) {
                assertFalse(threads.onEventLoop(method), method);
            }
        }
    }

    @Test
    void whileAFaultsFileExistsEveryCallRunsOnThePool() throws Exception {
        try (CallThreads threads = new CallThreads(new FaultInjector(dir.resolve("faults")), false)) {
            Files.writeString(dir.resolve("faults"), "latency * 1s\n");
            assertFalse(threads.onEventLoop("csi.v1.Node/NodeStageVolume"));
            assertFalse(threads.onEventLoop("csi.v1.Identity/Probe"));
            Files.delete(dir.resolve("faults"));
            assertTrue(threads.onEventLoop("csi.v1.Node/NodeStageVolume"));
        }
    }

    @Test
    void aFencingControllerUnpublishRunsOnThePool() {
        try (CallThreads threads = new CallThreads(new FaultInjector(dir.resolve("faults")), true)) {
            assertFalse(threads.onEventLoop("csi.v1.Controller/ControllerUnpublishVolume"), "it waits for the other node");
            assertTrue(threads.onEventLoop("csi.v1.Controller/ControllerPublishVolume"));
        }
    }
}
