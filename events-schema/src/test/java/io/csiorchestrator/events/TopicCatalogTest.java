package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class TopicCatalogTest {

    @Test
    void prefixesEveryTopicAndItsDeadLetter() {
        TopicCatalog catalog = new TopicCatalog("prod.");
        assertEquals("prod.node-commands", catalog.name(Topic.NODE_COMMANDS));
        assertEquals("prod.claim-requested-dead-letter", catalog.deadLetterName(Topic.CLAIM_REQUESTED));
        assertEquals(List.of("prod.claim-requested", "prod.claim-status", "prod.node-commands", "prod.mount-done",
                "prod.plugin-health", "prod.plugin-status", "prod.node-events", "prod.node-state",
                "prod.node-lease-requests", "prod.node-leases", "prod.volume-status", "prod.placement"), List.copyOf(catalog.all().keySet()));
    }

    @Test
    void onlyPluginStatusNodeStateNodeLeasesAndPlacementAreCompacted() {
        // all four are latest-value-per-key topics: a plugin's status, a node's actual state, a node's lease, a
        // placement entry (issue 34)
        for (Topic topic : Topic.values()) {
            assertEquals(topic == Topic.PLUGIN_STATUS || topic == Topic.NODE_STATE || topic == Topic.NODE_LEASES
                            || topic == Topic.PLACEMENT,
                    topic.compacted(), topic.baseName());
            assertTrue(topic.defaultPartitions() > 0);
        }
    }

    @Test
    void rejectsAPrefixThatIsNotATopicName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new TopicCatalog("a b"));
        assertTrue(e.getMessage().contains("csi.topics.prefix"), e.getMessage());
    }
}
