package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.send;
import static io.csiorchestrator.plugins.HealthRecords.statusTopic;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The sweep counts the instances it silences and removes; a removed plugin's gauges go. */
@QuarkusTest
@TestProfile(ShortTtlProfile.class)
class ExpiryMetricsTest {

    private static KafkaTestClient kafka;

    @BeforeAll
    static void client() {
        kafka = KafkaTestClient.forSharedBroker();
    }

    @AfterAll
    static void close() {
        kafka.close();
    }

    @Test
    void expiredInstancesAreCountedAndARemovedPluginLosesItsGauges() {
        String before = PrometheusText.scrape();
        double silenced0 = expired(before, "silenced");
        double removed0 = expired(before, "removed");

        String plugin = uniquePluginId("expiry-metrics");
        send(kafka, node(plugin, "n1", true, now()));
        awaitStatus(kafka, plugin, s -> s.nodesExpected() == 1);
        String registered = PrometheusText.scrape();
        assertEquals(1.0, PrometheusText.value(registered, "csi_plugin_nodes", Map.of("plugin", plugin, "state", "expected")));

        // Silent past the 2 s TTL, then past the 10 s removal delay: a tombstone.
        kafka.awaitRecord(statusTopic(), r -> plugin.equals(r.key()) && r.value() == null, Duration.ofSeconds(40));

        String after = PrometheusText.scrape();
        assertTrue(expired(after, "silenced") >= silenced0 + 1, "the silenced instance is counted");
        assertTrue(expired(after, "removed") >= removed0 + 1, "the removed instance is counted");
        assertTrue(PrometheusText.find(after, "csi_plugin_nodes", Map.of("plugin", plugin)).isEmpty(),
                "a removed plugin has no gauges");
        assertTrue(PrometheusText.find(after, "csi_plugin_controllers", Map.of("plugin", plugin)).isEmpty());
    }

    private static double expired(String text, String kind) {
        return PrometheusText.value(text, "csi_plugin_instances_expired_total", Map.of("kind", kind));
    }
}
