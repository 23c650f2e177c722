package io.csiorchestrator.cli;

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
        int ephemeralLow = Cluster.ephemeralLow();
        Set<Integer> ports = new HashSet<>();
        for (int i = 0; i < 50; i++) {
            int port = Cluster.freePort();
            assertTrue(port < ephemeralLow, port + " is in the ephemeral range from " + ephemeralLow);
            assertTrue(Cluster.portFree(port), port + " is free");
            ports.add(port);
        }
        assertEquals(50, ports.size(), "never the same port twice");
    }

    @Test
    void aBandPropertyKeepsThePortsOfOneProcessApartFromAnothers() {
        assertArrayEquals(new int[] {20000, 32767}, Cluster.freePortBand(null, 20000, 32767), "no band: the whole range");
        assertArrayEquals(new int[] {20000, 26000}, Cluster.freePortBand("20000-26000", 20000, 32767));
        assertArrayEquals(new int[] {26001, 30000}, Cluster.freePortBand(" 26001 - 40000 ", 20000, 30000),
                "clipped to the range below the ephemeral ports");
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> Cluster.freePortBand("20000..26000", 20000, 32767));
        assertTrue(bad.getMessage().contains("csi.free-ports=20000..26000"), bad.getMessage());
        IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                () -> Cluster.freePortBand("40000-50000", 20000, 32767));
        assertTrue(small.getMessage().contains("fewer than 100 ports"), small.getMessage());
    }
}
