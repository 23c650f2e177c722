package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.junit.jupiter.api.Test;

class NodePartitionerTest {

    @Test
    void agreesWithKafkasRuleForKeyedRecords() {
        for (int partitions : new int[] {1, 3, 12, 64}) {
            for (int i = 0; i < 2_000; i++) {
                String node = "node-" + i;
                assertEquals(BuiltInPartitioner.partitionForKey(node.getBytes(StandardCharsets.UTF_8), partitions),
                        NodePartitioner.partitionFor(node, partitions), node + " over " + partitions);
            }
        }
    }

    /**
     * Pinned values, computed once from the rule as it is today and written down as literals: a change
     * of hash (or a kafka-clients upgrade that moved keys) would strand every running worker on the
     * wrong partition, and fails here even though {@link #agreesWithKafkasRuleForKeyedRecords} would
     * still pass. Columns: partition count 1, 3, 12, 50.
     */
    @Test
    void placesNodesOnPinnedPartitions() {
        Object[][] cases = {
            // node id     1  3   12  50
            {"node-1",     0, 1,  10, 46},
            {"node-2",     0, 0,  9,  47},
            {"node-3",     0, 0,  9,  43},
            {"node-4",     0, 0,  0,  38},
            {"node-5",     0, 2,  11, 25},
            {"node-6",     0, 1,  7,  5},
            {"node-7",     0, 0,  3,  9},
            {"node-8",     0, 1,  1,  21},
            {"worker-a",   0, 1,  10, 14},
            {"n",          0, 0,  9,  9},
        };
        int[] counts = {1, 3, 12, 50};
        for (Object[] c : cases) {
            String node = (String) c[0];
            for (int i = 0; i < counts.length; i++) {
                assertEquals((int) c[i + 1], NodePartitioner.partitionFor(node, counts[i]),
                        node + " over " + counts[i] + " partitions");
            }
        }
    }

    @Test
    void spreadsNodesOverAllPartitions() {
        Set<Integer> used = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            int p = NodePartitioner.partitionFor("node-" + i, 12);
            assertTrue(p >= 0 && p < 12);
            used.add(p);
        }
        assertEquals(12, used.size(), "200 nodes should spread over all 12 partitions");
    }

    @Test
    void refusesBadInput() {
        assertThrows(IllegalArgumentException.class, () -> NodePartitioner.partitionFor("../n", 12));
        assertThrows(IllegalArgumentException.class, () -> NodePartitioner.partitionFor("n", 0));
    }
}
