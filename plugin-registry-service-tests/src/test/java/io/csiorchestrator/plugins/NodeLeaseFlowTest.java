package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.cloudEventHeaders;
import static io.csiorchestrator.plugins.HealthRecords.healthTopic;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.topics;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.TestIdentities;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The registry as node authority (issue 19), against the real broker and PostgreSQL, with the test profile's lease
 * ttl of 3 s (budget 1 s): a first request is granted epoch 1 (persisted), a renewal keeps it, no renewal lapses it,
 * the next grant is epoch 2; REST and metrics show it; a heartbeat of the lapsed epoch is dead-lettered with the
 * reason; a malformed request is dead-lettered.
 */
@QuarkusTest
class NodeLeaseFlowTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static KafkaTestClient kafka;

    @Inject
    Pool pool;

    @BeforeAll
    static void client() {
        kafka = KafkaTestClient.forSharedBroker();
    }

    @AfterAll
    static void close() {
        kafka.close();
    }

    private static Map<String, String> headers(EventType type) {
        Map<String, String> headers = new HashMap<>();
        CloudEventHeaders ce = CloudEventHeaders.create(type, "/test");
        org.apache.kafka.common.header.internals.RecordHeaders h = new org.apache.kafka.common.header.internals.RecordHeaders();
        ce.writeTo(h);
        h.forEach(header -> headers.put(header.key(), new String(header.value(), java.nio.charset.StandardCharsets.UTF_8)));
        return headers;
    }

    private static String request(String node, long held) {
        String id = "req-" + UUID.randomUUID();
        NodeLeaseRequested r = new NodeLeaseRequested(id, node, held, Instant.now());
        String value = EventCodec.encodeToString(r);
        kafka.send(topics().name(Topic.NODE_LEASE_REQUESTS), node, value,
                TestIdentities.signed(TestIdentities.node(node), node, value, headers(EventType.NODE_LEASE_REQUESTED)));
        return id;
    }

    private static NodeLease awaitLease(String node, java.util.function.Predicate<NodeLease> which) {
        ConsumerRecord<String, String> record = kafka.awaitRecord(topics().name(Topic.NODE_LEASES),
                r -> node.equals(r.key()) && which.test(EventCodec.decode(NodeLease.class, r.value())), TIMEOUT);
        CloudEventHeaders.requireValid(record.headers(), EventType.NODE_LEASE);
        return EventCodec.decode(NodeLease.class, record.value());
    }

    private Row row(String node) {
        for (Row row : pool.preparedQuery("select epoch, state from node_leases where node_id = $1")
                .execute(Tuple.of(node)).await().atMost(Duration.ofSeconds(10))) {
            return row;
        }
        return null;
    }

    @Test
    void grantRenewLapseAndNextEpochThenAStaleHeartbeatIsDeadLettered() {
        String node = "lease-node-" + UUID.randomUUID().toString().substring(0, 8);

        String r1 = request(node, 0);
        NodeLease first = awaitLease(node, l -> r1.equals(l.requestId()));
        assertEquals(1, first.epoch());
        assertEquals(NodeLeaseState.VALID, first.state());
        assertEquals(3000, first.ttlMillis());
        assertEquals(1000, first.fenceBudgetMillis());
        assertEquals(1L, row(node).getLong("epoch"), "the new epoch is in PostgreSQL");

        String r2 = request(node, 1);
        NodeLease renewed = awaitLease(node, l -> r2.equals(l.requestId()));
        assertEquals(1, renewed.epoch(), "a renewal keeps the epoch");

        // no more renewals: the registry declares the lapse of epoch 1 by itself
        NodeLease lapse = awaitLease(node, l -> l.state() == NodeLeaseState.LAPSED);
        assertEquals(1, lapse.epoch());
        assertNull(lapse.requestId());
        assertEquals("lapsed", row(node).getString("state"));

        // the order on the (one) partition of this node: grant, renewal, lapse - no lapse before the last renewal
        List<NodeLease> all = kafka.readAll(topics().name(Topic.NODE_LEASES)).stream().filter(r -> node.equals(r.key()))
                .map(r -> EventCodec.decode(NodeLease.class, r.value())).toList();
        assertEquals(List.of(r1, r2), all.subList(0, 2).stream().map(NodeLease::requestId).toList());
        assertEquals(NodeLeaseState.LAPSED, all.get(2).state());

        String r3 = request(node, 1);
        NodeLease next = awaitLease(node, l -> r3.equals(l.requestId()));
        assertEquals(2, next.epoch(), "a lapsed epoch is never granted again");
        assertEquals(NodeLeaseState.VALID, next.state());
        assertEquals(2L, row(node).getLong("epoch"));

        JsonPath lease = given().get("/v1/nodes/" + node).then().statusCode(200).extract().jsonPath();
        assertEquals(2, lease.getInt("lease.epoch"));
        assertEquals("valid", lease.getString("lease.state"));
        assertTrue(lease.getString("lease.expiresAt") != null, "a valid lease has the registry's expiry estimate");
        assertTrue(lease.getBoolean("authority"), "the only instance owns every node's partition");
        assertEquals(2, given().get("/v1/nodes").then().statusCode(200).extract().jsonPath()
                .getInt("find { it.nodeId == '" + node + "' }.lease.epoch"));
        given().get("/v1/nodes/no-such-node-" + UUID.randomUUID()).then().statusCode(404);
        given().get("/v1/nodes/-x").then().statusCode(400);

        // a heartbeat of epoch 1 (a node back from a partition) is ignored and dead-lettered with the reason
        String plugin = uniquePluginId("stale");
        PluginHealth stale = node(plugin, node, true, now()).withLeaseEpoch(1L);
        HealthRecords.send(kafka, stale);
        ConsumerRecord<String, String> dead = kafka.awaitRecord(topics().deadLetterName(Topic.PLUGIN_HEALTH),
                r -> stale.recordKey().equals(r.key()), TIMEOUT);
        assertEquals("stale lease epoch 1 < 2 for " + node, KafkaTestClient.header(dead, DeadLetters.REASON));
        given().get("/v1/plugins/" + plugin).then().statusCode(404);
        // the current epoch is recorded as usual
        PluginHealth current = node(plugin, node, true, now()).withLeaseEpoch(2L);
        HealthRecords.send(kafka, current);
        HealthRecords.awaitStatus(kafka, plugin, HealthRecords.counts(0, 0, 1, 1));

        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
        assertTrue(metrics.contains("csi_node_lease_epoch{node=\"" + node + "\"} 2.0"), "epoch gauge");
        // epoch 2 may have lapsed meanwhile (ttl 3 s): exactly one state is 1, never fenced
        long ones = metrics.lines().filter(l -> l.startsWith("csi_node_lease_state{node=\"" + node + "\"")
                && l.endsWith(" 1.0")).count();
        assertEquals(1, ones, "one current state");
        assertTrue(metrics.contains("csi_node_lease_state{node=\"" + node + "\",state=\"fenced\"} 0.0"), "state gauge");
        assertTrue(java.util.regex.Pattern.compile("csi_node_lease_lapses_total\\{node=\"" + node + "\"\\} [12]\\.0")
                .matcher(metrics).find(), "lapse counter");
        assertTrue(metrics.contains("csi_registry_stale_epoch_total"), "stale counter");
    }

    /** A worker's FENCED node event fences its epoch: published as fenced, shown by REST, the next grant is epoch 2. */
    @Test
    void aFencedReportFencesTheEpochAndTheNextGrantIsHigher() {
        String node = "fenced-node-" + UUID.randomUUID().toString().substring(0, 8);
        String r1 = request(node, 0);
        assertEquals(1, awaitLease(node, l -> r1.equals(l.requestId())).epoch());

        kafka.createTopic(topics().name(Topic.NODE_EVENTS), 6, Map.of());
        io.csiorchestrator.events.NodeEvent fencedEvent = new io.csiorchestrator.events.NodeEvent(node, null,
                io.csiorchestrator.events.NodeEventKind.FENCED, "Fenced: lease not renewed", null, null, null, null,
                true, null, Map.of("epoch", "1", "fencedBy", "worker", "unmounted", "default/vol-1/a1"), Instant.now())
                .withLeaseEpoch(1L);
        String fencedValue = EventCodec.encodeToString(fencedEvent);
        kafka.send(topics().name(Topic.NODE_EVENTS), node, fencedValue,
                TestIdentities.signed(TestIdentities.node(node), node, fencedValue, headers(EventType.NODE_EVENT)));
        NodeLease fenced = awaitLease(node, l -> l.state() == NodeLeaseState.FENCED);
        assertEquals(1, fenced.epoch());
        JsonPath lease = given().get("/v1/nodes/" + node).then().statusCode(200).extract().jsonPath();
        assertEquals("fenced", lease.getString("lease.state"));
        assertEquals(1, lease.getInt("lease.fencedEpoch"));
        assertEquals("fenced", row(node).getString("state"));

        String r2 = request(node, 1);
        assertEquals(2, awaitLease(node, l -> r2.equals(l.requestId())).epoch(), "a fenced epoch is never renewed");
    }

    @Test
    void aMalformedLeaseRequestIsDeadLetteredWithItsReason() {
        String key = "bad-" + UUID.randomUUID();
        kafka.send(topics().name(Topic.NODE_LEASE_REQUESTS), key,
                "{\"requestId\":\"x\",\"nodeId\":\"../etc\",\"heldEpoch\":0,\"sentAt\":\"2026-11-24T21:00:00Z\"}",
                headers(EventType.NODE_LEASE_REQUESTED));
        ConsumerRecord<String, String> dead = kafka.awaitRecord(topics().deadLetterName(Topic.NODE_LEASE_REQUESTS),
                r -> key.equals(r.key()), TIMEOUT);
        assertTrue(KafkaTestClient.header(dead, DeadLetters.REASON).contains("nodeId"),
                KafkaTestClient.header(dead, DeadLetters.REASON));
    }

    /**
     * A node acts only as itself (issue 20 item 3): a well-formed lease request for node B signed by node A's trusted
     * key is dead-lettered "node mismatch" and grants B nothing; the same request signed by B is granted epoch 1.
     */
    @Test
    void aLeaseRequestSignedByAnotherNodeIsDeadLetteredNodeMismatchAndGrantsNothing() {
        String nodeA = "lease-a-" + UUID.randomUUID().toString().substring(0, 8);
        String nodeB = "lease-b-" + UUID.randomUUID().toString().substring(0, 8);
        NodeLeaseRequested forged = new NodeLeaseRequested("req-" + UUID.randomUUID(), nodeB, 0, Instant.now());
        String value = EventCodec.encodeToString(forged);
        kafka.send(topics().name(Topic.NODE_LEASE_REQUESTS), nodeB, value,
                TestIdentities.signed(TestIdentities.node(nodeA), nodeB, value, headers(EventType.NODE_LEASE_REQUESTED)));
        ConsumerRecord<String, String> dead = kafka.awaitRecord(topics().deadLetterName(Topic.NODE_LEASE_REQUESTS),
                r -> nodeB.equals(r.key()), TIMEOUT);
        String reason = KafkaTestClient.header(dead, DeadLetters.REASON);
        assertTrue(reason.contains("node mismatch") && reason.contains("node:" + nodeA), reason);

        String granted = request(nodeB, 0);
        assertEquals(1, awaitLease(nodeB, l -> granted.equals(l.requestId())).epoch(),
                "the forged request granted nothing: B's own first request gets epoch 1");
    }
}
