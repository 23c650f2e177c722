package io.csiorchestrator.cli;

import io.csiorchestrator.localinfra.FreePorts;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Ports for the services of `./csi up --free-ports`: outside the range outgoing connections take ports from. */
class ClusterPortsTest {

    @Test
    void freePortsAreDistinctBindableAndBelowTheEphemeralRange() {
        int ephemeralLow = FreePorts.ephemeralLow();
        Set<Integer> ports = new HashSet<>();
        for (int i = 0; i < 50; i++) {
            int port = FreePorts.take();
            assertTrue(port < ephemeralLow, port + " is in the ephemeral range from " + ephemeralLow);
            assertTrue(FreePorts.free(port), port + " is free");
            ports.add(port);
        }
        assertEquals(50, ports.size(), "never the same port twice");
    }

    @Test
    void aBandPropertyKeepsThePortsOfOneProcessApartFromAnothers() {
        assertArrayEquals(new int[] {20000, 32767}, FreePorts.band(null, 20000, 32767), "no band: the whole range");
        assertArrayEquals(new int[] {20000, 26000}, FreePorts.band("20000-26000", 20000, 32767));
        assertArrayEquals(new int[] {26001, 30000}, FreePorts.band(" 26001 - 40000 ", 20000, 30000),
                "clipped to the range below the ephemeral ports");
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> FreePorts.band("20000..26000", 20000, 32767));
        assertTrue(bad.getMessage().contains("csi.free-ports=20000..26000"), bad.getMessage());
        IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                () -> FreePorts.band("40000-50000", 20000, 32767));
        assertTrue(small.getMessage().contains("fewer than 100 ports"), small.getMessage());
    }

    /**
     * What `up` waits for before it returns: claim-service's placement entries list a plugin healthy on every node
     * (an unhealthy entry, another plugin's, a capacity entry and a node listed twice do not count).
     */
    @Test
    void upCountsTheDistinctNodesClaimServicePlacesAPluginOn() throws Exception {
        var entries = new com.fasterxml.jackson.databind.ObjectMapper().readTree("""
                [{"kind":"node","pluginId":"hostpath","nodeId":"node-1","healthy":true,"maxVolumes":0},
                 {"kind":"node","pluginId":"hostpath","nodeId":"node-1","healthy":true},
                 {"kind":"node","pluginId":"hostpath","nodeId":"node-2","healthy":false},
                 {"kind":"node","pluginId":"other","nodeId":"node-2","healthy":true},
                 {"kind":"capacity","pluginId":"hostpath","segment":{"zone":"a"},"availableCapacity":1}]
                """);
        assertEquals(1, Cluster.healthyPlacementNodes(entries, "hostpath"));
        assertEquals(0, Cluster.healthyPlacementNodes(entries, "absent"));
    }
}
