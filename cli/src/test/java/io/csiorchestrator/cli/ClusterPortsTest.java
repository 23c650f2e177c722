package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
}
