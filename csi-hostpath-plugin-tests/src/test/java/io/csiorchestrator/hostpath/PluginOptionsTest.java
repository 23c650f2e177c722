package io.csiorchestrator.hostpath;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PluginOptionsTest {

    @Test
    void theDocumentedCommandLine() {
        PluginOptions options = PluginOptions.parse("--endpoint", "unix:///tmp/x/csi.sock", "--node-id", "n1",
                "--state-dir", "/tmp/x/state");

        assertEquals(Path.of("/tmp/x/csi.sock"), options.socketPath());
        assertEquals("n1", options.nodeId());
        assertEquals(Path.of("/tmp/x/state"), options.stateDir());
        assertEquals("hostpath.csi.csiorchestrator.io", options.pluginName());
        assertTrue(options.stageUnstage());
        assertTrue(options.controllerPublish());
        assertEquals(0, options.maxVolumesPerNode());
        assertFalse(options.unmountStagingOnExit());
        assertEquals(Path.of("/tmp/x/state/faults"), options.faultsFile());
    }

    @Test
    void everyOption() {
        PluginOptions options = PluginOptions.parse("--endpoint=/run/csi.sock", "--node-id=n2", "--state-dir=/s",
                "--stage-unstage=false", "--controller-publish", "false", "--max-volumes-per-node", "3",
                "--unmount-staging-on-exit", "--known-node-ids", "n3,n4", "--faults-file", "/f",
                "--fault", "NodeStageVolume INTERNAL 1", "--fault=probe-not-ready", "--plugin-name", "p.example.com");

        assertFalse(options.stageUnstage());
        assertFalse(options.controllerPublish());
        assertEquals(3, options.maxVolumesPerNode());
        assertTrue(options.unmountStagingOnExit());
        assertEquals(Set.of("n3", "n4"), options.knownNodeIds());
        assertTrue(options.knowsNode("n2") && options.knowsNode("n4") && !options.knowsNode("n5"));
        assertEquals(Path.of("/f"), options.faultsFile());
        assertEquals(List.of("NodeStageVolume INTERNAL 1", "probe-not-ready"), options.faultRules());
        assertEquals("p.example.com", options.pluginName());
    }

    @Test
    void rejectsWhatItCannotUse() {
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse("--node-id", "n1"));
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse("--endpoint", "tcp://1.2.3.4:5",
                "--node-id", "n1", "--state-dir", "/s"));
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse("--endpoint", "/s.sock",
                "--node-id", "../n1", "--state-dir", "/s"));
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse("--endpoint", "/s.sock",
                "--node-id", "n1", "--state-dir", "relative"));
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse("--endpoint", "/s.sock",
                "--node-id", "n1", "--state-dir", "/s", "--max-volumes-per-node", "-1"));
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse("--endpoint", "/s.sock",
                "--node-id", "n1", "--state-dir", "/s", "--stage-unstage=maybe"));
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse("--endpoint", "/s.sock",
                "--node-id", "n1", "--state-dir", "/s", "--colour", "blue"));
    }

    /**
     * The storage fence is off by default; {@code --fence-on-controller-unpublish} or the environment variable
     * turns it on; it needs controller publish; {@code --fence-ack-timeout} takes s or ms.
     */
    @Test
    void theStorageFenceFlag() {
        String[] base = {"--endpoint", "/s.sock", "--node-id", "n1", "--state-dir", "/s"};
        PluginOptions plain = PluginOptions.parse(Map.of(), base);
        assertFalse(plain.fenceOnControllerUnpublish());
        assertEquals(Duration.ofSeconds(5), plain.fenceAckTimeout());

        assertTrue(PluginOptions.parse(Map.of(), concat(base, "--fence-on-controller-unpublish"))
                .fenceOnControllerUnpublish());
        assertTrue(PluginOptions.parse(Map.of("CSI_HOSTPATH_FENCE_ON_CONTROLLER_UNPUBLISH", "true"), base)
                .fenceOnControllerUnpublish());
        assertFalse(PluginOptions.parse(Map.of("CSI_HOSTPATH_FENCE_ON_CONTROLLER_UNPUBLISH", "true"),
                concat(base, "--fence-on-controller-unpublish=false")).fenceOnControllerUnpublish());
        assertEquals(Duration.ofMillis(1500), PluginOptions.parse(Map.of(),
                concat(base, "--fence-ack-timeout", "1500ms")).fenceAckTimeout());

        IllegalArgumentException noPublish = assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse(
                Map.of(), concat(base, "--fence-on-controller-unpublish", "--controller-publish=false")));
        assertTrue(noPublish.getMessage().contains("needs --controller-publish=true"), noPublish.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse(
                Map.of("CSI_HOSTPATH_FENCE_ON_CONTROLLER_UNPUBLISH", "yes"), base));
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse(Map.of(),
                concat(base, "--fence-ack-timeout", "0s")));
    }

    /** {@code --volume-expansion} is online by default, offline on request, and nothing else. */
    @Test
    void theVolumeExpansionFlag() {
        String[] base = {"--endpoint", "/s.sock", "--node-id", "n1", "--state-dir", "/s"};
        assertFalse(PluginOptions.parse(Map.of(), base).offlineExpansion());
        assertFalse(PluginOptions.parse(Map.of(), concat(base, "--volume-expansion=online")).offlineExpansion());
        assertTrue(PluginOptions.parse(Map.of(), concat(base, "--volume-expansion", "offline")).offlineExpansion());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse(Map.of(),
                concat(base, "--volume-expansion=sometimes")));
        assertTrue(bad.getMessage().contains("online or offline"), bad.getMessage());
    }

    /** Issue 34: the limit from the flag or the environment, topology segments, the SINGLE_NODE_MULTI_WRITER switch. */
    @Test
    void theSchedulingFlags() {
        String[] base = {"--endpoint", "/s.sock", "--node-id", "n1", "--state-dir", "/s"};
        PluginOptions plain = PluginOptions.parse(Map.of(), base);
        assertEquals(0, plain.maxVolumesPerNode());
        assertEquals(Map.of(), plain.topology());
        assertTrue(plain.singleNodeMultiWriter());
        assertEquals(java.nio.file.Path.of("/s/max-volumes-per-node"), plain.maxVolumesFile());

        assertEquals(4, PluginOptions.parse(Map.of(PluginOptions.MAX_VOLUMES_ENV, "4"), base).maxVolumesPerNode());
        assertEquals(2, PluginOptions.parse(Map.of(PluginOptions.MAX_VOLUMES_ENV, "4"),
                concat(base, "--max-volumes-per-node", "2")).maxVolumesPerNode(), "the flag wins");
        IllegalArgumentException badEnv = assertThrows(IllegalArgumentException.class,
                () -> PluginOptions.parse(Map.of(PluginOptions.MAX_VOLUMES_ENV, "many"), base));
        assertTrue(badEnv.getMessage().contains(PluginOptions.MAX_VOLUMES_ENV) && badEnv.getMessage().contains("'many'"),
                badEnv.getMessage());

        assertEquals(Map.of("zone", "a", "rack", "r1"), PluginOptions.parse(Map.of(),
                concat(base, "--topology", "zone=a", "--topology=rack=r1")).topology());
        IllegalArgumentException badSegment = assertThrows(IllegalArgumentException.class,
                () -> PluginOptions.parse(Map.of(), concat(base, "--topology", "zone")));
        assertTrue(badSegment.getMessage().contains("key=value, got 'zone'"), badSegment.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PluginOptions.parse(Map.of(),
                concat(base, "--topology", ControllerService.TOPOLOGY_KEY + "=n2")));

        assertFalse(PluginOptions.parse(Map.of(), concat(base, "--single-node-multi-writer=false")).singleNodeMultiWriter());
    }

    private static String[] concat(String[] first, String... more) {
        String[] all = java.util.Arrays.copyOf(first, first.length + more.length);
        System.arraycopy(more, 0, all, first.length, more.length);
        return all;
    }
}
