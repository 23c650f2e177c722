package io.csiorchestrator.worker.lease;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.path.json.JsonPath;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/**
 * With {@code csi.worker.fencing.enabled} the worker is ready only with a valid lease (so {@code ./csi up} waits for
 * the first grant): not ready before a grant, ready once the test (standing in as plugin-registry-service) answers
 * its request, not ready again without answers (at expiry - budget, 9 s after the last answered request, the worker
 * fences itself: "epoch 1 fenced"). The lease lasts 10 s from the worker's request: with 3 s, an answer to a request
 * read late on a loaded machine arrived already expired, the worker fenced epoch 1 at once and ignored every later
 * answer of that epoch (CI on 87c2866, 2026-12-02: granted 02:13:33.560, fenced 02:13:34.021).
 */
@QuarkusTest
@TestProfile(LeaseReadinessTest.Fencing.class)
class LeaseReadinessTest {

    static final String NODE = "lease-ready-node";
    static final TopicCatalog TOPICS = new TopicCatalog("lease-ready.");

    public static class Fencing implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            io.csiorchestrator.events.identity.Principal node = io.csiorchestrator.events.identity.Principal.node(NODE);
            io.csiorchestrator.testkit.TestIdentities.sealing(node); // this node's own sealing key (issue 20 item 4)
            Map<String, String> config = new HashMap<>(Map.of("csi.worker.fencing.enabled", "true",
                    "csi.fencing.lease-ttl", "10s", "csi.worker.node-id", NODE, TopicCatalog.PREFIX_PROPERTY, TOPICS.prefix(),
                    "csi.worker.seal-key-file", io.csiorchestrator.testkit.TestIdentities.sealKeyFile(node).toString()));
            // on the closed broker the worker connects as this node's own principal with its ACLs on this prefix,
            // and finds this prefix's topics made (a closed broker creates none on first use)
            io.csiorchestrator.testkit.KafkaResource.createContractTopics(TOPICS.prefix());
            config.putAll(io.csiorchestrator.testkit.KafkaResource.applicationSecurity("NODE:" + NODE, TOPICS.prefix()));
            return config;
        }
    }

    private static JsonPath leaseCheck(int status) {
        return given().get("/q/health/ready").then().statusCode(status).extract().jsonPath();
    }

    private static String lease(JsonPath health) {
        return health.getString("checks.find { it.name == 'node-mount-worker' }.data.lease");
    }

    @Test
    void readyOnlyWithAValidLease() {
        try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker();
             KafkaTestClient registry = KafkaTestClient.forSharedBroker(
                     io.csiorchestrator.events.KafkaAccess.Principal.pluginRegistry(), TOPICS.prefix())) {
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertEquals(
                    NODE + " has no valid lease (none granted yet)", lease(leaseCheck(503))));

            // the ready answer itself names the lease: asking again could come after the lease's short validity
            // (nobody renews it here), a race the CI's loaded machine lost once
            AtomicReference<JsonPath> ready = new AtomicReference<>();
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                answerLatest(kafka, registry);
                io.restassured.response.Response health = given().get("/q/health/ready");
                if (health.statusCode() != 200) {
                    return false;
                }
                ready.set(health.jsonPath());
                return true;
            });
            assertEquals("valid (epoch 1)", lease(ready.get()));

            // nobody answers any more: not ready once the fence is due, and the worker fenced itself
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertEquals(
                    NODE + " has no valid lease (epoch 1 fenced)", lease(leaseCheck(503))));
        }
    }

    /** Reads the worker's requests as the test's observer, answers the latest as the registry would. */
    private static void answerLatest(KafkaTestClient kafka, KafkaTestClient registry) {
        NodeLeaseRequested latest = null;
        for (ConsumerRecord<String, String> r : kafka.readAll(TOPICS.name(Topic.NODE_LEASE_REQUESTS))) {
            NodeLeaseRequested q = EventCodec.decode(NodeLeaseRequested.class, r.value());
            if (NODE.equals(q.nodeId()) && (latest == null || q.sentAt().isAfter(latest.sentAt()))) {
                latest = q;
            }
        }
        if (latest == null) {
            return;
        }
        NodeLease lease = new NodeLease(NODE, 1, NodeLeaseState.VALID, latest.requestId(), 10_000, 1_000, Instant.now());
        RecordHeaders h = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_LEASE, "/test-registry").writeTo(h);
        Map<String, String> headers = new HashMap<>();
        h.forEach(x -> headers.put(x.key(), new String(x.value(), java.nio.charset.StandardCharsets.UTF_8)));
        registry.send(TOPICS.name(Topic.NODE_LEASES), NODE, EventCodec.encodeToString(lease), headers);
    }
}
