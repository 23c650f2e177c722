package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.awaitStatusRecord;
import static io.csiorchestrator.plugins.HealthRecords.controller;
import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.monolith;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.send;
import static io.csiorchestrator.plugins.HealthRecords.sendToPartition0;
import static io.csiorchestrator.plugins.HealthRecords.statusRecords;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** plugin-health in, plugin-status out, and the REST API, against real Kafka and PostgreSQL. */
@QuarkusTest
class PluginHealthFlowTest {

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
    void controllerNodeAndMonolithPluginsAcrossNodes() {
        String split = uniquePluginId("split");
        String mono = uniquePluginId("mono");
        String nodesOnly = uniquePluginId("nodes-only");
        Instant t = now();
        send(kafka, controller(split, "c1", true, t, PluginHealth.PUBLISH_UNPUBLISH_VOLUME, "CREATE_DELETE_VOLUME"));
        send(kafka, node(split, "n1", true, t));
        send(kafka, node(split, "n2", true, t));
        send(kafka, node(split, "n3", false, t));
        send(kafka, monolith(mono, "n1", true, t));
        send(kafka, monolith(mono, "n2", true, t));
        send(kafka, node(nodesOnly, "n1", true, t));
        send(kafka, node(nodesOnly, "n2", true, t));

        ConsumerRecord<String, String> splitRecord = awaitStatusRecord(kafka, split, counts(1, 1, 2, 3));
        PluginStatus splitStatus = HealthRecords.decodeStatus(splitRecord);
        assertTrue(splitStatus.controllerRequired());
        assertEquals("hostpath.csi.example", splitStatus.providerName());
        assertEquals("1.2.0", splitStatus.providerVersion());
        assertEquals(List.of("c1"), splitStatus.controllers().stream().map(PluginStatus.ControllerInstance::nodeId).toList());
        PluginStatus.NodeInstance n3 = splitStatus.nodes().get(2);
        assertEquals("n3", n3.nodeId());
        assertFalse(n3.healthy());
        assertEquals("probe failed", n3.healthDescription());
        assertEquals("ext-n3", n3.externalNodeId());
        assertEquals(16L, n3.maxVolumes());
        assertEquals(Map.of("topology.example/zone", "z1"), n3.accessibleTopology());
        CloudEventHeaders ce = CloudEventHeaders.requireValid(splitRecord.headers(), EventType.PLUGIN_STATUS);
        assertEquals(EventType.PLUGIN_STATUS.cloudEventType(), ce.type());
        assertEquals("/plugin-registry-service", ce.source());

        PluginStatus monoStatus = awaitStatus(kafka, mono, counts(2, 2, 2, 2));
        assertFalse(monoStatus.controllerRequired());
        assertEquals("0.9.1", monoStatus.providerVersion());
        PluginStatus nodesOnlyStatus = awaitStatus(kafka, nodesOnly, counts(0, 0, 2, 2));
        assertFalse(nodesOnlyStatus.controllerRequired());

        // The REST answers agree with what was published.
        for (PluginStatus status : List.of(splitStatus, monoStatus, nodesOnlyStatus)) {
            assertRestAgrees(status);
        }
        JsonPath list = given().get("/v1/plugins").then().statusCode(200).extract().jsonPath();
        assertEquals(1, list.getInt("find { it.id == '" + split + "' }.controllersHealthy"));
        assertEquals(3, list.getInt("find { it.id == '" + split + "' }.nodesExpected"));
        assertEquals(true, list.getBoolean("find { it.id == '" + split + "' }.controllerRequired"));
        assertEquals("hostpath.csi.example", list.getString("find { it.id == '" + split + "' }.providerName"));
        assertEquals(2, list.getInt("find { it.id == '" + mono + "' }.controllersExpected"));

        JsonPath detail = given().get("/v1/plugins/" + split).then().statusCode(200).extract().jsonPath();
        assertEquals(List.of("c1", "n1", "n2", "n3"), detail.getList("instances.nodeId"));
        assertEquals(List.of("PUBLISH_UNPUBLISH_VOLUME", "CREATE_DELETE_VOLUME"),
                detail.getList("instances.find { it.nodeId == 'c1' }.controllerCapabilities"));
        assertEquals("controller", detail.getString("instances.find { it.nodeId == 'c1' }.type"));
        assertEquals("ext-n2", detail.getString("instances.find { it.nodeId == 'n2' }.nodeInfo.externalNodeId"));
        assertEquals(t, Instant.parse(detail.getString("instances.find { it.nodeId == 'n2' }.lastHeartbeat")));
    }

