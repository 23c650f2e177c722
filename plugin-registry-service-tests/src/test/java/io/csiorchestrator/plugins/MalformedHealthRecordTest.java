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
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.testkit.HostileRecords;
import io.csiorchestrator.testkit.TestIdentities;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Malformed plugin-health records go to the dead-letter topic with their reason; the partition goes on:
 * a few named ones, and every kind of the shared {@link HostileRecords} list.
 */
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

    /**
     * Every kind of {@link HostileRecords} (bad CloudEvents headers, bodies that are not a report) sent to
     * one partition of plugin-health, then a valid report on the same partition: the report is recorded
     * (its plugin-status arrives within {@link HealthRecords#TIMEOUT}) and every hostile record is on the
     * dead-letter topic with a reason naming its header or field. The {@link HostileRecords#unauthentic} kinds too:
     * a well-formed report of node n1 unsigned, forged, signed by an unknown key, signed by node n2 ("node mismatch"),
     * or altered after signing.
     */
    @Test
    void everyHostileKindIsDeadLetteredWithItsReasonAndTheValidReportAfterThemIsRecorded() {
        String plugin = uniquePluginId("hostile");
        PluginHealth template = node(plugin, "n1", true, now());
        HostileRecords.Template shape = new HostileRecords.Template(template.recordKey(), EventCodec.encodeToString(template),
                HealthRecords.cloudEventHeaders(), EventType.PLUGIN_HEALTH.cloudEventType(), EventType.PLUGIN_STATUS.cloudEventType(),
                List.of("pluginId", "nodeId", "type", "healthy", "observedAt"), List.of("pluginId", "nodeId"), List.of("type"),
                List.of("observedAt"), EventCodec.encodeToString(new MountDone("cmd-1", "n1", NodeCommandKind.UNMOUNT, "ns1",
                        "vol-1", "alloc-1", true, null, null, Map.of(), null, null, now())));
        List<HostileRecords.Kind> kinds = new java.util.ArrayList<>(HostileRecords.of(shape));
        assertTrue(kinds.size() >= 50, kinds.size() + " kinds");
        kinds.addAll(HostileRecords.unauthentic(shape, TestIdentities.node("n1"), TestIdentities.node("n2"),
                TestIdentities.stranger(TestIdentities.node("n1").principal()), "node mismatch", 0));
        Map<HostileRecords.Kind, RecordMetadata> sent = HostileRecords.send(kafka, healthTopic(), kinds);

        HealthRecords.send(kafka, node(plugin, "n1", true, now()));
        awaitStatus(kafka, plugin, counts(0, 0, 1, 1));
        List<String> problems = HostileRecords.deadLetterProblems(kafka, deadLetterTopic(), sent, HealthRecords.TIMEOUT);
        assertEquals(List.of(), problems, problems.size() + " of " + sent.size()
                + " hostile plugin-health records not dead-lettered with their reason");
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
