package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.sendRawToPartition0;
import static io.csiorchestrator.plugins.HealthRecords.sendToPartition0;
import static io.csiorchestrator.plugins.HealthRecords.controller;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code /q/metrics}: report outcomes, the report latency histogram (one observation per report under its
 * outcome, cumulative buckets; no bound on the latency itself) and the per-plugin gauges.
 */
@QuarkusTest
class MetricsEndpointTest {

    private static final List<String> BUCKETS = List.of("0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1.0",
            "2.5", "5.0", "10.0", "30.0", "60.0", "+Inf");

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
    void reportsAreCountedByOutcomeTimedAndThePluginsCountsAreGauges() {
        String before = PrometheusText.scrape();
        double changed0 = counter(before, "changed");
        double duplicate0 = counter(before, "duplicate");
        double stale0 = counter(before, "stale");
        double heartbeat0 = counter(before, "heartbeat");
        double malformed0 = counter(before, "malformed");
        Map<String, Integer> reportsByOutcome = Map.of("changed", 3, "duplicate", 1, "stale", 1, "heartbeat", 1);
        Map<String, Double> latencyCount0 = new HashMap<>();
        reportsByOutcome.keySet().forEach(outcome -> latencyCount0.put(outcome, latencyCount(before, outcome)));

        String plugin = uniquePluginId("metrics");
        Instant t = now();
        PluginHealth first = node(plugin, "n1", true, t.plusSeconds(10));
        sendToPartition0(kafka, first);                                   // changed
        sendToPartition0(kafka, first);                                   // duplicate
        sendToPartition0(kafka, node(plugin, "n1", false, t));            // stale
        sendToPartition0(kafka, node(plugin, "n1", true, t.plusSeconds(20))); // heartbeat
        sendRawToPartition0(kafka, plugin + "/n1", "not json");           // malformed
        sendToPartition0(kafka, node(plugin, "n2", false, t));            // changed
        sendToPartition0(kafka, controller(plugin, "c1", true, t));      // changed
        awaitStatus(kafka, plugin, counts(1, 1, 1, 2));

        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            String text = PrometheusText.scrape();
            assertTrue(counter(text, "changed") >= changed0 + 3, "changed");
            assertTrue(counter(text, "duplicate") >= duplicate0 + 1, "duplicate");
            assertTrue(counter(text, "stale") >= stale0 + 1, "stale");
            assertTrue(counter(text, "heartbeat") >= heartbeat0 + 1, "heartbeat");
            assertTrue(counter(text, "malformed") >= malformed0 + 1, "malformed");
            // The gauges of this plugin: 1 of 2 nodes healthy, 1 of 1 controller.
            assertEquals(1.0, gauge(text, "csi_plugin_nodes", plugin, "healthy"));
            assertEquals(2.0, gauge(text, "csi_plugin_nodes", plugin, "expected"));
            assertEquals(1.0, gauge(text, "csi_plugin_controllers", plugin, "healthy"));
            assertEquals(1.0, gauge(text, "csi_plugin_controllers", plugin, "expected"));
        });

        // Each valid report's latency is recorded once, under its outcome; no time bound is asserted.
        String text = PrometheusText.scrape();
        reportsByOutcome.forEach((outcome, reports) -> {
            double count = latencyCount(text, outcome);
            assertTrue(count >= latencyCount0.get(outcome) + reports,
                    outcome + ": latency count " + count + ", was " + latencyCount0.get(outcome) + " before " + reports + " report(s)");
            double below = 0;
            for (String le : BUCKETS) {
                double bucket = PrometheusText.value(text, "csi_plugin_health_report_latency_seconds_bucket",
                        Map.of("outcome", outcome, "le", le));
                assertTrue(bucket >= below, outcome + ": buckets are cumulative, le=" + le);
                below = bucket;
            }
            assertEquals(count, below, outcome + ": the +Inf bucket holds every recorded report");
        });
        // No node id ever becomes a tag.
        assertTrue(PrometheusText.samples(text).stream().noneMatch(s -> s.labels().containsValue("n1")));
    }

    private static double latencyCount(String text, String outcome) {
        return PrometheusText.value(text, "csi_plugin_health_report_latency_seconds_count", Map.of("outcome", outcome));
    }

    private static double counter(String text, String outcome) {
        return PrometheusText.value(text, "csi_plugin_health_reports_total", Map.of("outcome", outcome));
    }

    private static double gauge(String text, String name, String plugin, String state) {
        return PrometheusText.value(text, name, Map.of("plugin", plugin, "state", state));
    }
}
