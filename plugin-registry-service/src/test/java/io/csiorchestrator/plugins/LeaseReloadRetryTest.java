package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.topics;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.plugins.lease.LeaseAuthority;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.PostgresResource;
import io.csiorchestrator.testkit.TcpProxy;
import io.csiorchestrator.testkit.TestIdentities;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The lease authority takes node-lease-requests partitions over while PostgreSQL is away (issue 19: a standby
 * registry replica taking a killed one's nodes over during a database outage). Real broker, real PostgreSQL behind
 * the tests' proxy, the test profile's ttl of 3 s. A node holds epoch 1 and renews it; the database is cut; a
 * rebalance of the lease group (a second member joins, then leaves) hands every partition back to the application,
 * whose reload of the persisted leases fails: those partitions are counted unloaded (paused). The node stops renewing
 * and the database comes back: the reload is tried again by itself (no further rebalance), and the node's lapse is
 * declared, of epoch 1. Without the retry the
 * partitions stayed unowned after the failed reload and the lapse never came (until some later rebalance).
 */
@QuarkusTest
class LeaseReloadRetryTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    @Inject
    MeterRegistry meters;

    final KafkaTestClient kafka = KafkaTestClient.forSharedBroker();

    @AfterEach
    void after() {
        TcpProxy proxy = PostgresResource.proxy();
        if (proxy != null) {
            proxy.restore();
        }
        kafka.close();
    }

    private double unloaded() {
        return meters.get(LeaseAuthority.UNLOADED).gauge().value();
    }

    private String request(String node, long held) {
        String id = "req-" + UUID.randomUUID();
        String value = EventCodec.encodeToString(new NodeLeaseRequested(id, node, held, Instant.now()));
        RecordHeaders h = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_LEASE_REQUESTED, "/test").writeTo(h);
        Map<String, String> headers = new HashMap<>();
        h.forEach(header -> headers.put(header.key(), new String(header.value(), StandardCharsets.UTF_8)));
        kafka.send(topics().name(Topic.NODE_LEASE_REQUESTS), node, value,
                TestIdentities.signed(TestIdentities.node(node), node, value, headers));
        return id;
    }

    private NodeLease awaitLease(String node, java.util.function.Predicate<NodeLease> which) {
        return EventCodec.decode(NodeLease.class, kafka.awaitRecord(topics().name(Topic.NODE_LEASES),
                r -> node.equals(r.key()) && which.test(EventCodec.decode(NodeLease.class, r.value())), TIMEOUT).value());
    }

    @Test
    void aReloadThatFailedAtAssignmentIsRetriedOnceTheDatabaseIsBackAndTheLapseComes() {
        HealthRecords.awaitLeaseAuthorityServing(kafka);
        TcpProxy database = PostgresResource.proxy();
        assertNotNull(database, "the test datasource goes through a proxy (TestInfrastructure)");
        String node = "reload-node-" + UUID.randomUUID().toString().substring(0, 8);
        String granted = request(node, 0);
        assertEquals(1, awaitLease(node, l -> granted.equals(l.requestId())).epoch());
        assertEquals(0.0, unloaded(), "every partition loaded before the cut");

        database.cut();
        String requests = topics().name(Topic.NODE_LEASE_REQUESTS);
        int partitions;
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        kafka.security().applyTo(props);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, LeaseAuthority.GROUP);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        try (KafkaConsumer<String, String> member = new KafkaConsumer<>(props, new StringDeserializer(),
                new StringDeserializer())) {
            partitions = member.partitionsFor(requests).size();
            // a second member of the lease group: the partitions are dealt again (the application's reload fails)
            member.subscribe(List.of(requests, topics().name(Topic.NODE_EVENTS)));
            // the node renews meanwhile (renewals need no database), so its lease is valid when the reload fails
            Awaitility.await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(500)).until(() -> {
                request(node, 1);
                member.poll(Duration.ofMillis(200));
                return !member.assignment().isEmpty();
            });
        } // it leaves: every partition goes back to the application, whose reload fails again
        Awaitility.await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(500)).until(() -> {
            request(node, 1);
            return unloaded() == partitions;
        });

        database.restore();
        // no rebalance from here on: only the retry can load the partitions and declare the node's lapse
        NodeLease lapse = awaitLease(node, l -> l.state() == NodeLeaseState.LAPSED);
        assertEquals(1, lapse.epoch());
        Awaitility.await().atMost(TIMEOUT).until(() -> unloaded() == 0);

        // the authority answers again, from the leases it loaded: the lapsed epoch is never granted again
        String next = request(node, 1);
        assertEquals(2, awaitLease(node, l -> next.equals(l.requestId())).epoch());
    }
}
