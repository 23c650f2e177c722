package io.csiorchestrator.simulator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The simulator's command line: defaults, durations, and what it refuses before starting anything. */
class NodeSimulatorOptionsTest {

    @Test
    void defaultsAreTheWorkersAndOneMillisecondPerPluginCall() {
        NodeSimulator.Options o = NodeSimulator.parse(new String[] {"--nodes", "3", "--root", "/tmp/sim"});
        assertEquals(List.of("sim-node-1", "sim-node-2", "sim-node-3"), o.nodeIds());
        assertEquals(Path.of("/tmp/sim"), o.root());
        assertEquals(Duration.ofMillis(1), o.pluginDelay());
        assertEquals(Duration.ofSeconds(30), o.heartbeatInterval());
        assertEquals(4, o.concurrency());
        assertEquals("simulated", o.pluginId());
        assertFalse(o.controllerPublish());
        assertEquals(8083, o.httpPort());
    }

    @Test
    void delaysTakeAUnitExceptZero() {
        assertEquals(Duration.ZERO, NodeSimulator.duration("plugin-delay", "0"));
        assertEquals(Duration.ofNanos(500_000), NodeSimulator.duration("plugin-delay", "500us"));
        assertEquals(Duration.ofMillis(20), NodeSimulator.duration("plugin-delay", "20ms"));
        assertEquals(Duration.ofSeconds(2), NodeSimulator.duration("plugin-delay", "2s"));
        assertEquals(Duration.ofMinutes(1), NodeSimulator.duration("plugin-delay", "1m"));
        for (String bad : new String[] {"5", "-1ms", "1h", "fast", ""}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> NodeSimulator.duration("plugin-delay", bad), bad);
            assertTrue(e.getMessage().contains("--plugin-delay must be a duration"), e.getMessage());
        }
    }

    @Test
    void refusesWhatCannotRun() {
        String[][] bad = {
                {"--root", "/tmp/sim"},
                {"--nodes", "0", "--root", "/tmp/sim"},
                {"--nodes", "10001", "--root", "/tmp/sim"},
                {"--nodes", "2", "--root", "/tmp/sim", "--plugin-id", "../etc"},
                {"--nodes", "2", "--root", "/tmp/sim", "--node-prefix", "../"},
                {"--nodes", "2", "--root", "/tmp/sim", "--heartbeat-interval", "0"},
                {"--nodes", "2", "--root", "/tmp/sim", "--colour", "red"},
        };
        for (String[] argv : bad) {
            assertThrows(IllegalArgumentException.class, () -> NodeSimulator.parse(argv), String.join(" ", argv));
        }
        assertTrue(NodeSimulator.parse(new String[] {"--nodes", "1", "--root", "/r", "--controller-publish"})
                .controllerPublish());
    }
}