    @Test
    void aNodeRestartingItsPluginKeepsTheCountsRight() {
        String plugin = uniquePluginId("restart");
        Instant t = now();
        sendToPartition0(kafka, controller(plugin, "c1", true, t));
        sendToPartition0(kafka, node(plugin, "n1", true, t));
        sendToPartition0(kafka, node(plugin, "n2", true, t));
        awaitStatus(kafka, plugin, counts(1, 1, 2, 2));

        // n1's plugin restarts three times: unhealthy (shutdown fingerprint), then healthy again.
        for (int i = 1; i <= 3; i++) {
            sendToPartition0(kafka, node(plugin, "n1", false, t.plusSeconds(2L * i)));
            sendToPartition0(kafka, node(plugin, "n1", true, t.plusSeconds(2L * i + 1)));
        }
        // The controller restarts too.
        sendToPartition0(kafka, controller(plugin, "c1", false, t.plusSeconds(10)));
        sendToPartition0(kafka, controller(plugin, "c1", true, t.plusSeconds(11)));
        Instant last = t.plusSeconds(11);
        PluginStatus settled = awaitStatus(kafka, plugin, s -> counts(1, 1, 2, 2).test(s)
                && s.controllers().get(0).lastSeen().equals(last));

        List<PluginStatus> all = statusRecords(kafka, plugin).stream().map(HealthRecords::decodeStatus).toList();
        // From the moment all three instances are registered on:
        List<PluginStatus> published = all.subList(all.indexOf(all.stream().filter(counts(1, 1, 2, 2)).findFirst().orElseThrow()), all.size());
        assertTrue(published.size() >= 9, "every transition was published: " + published.size());
        for (PluginStatus status : published) {
            assertEquals(2, status.nodesExpected(), "expected nodes never drift");
            assertEquals(1, status.controllersExpected(), "expected controllers never drift");
            assertTrue(status.nodesHealthy() <= 2 && status.controllersHealthy() <= 1);
        }
        assertTrue(published.stream().anyMatch(counts(1, 1, 1, 2)), "n1 down was published");
        assertTrue(published.stream().anyMatch(counts(0, 1, 2, 2)), "c1 down was published");
        assertRestAgrees(settled);
    }

    /**
     * A worker's last report of an instance it removed ({@code deregistered}: its socket stayed unreachable) deletes
     * the instance at once: the counts and the node list drop it (no waiting for the removal delay), the same report
     * redelivered changes nothing, the plugin's last instance deregistered removes the plugin (tombstone, 404), and a
     * later report registers it afresh.
     */
    @Test
    void aDeregisteredInstanceIsRemovedAtOnceAndTheCountsFollow() {
        String plugin = uniquePluginId("dereg");
        Instant t = now();
        sendToPartition0(kafka, node(plugin, "n1", true, t));
        sendToPartition0(kafka, node(plugin, "n2", true, t));
        awaitStatus(kafka, plugin, counts(0, 0, 2, 2));
        sendToPartition0(kafka, node(plugin, "n1", false, t.plusSeconds(1)));
        awaitStatus(kafka, plugin, counts(0, 0, 1, 2));

        PluginHealth gone = deregistered(node(plugin, "n1", false, t.plusSeconds(31)));
        sendToPartition0(kafka, gone);
        PluginStatus afterDeregistration = awaitStatus(kafka, plugin, counts(0, 0, 1, 1)
                .and(s -> s.nodes().stream().map(PluginStatus.NodeInstance::nodeId).toList().equals(List.of("n2"))));
        assertRestAgrees(afterDeregistration);
        JsonPath detail = given().get("/v1/plugins/" + plugin).then().statusCode(200).extract().jsonPath();
        assertEquals(List.of("n2"), detail.getList("instances.nodeId"));

        sendToPartition0(kafka, gone); // redelivered: no instance comes back, nothing else changes
        sendToPartition0(kafka, deregistered(node(plugin, "n2", false, t.plusSeconds(32))));
        ConsumerRecord<String, String> tombstone = kafka.awaitRecord(HealthRecords.statusTopic(),
                r -> plugin.equals(r.key()) && r.value() == null, HealthRecords.TIMEOUT);
        assertEquals(plugin, tombstone.key());
        assertTrue(statusRecords(kafka, plugin).stream().filter(r -> r.value() != null).map(HealthRecords::decodeStatus)
                .noneMatch(s -> s.nodesExpected() == 2 && s.updatedAt().isAfter(afterDeregistration.updatedAt())),
                "the redelivered deregistration never brought n1 back");
        await().atMost(HealthRecords.TIMEOUT).untilAsserted(() -> given().get("/v1/plugins/" + plugin).then().statusCode(404));

        sendToPartition0(kafka, node(plugin, "n1", true, t.plusSeconds(40)));
        assertRestAgrees(awaitStatus(kafka, plugin, counts(0, 0, 1, 1)
                .and(s -> s.updatedAt().isAfter(afterDeregistration.updatedAt()))));
    }

    private static PluginHealth deregistered(PluginHealth h) {
        return new PluginHealth(h.pluginId(), h.nodeId(), h.type(), false, "socket unreachable for 30s; deregistered",
                h.providerName(), h.providerVersion(), h.pluginCapabilities(), h.controllerCapabilities(),
                h.nodeCapabilities(), h.nodeInfo(), false, h.observedAt(), true);
    }

