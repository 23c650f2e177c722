package io.csiorchestrator.worker.lease;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaTestClient;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The worker's lease I/O against the real broker, the test standing in as plugin-registry-service (it answers
 * node-lease-requests on node-leases itself), ttl 3 s: the worker asks at start, a grant makes its lease valid, with
 * requests going out and no answer coming back (a one-way partition) it lapses (its fence is due), once fenced the next
 * grant's higher epoch makes it valid again, and a command of the older epoch is refused.
 */
class LeaseClientKafkaTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    /** The test's observer (the super user on the closed broker). */
    private KafkaTestClient kafka;
    /** The test's stand-in for plugin-registry-service, the one writer of node-leases. */
    private KafkaTestClient registry;
    private TopicCatalog topics;
    private LeaseClient client;

    @BeforeEach
    void topics() {
        kafka = KafkaTestClient.forSharedBroker();
        topics = new TopicCatalog("lease-" + UUID.randomUUID().toString().substring(0, 8) + ".");
        kafka.createTopic(topics.name(Topic.NODE_LEASE_REQUESTS), 6, Map.of());
        kafka.createTopic(topics.name(Topic.NODE_LEASES), 6, Map.of("cleanup.policy", "compact"));
        registry = KafkaTestClient.forSharedBroker(io.csiorchestrator.events.KafkaAccess.Principal.pluginRegistry(),
                topics.prefix());
    }

    @AfterEach
    void close() {
        if (client != null) {
            client.close();
        }
        kafka.close();
        registry.close();
    }

    private NodeLeaseRequested awaitRequest(java.util.function.Predicate<NodeLeaseRequested> which) {
        ConsumerRecord<String, String> r = kafka.awaitRecord(topics.name(Topic.NODE_LEASE_REQUESTS),
                rec -> which.test(EventCodec.decode(NodeLeaseRequested.class, rec.value())), TIMEOUT);
        CloudEventHeaders.requireValid(r.headers(), EventType.NODE_LEASE_REQUESTED);
        return EventCodec.decode(NodeLeaseRequested.class, r.value());
    }

    private void answer(NodeLeaseRequested request, long epoch) {
        NodeLease lease = new NodeLease(request.nodeId(), epoch, NodeLeaseState.VALID, request.requestId(), 3_000, 1_000,
                Instant.now());
        RecordHeaders h = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_LEASE, "/test-registry").writeTo(h);
        Map<String, String> headers = new HashMap<>();
        h.forEach(x -> headers.put(x.key(), new String(x.value(), java.nio.charset.StandardCharsets.UTF_8)));
        registry.send(topics.name(Topic.NODE_LEASES), request.nodeId(), EventCodec.encodeToString(lease), headers);
    }

    @Test
    void grantLapseWithoutAnswersAndRegrantWithAHigherEpoch() {
        String node = "lease-worker-" + UUID.randomUUID().toString().substring(0, 8);
        LeaseGate gate = LeaseGate.enabled(node, System::nanoTime);
        client = new LeaseClient(kafka.bootstrapServers(), topics, node, "/test-worker", gate, Duration.ofSeconds(3),
                (change, lease) -> { }).withSecurity(io.csiorchestrator.testkit.KafkaResource.securityOf(
                io.csiorchestrator.events.KafkaAccess.Principal.node(node), topics.prefix()));
        client.start();
        assertFalse(gate.valid(), "no lease before a grant");

        // answer a request sent after the client is listening (its first ones may precede its seek to the end)
        NodeLeaseRequested first = awaitRequest(r -> node.equals(r.nodeId()) && r.heldEpoch() == 0);
        await().atMost(TIMEOUT).until(() -> {
            NodeLeaseRequested latest = latestRequest(node);
            answer(latest, 1);
            return gate.valid();
        });
        assertEquals(1L, gate.epochOrNull());
        assertTrue(first.sentAt() != null);

        // requests keep coming (held epoch 1), nothing answers: the lease lapses on the worker's own clock
        NodeLeaseRequested renewal = awaitRequest(r -> node.equals(r.nodeId()) && r.heldEpoch() == 1);
        assertEquals(node, renewal.nodeId());
        await().atMost(TIMEOUT).until(() -> !gate.valid());
        assertTrue(gate.invalidReason().startsWith(node + " has no valid lease (epoch 1"), gate.invalidReason());
        // the fence of epoch 1 is due now; the worker's SelfFence does it (here: begun and done at once), else the
        // next epoch would stay invalid until it is (an overdue fence)
        assertEquals(1, gate.beginFence());
        gate.fenceDone(1);

        // the registry grants epoch 2: valid again; a command of epoch 1 is refused as stale
        await().atMost(TIMEOUT).until(() -> {
            answer(latestRequest(node), 2);
            return gate.valid();
        });
        assertEquals(2L, gate.epochOrNull());
        NodeCommand old = new NodeCommand("c1", node, NodeCommandKind.MOUNT, "default", "vol-1", "hostpath", "e", "a1",
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, Map.of(), Map.of(), null,
                Instant.now()).withFencing(1L, 1L, true);
        assertEquals("stale lease epoch 1 < 2", gate.refusal(old, Instant.now()).orElseThrow().errorMessage());
    }

    private NodeLeaseRequested latestRequest(String node) {
        List<ConsumerRecord<String, String>> all = kafka.readAll(topics.name(Topic.NODE_LEASE_REQUESTS));
        NodeLeaseRequested latest = null;
        for (ConsumerRecord<String, String> r : all) {
            if (node.equals(r.key())) {
                NodeLeaseRequested req = EventCodec.decode(NodeLeaseRequested.class, r.value());
                if (latest == null || req.sentAt().isAfter(latest.sentAt())) {
                    latest = req;
                }
            }
        }
        return latest;
    }
}
