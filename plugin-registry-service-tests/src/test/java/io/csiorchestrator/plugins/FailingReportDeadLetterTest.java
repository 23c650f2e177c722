package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.deadLetterTopic;
import static io.csiorchestrator.plugins.HealthRecords.healthTopic;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.sendToPartition0;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.RefusingTrigger;
import io.quarkus.test.junit.QuarkusTest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A valid report whose recording keeps failing for a reason other than the database being away (a
 * trigger added by the test through its own JDBC connection refuses its instance row) is tried 9
 * times (retried 8 times), then goes to {@code plugin-health-dead-letter} with the failure as its
 * reason, and the partition moves on: the report after it is recorded. The 8 retries are counted in
 * {@code csi_plugin_health_report_retries_total{failure="other"}}, the dead letter in
 * {@code csi_plugin_health_reports_total{outcome="failed"}}.
 */
@QuarkusTest
class FailingReportDeadLetterTest {

    final KafkaTestClient kafka = KafkaTestClient.forSharedBroker();

    @AfterEach
    void close() {
        kafka.close();
    }

    @Test
    void aReportThatKeepsFailingIsRetriedEightTimesThenDeadLetteredAndThePartitionMovesOn() throws Exception {
        String refusedPlugin = uniquePluginId("refused");
        String nextPlugin = uniquePluginId("after-refused");
        // Every try of this plugin's report fails inside its transaction (not the database being away) and is counted.
        try (RefusingTrigger trigger = RefusingTrigger.install(ConfigProvider.getConfig().getValue("quarkus.datasource.jdbc.url", String.class),
                "plugin_instance", "INSERT OR UPDATE", "plugin_id", refusedPlugin, "test trigger refuses the instance of plugin")) {
            double retriesBefore = scraped("csi_plugin_health_report_retries_total", "failure=\"other\"");
            double failedBefore = scraped("csi_plugin_health_reports_total", "outcome=\"failed\"");
            PluginHealth refused = node(refusedPlugin, "n1", true, now());
            // One partition, the valid report last: it is only recorded once the partition got past the refused one.
            sendToPartition0(kafka, refused);
            sendToPartition0(kafka, node(nextPlugin, "n1", true, now()));

            ConsumerRecord<String, String> dead = kafka.awaitRecord(deadLetterTopic(),
                    r -> refused.recordKey().equals(r.key()), HealthRecords.TIMEOUT);
            assertEquals(EventCodec.encodeToString(refused), dead.value(), "the record goes as it was");
            assertEquals(healthTopic(), KafkaTestClient.header(dead, DeadLetters.TOPIC));
            String why = KafkaTestClient.header(dead, DeadLetters.REASON);
            assertNotNull(why, "dead-letter reason header");
            assertTrue(why.contains("test trigger refuses the instance of plugin " + refusedPlugin), why);
            awaitStatus(kafka, nextPlugin, counts(0, 0, 1, 1));

            long tries = trigger.attempts();
            assertEquals(9, tries, "tried once and retried 8 times");
            assertEquals(8, scraped("csi_plugin_health_report_retries_total", "failure=\"other\"") - retriesBefore, 0.0,
                    "retries counted");
            assertEquals(1, scraped("csi_plugin_health_reports_total", "outcome=\"failed\"") - failedBefore, 0.0,
                    "the dead-lettered report counted as failed");
            assertTrue(HealthRecords.statusRecords(kafka, refusedPlugin).isEmpty(), "nothing published for the refused report");
        }
    }

    /** The sample of {@code name} with {@code label} as /q/metrics shows it (0 before the first). */
    static double scraped(String name, String label) {
        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
        Matcher m = Pattern.compile("^" + Pattern.quote(name) + "\\{[^}]*" + Pattern.quote(label) + "[^}]*} ([0-9.eE+-]+)",
                Pattern.MULTILINE).matcher(metrics);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }
}
