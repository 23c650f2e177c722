package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.deadLetterTopic;
import static io.csiorchestrator.plugins.HealthRecords.healthTopic;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.sendRawToPartition0;
import static io.csiorchestrator.plugins.HealthRecords.sendToPartition0;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Instant;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Malformed plugin-health records go to the dead-letter topic with their reason; the partition goes on. */
@QuarkusTest
class MalformedHealthRecordTest {

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
    void malformedRecordsAreDeadLetteredAndTheNextRecordIsProcessed() {
        String plugin = uniquePluginId("after-bad");
        Instant t = now();
        String notJsonKey = plugin + "/not-json";
        String missingKey = plugin + "/missing";
        String hostileKey = "../x/n1";
        String mismatchKey = plugin + "/mismatch";

        // All on one partition, the valid report last: it is only processed if none of the bad ones stalls it.
        sendRawToPartition0(kafka, notJsonKey, "this is { not json");
        String missing = EventCodec.encodeToString(node(plugin, "missing", true, t)).replace("\"healthy\":true,", "");
        sendRawToPartition0(kafka, missingKey, missing);
        String hostile = EventCodec.encodeToString(node(plugin, "n1", true, t)).replace("\"" + plugin + "\"", "\"../x\"");
        sendRawToPartition0(kafka, hostileKey, hostile);
        sendRawToPartition0(kafka, mismatchKey, EventCodec.encodeToString(node(plugin, "n9", true, t)));
        PluginHealth valid = node(plugin, "n1", true, t);
        sendToPartition0(kafka, valid);

        awaitStatus(kafka, plugin, counts(0, 0, 1, 1));

        String notJsonReason = reasonOf(deadLetter(notJsonKey));
        assertTrue(notJsonReason.contains("is not valid JSON"), notJsonReason);
        String missingReason = reasonOf(deadLetter(missingKey));
        assertTrue(missingReason.contains("field 'healthy' (absent): is required"), missingReason);
        String hostileReason = reasonOf(deadLetter(hostileKey));
        assertTrue(hostileReason.contains("field 'pluginId' '../x'"), hostileReason);
        ConsumerRecord<String, String> mismatch = deadLetter(mismatchKey);
        assertTrue(reasonOf(mismatch).contains("must be pluginId/nodeId '" + plugin + "/n9'"), reasonOf(mismatch));

        ConsumerRecord<String, String> dead = deadLetter(notJsonKey);
        assertEquals("this is { not json", dead.value(), "the record goes as it was");
        assertEquals(healthTopic(), KafkaTestClient.header(dead, DeadLetters.TOPIC));

        // Nothing of the bad records was stored.
        given().get("/v1/plugins/" + plugin).then().statusCode(200)
                .body("instances.size()", org.hamcrest.Matchers.equalTo(1))
                .body("instances[0].nodeId", org.hamcrest.Matchers.equalTo("n1"));
        given().get("/v1/plugins/x").then().statusCode(404);
    }

    private static ConsumerRecord<String, String> deadLetter(String key) {
        return kafka.awaitRecord(deadLetterTopic(), r -> key.equals(r.key()), HealthRecords.TIMEOUT);
    }

    private static String reasonOf(ConsumerRecord<String, String> record) {
        String reason = KafkaTestClient.header(record, DeadLetters.REASON);
        assertTrue(reason != null && !reason.isBlank(), "a dead-letter-reason header");
        return reason;
    }
}
