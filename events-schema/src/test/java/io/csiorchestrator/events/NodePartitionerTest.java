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

    @Test
    void isStableAcrossCalls() {
        // Pinned values: a change here would strand every running worker on the wrong partition.
        assertEquals(NodePartitioner.partitionFor("node-1", 12), NodePartitioner.partitionFor("node-1", 12));
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