    @Test
    void olderAndDuplicatedReportsChangeNothing() {
        String plugin = uniquePluginId("order");
        Instant t = now();
        PluginHealth current = node(plugin, "n1", true, t.plusSeconds(10));
        sendToPartition0(kafka, current);
        ConsumerRecord<String, String> first = awaitStatusRecord(kafka, plugin, counts(0, 0, 1, 1));

        sendToPartition0(kafka, node(plugin, "n1", false, t)); // observed before the stored report
        sendToPartition0(kafka, current); // redelivered
        sendToPartition0(kafka, current);
        PluginHealth heartbeat = node(plugin, "n1", true, t.plusSeconds(40)); // newer, same state
        sendToPartition0(kafka, heartbeat);
        sendToPartition0(kafka, node(plugin, "n1", false, t.plusSeconds(20))); // older than the heartbeat
        // A marker on the same partition: once its effect is published, everything before it was processed.
        sendToPartition0(kafka, node(plugin, "n2", true, t.plusSeconds(41)));
        awaitStatus(kafka, plugin, counts(0, 0, 2, 2));

        List<ConsumerRecord<String, String>> records = statusRecords(kafka, plugin);
        List<ConsumerRecord<String, String>> beforeMarker = records.subList(0, records.size() - 1);
        for (ConsumerRecord<String, String> record : beforeMarker) {
            assertEquals(first.value(), record.value(), "a duplicate publishes the same status again, nothing else");
        }
        assertEquals(2, HealthRecords.decodeStatus(records.get(records.size() - 1)).nodesHealthy());
        assertTrue(records.stream().map(HealthRecords::decodeStatus).allMatch(s -> s.nodes().get(0).healthy()),
                "no older report ever made n1 unhealthy");

        JsonPath detail = given().get("/v1/plugins/" + plugin).then().statusCode(200).extract().jsonPath();
        assertEquals(true, detail.getBoolean("instances.find { it.nodeId == 'n1' }.healthy"));
        assertEquals(heartbeat.observedAt(), Instant.parse(detail.getString("instances.find { it.nodeId == 'n1' }.lastHeartbeat")),
                "the newer heartbeat is stored");
        assertEquals(2, detail.getInt("nodesHealthy"));
    }

    @Test
    void reportsOfOnePluginFromManyNodesOnManyPartitionsAddUp() {
        String plugin = uniquePluginId("many");
        Instant t = now();
        for (int i = 0; i < 12; i++) {
            send(kafka, node(plugin, "node-" + i, i % 3 != 0, t));
        }
        for (int i = 0; i < 12; i += 3) {
            send(kafka, node(plugin, "node-" + i, true, t.plusSeconds(1)));
        }
        PluginStatus status = awaitStatus(kafka, plugin, counts(0, 0, 12, 12));
        assertRestAgrees(status);
    }

    @Test
    void unknownPluginIs404AndAnInvalidIdIs400() {
        given().get("/v1/plugins/" + uniquePluginId("absent")).then().statusCode(404)
                .body("error", org.hamcrest.Matchers.containsString("not found"));
        given().get("/v1/plugins/-leading-dash").then().statusCode(400)
                .body("error", equalTo("invalid request"))
                .body("problems[0].field", equalTo("id"))
                .body("problems[0].reason", org.hamcrest.Matchers.containsString("must start with a letter or digit"));
        given().get("/v1/plugins/a..b").then().statusCode(400)
                .body("problems[0].reason", equalTo("must not contain '..'"));
    }

    @Test
    void openApiDescribesTheApi() {
        given().get("/q/openapi?format=json").then().statusCode(200)
                .body("paths.keySet()", hasItem("/v1/plugins"))
                .body("paths.keySet()", hasItem("/v1/plugins/{id}"));
    }

    /**
     * The REST API shows what the status says (once the service stored it, which it did before publishing). Within
     * 30 s: the first REST request of a test profile (client and server cold) took over 10 s on a loaded 2-core machine.
     */
    static void assertRestAgrees(PluginStatus status) {
        await().atMost(HealthRecords.TIMEOUT).untilAsserted(() -> {
            JsonPath detail = given().get("/v1/plugins/" + status.pluginId()).then().statusCode(200).extract().jsonPath();
            assertEquals(status.controllersHealthy(), detail.getInt("controllersHealthy"));
            assertEquals(status.controllersExpected(), detail.getInt("controllersExpected"));
            assertEquals(status.nodesHealthy(), detail.getInt("nodesHealthy"));
            assertEquals(status.nodesExpected(), detail.getInt("nodesExpected"));
            assertEquals(status.controllerRequired(), detail.getBoolean("controllerRequired"));
            assertEquals(status.providerName(), detail.getString("providerName"));
            for (PluginStatus.NodeInstance n : status.nodes()) {
                String path = "instances.find { it.nodeId == '" + n.nodeId() + "' }";
                assertEquals(n.healthy(), detail.getBoolean(path + ".healthy"), n.nodeId());
                assertEquals(n.healthDescription(), detail.getString(path + ".healthDescription"), n.nodeId());
                assertEquals(n.externalNodeId(), detail.getString(path + ".nodeInfo.externalNodeId"), n.nodeId());
            }
            for (PluginStatus.ControllerInstance c : status.controllers()) {
                String path = "instances.find { it.nodeId == '" + c.nodeId() + "' }";
                assertEquals(c.healthy(), detail.getBoolean(path + ".healthy"), c.nodeId());
            }
        });
    }
}
