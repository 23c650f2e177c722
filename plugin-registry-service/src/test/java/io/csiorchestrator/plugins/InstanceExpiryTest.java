package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.monolith;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.send;
import static io.csiorchestrator.plugins.HealthRecords.statusTopic;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.path.json.JsonPath;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The TTL turns a silent instance unhealthy (published); long silence removes it, then the plugin (tombstone). */
@QuarkusTest
@TestProfile(ShortTtlProfile.class)
class InstanceExpiryTest {

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
    void aSilentInstanceTurnsUnhealthyRevivesAndTheSilentPluginIsRemoved() {
        String plugin = uniquePluginId("ttl");
        Instant t = now();
        send(kafka, monolith(plugin, "n1", true, t));
        send(kafka, node(plugin, "n2", true, t));
        // Both registered (on a slow machine n1 may already have turned silent by then).
        awaitStatus(kafka, plugin, s -> s.nodesExpected() == 2);

        // Nothing more arrives: after the 2 s TTL both turn unhealthy, and that is published.
        PluginStatus silent = awaitStatus(kafka, plugin, counts(0, 1, 0, 2));
        PluginStatus.NodeInstance n1 = silent.nodes().get(0);
        assertEquals("no heartbeat from node n1 for more than 2s", n1.healthDescription());
        assertEquals("no heartbeat from node n1 for more than 2s", silent.controllers().get(0).healthDescription());
        assertEquals("no heartbeat from node n2 for more than 2s", silent.nodes().get(1).healthDescription());
        JsonPath detail = given().get("/v1/plugins/" + plugin).then().statusCode(200).extract().jsonPath();
        assertEquals(0, detail.getInt("nodesHealthy"));
        assertEquals(true, detail.getBoolean("instances.find { it.nodeId == 'n2' }.reportedHealthy"));
        assertEquals("no heartbeat from node n2 for more than 2s",
                detail.getString("instances.find { it.nodeId == 'n2' }.silenceReason"));

        // n2 is heard from again: healthy again, n1 stays silent.
        Instant later = t.plusSeconds(5);
        send(kafka, node(plugin, "n2", true, later));
        PluginStatus revived = awaitStatus(kafka, plugin, s -> counts(0, 1, 1, 2).test(s)
                && s.nodes().get(1).lastSeen().equals(later));
        assertTrue(revived.nodes().get(1).healthy());
        assertEquals("ready", revived.nodes().get(1).healthDescription());

        // Silent past the 10 s removal delay: n1 goes, then n2, then the plugin with a tombstone.
        awaitStatus(kafka, plugin, s -> s.nodesExpected() == 1 && s.controllersExpected() == 0);
        ConsumerRecord<String, String> tombstone = kafka.awaitRecord(statusTopic(),
                r -> plugin.equals(r.key()) && r.value() == null, Duration.ofSeconds(30));
        assertNull(tombstone.value());
        assertEquals(EventType.PLUGIN_STATUS.cloudEventType(), CloudEventHeaders.requireValid(tombstone.headers(), EventType.PLUGIN_STATUS).type());
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> given().get("/v1/plugins/" + plugin).then().statusCode(404));
        List<String> listed = given().get("/v1/plugins").then().statusCode(200).extract().jsonPath().getList("id");
        assertFalse(listed.contains(plugin));

        // A report after the removal registers the plugin afresh.
        send(kafka, node(plugin, "n3", true, Instant.now()));
        PluginStatus again = awaitStatus(kafka, plugin, s -> s.nodesExpected() == 1 && s.nodes().get(0).nodeId().equals("n3"));
        assertTrue(again.nodes().get(0).healthy());
    }
}
