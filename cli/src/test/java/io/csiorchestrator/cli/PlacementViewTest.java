package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** {@code ./csi node status}'s placement tables: what claim-service wrote to the placement topic. */
class PlacementViewTest {

    @Test
    void nodeEntriesShowTopologyHeldOverLimitAndHealthAndCapacityEntriesTheirSegment() throws Exception {
        JsonNode entries = new ObjectMapper().readTree("""
                [{"kind":"node","pluginId":"hp","nodeId":"node-1","accessibleTopology":{"zone":"a","rack":"r1"},
                  "maxVolumes":2,"volumesHeld":2,"healthy":true},
                 {"kind":"node","pluginId":"hp","nodeId":"node-2","accessibleTopology":{"zone":"b"},
                  "maxVolumes":0,"volumesHeld":0,"healthy":false},
                 {"kind":"capacity","pluginId":"hp","segment":{"zone":"a"},"availableCapacity":1024,
                  "observedAt":"2026-11-29T12:00:00Z"}]""");
        String all = PlacementView.render(entries, null);
        String[] lines = all.split("\n");
        assertEquals("placement (what schedulers read on the placement topic):", lines[0]);
        assertTrue(all.matches("(?s).*hp +node-1 +rack=r1,zone=a +2 / 2 +healthy.*"), all);
        assertTrue(all.matches("(?s).*hp +node-2 +zone=b +0 / no limit +unhealthy.*"), all);
        assertTrue(all.matches("(?s).*hp +zone=a +1024 +- +2026-11-29T12:00:00Z.*"), all);

        String one = PlacementView.render(entries, "node-2");
        assertTrue(one.contains("node-2") && !one.contains("node-1"), one);
        assertFalse(one.contains("1024"), "capacity is per segment, not per node: " + one);
        assertTrue(PlacementView.render(new ObjectMapper().readTree("[]"), null).contains("no node entries"));
    }
}
