package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.topics;
import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.plugins.lease.LeaseAuthority;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.PostgresResource;
import io.csiorchestrator.testkit.TcpProxy;
import io.csiorchestrator.testkit.TestIdentities;
import io.micrometer.core.instrument.MeterRegistry;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Rebalances of the lease group while PostgreSQL is away (issue 19: a standby registry replica taking a killed one's
 * nodes over during a database outage; a rebalance for any other reason meanwhile). Real broker, real PostgreSQL behind
 * the tests' proxy, a lease ttl of 10 s ({@link LongerLeaseTtl}). Two nodes hold epoch 1, one on the first and one on the last
 * partition of node-lease-requests, and renew; the database is cut; a second member joins the lease group and takes
 * half the partitions (Kafka's range assignor: one of the two nodes' partitions goes to it, the other stays).
 * <ul>
 *   <li>The node whose partition stayed with the application is still renewed: a partition kept through a rebalance
 *       needs no reload (a failing reload paused it, and with it every renewal, so both workers fenced themselves
 *       in a full chaos run when a rebalance came during the PostgreSQL outage).</li>
 *   <li>The member leaves: the other node's partition comes back and must be loaded, which fails: it is paused
 *       (gauge, REST {@code authority: false}). Once the database is back the load is retried by itself (no
 *       further rebalance) and that node's lapse is declared. Without the retry the partition stayed unowned after
 *       the failed reload and the lapse never came.</li>
 * </ul>
 */
@QuarkusTest
@TestProfile(LeaseReloadRetryTest.LongerLeaseTtl.class)
class LeaseReloadRetryTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final Duration TTL = Duration.ofSeconds(10);

    /**
     * A lease ttl of 10 s instead of the test profile's 3 s. The kept partition is not read while the group rebalances
     * (eager: revoked, assigned again, its position fetched anew), and its node's renewals sent meanwhile are answered
     * only afterwards; the authority lapses a lease not renewed for ttl x 1.05. On a loaded 2-core machine the
     * rebalance and the first fetch after it took 3.6 s, longer than 3 s x 1.05: the kept node lapsed, and a lapsed
     * node needs a new epoch, which needs the database the test had cut. Nothing here needs a short ttl: the only lapse
     * awaited (the returned partition's, after its reload) comes ttl x 1.05 after the reload.
     */
    public static class LongerLeaseTtl implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("csi.fencing.lease-ttl", TTL.getSeconds() + "s");
        }
    }

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
        return awaitLease(node, which, TIMEOUT);
    }

    private NodeLease awaitLease(String node, java.util.function.Predicate<NodeLease> which, Duration timeout) {
        return EventCodec.decode(NodeLease.class, kafka.awaitRecord(topics().name(Topic.NODE_LEASES),
                r -> node.equals(r.key()) && which.test(EventCodec.decode(NodeLease.class, r.value())), timeout).value());
    }

    /** A fresh node id whose node-lease-requests partition is {@code partition}. */
    private static String nodeOn(int partition, int partitions) {
        while (true) {
            String node = "reload-node-" + UUID.randomUUID().toString().substring(0, 8);
            if (NodePartitioner.partitionFor(node, partitions) == partition) {
                return node;
            }
        }
    }

    private static boolean authority(String node) {
        return given().get("/v1/nodes/" + node).then().statusCode(200).extract().jsonPath().getBoolean("authority");
    }

    @Test
    void aKeptPartitionRenewsThroughARebalanceAndAReloadThatFailedIsRetriedOnceTheDatabaseIsBack() {
        HealthRecords.awaitLeaseAuthorityServing(kafka);
        TcpProxy database = PostgresResource.proxy();
        assertNotNull(database, "the test datasource goes through a proxy (TestInfrastructure)");
        String requests = topics().name(Topic.NODE_LEASE_REQUESTS);
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        kafka.security().applyTo(props);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, LeaseAuthority.GROUP);
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        props.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
        props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
        KafkaConsumer<String, String> member = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        boolean left = false;
        try {
            int partitions = member.partitionsFor(requests).size();
            List<String> nodes = List.of(nodeOn(0, partitions), nodeOn(partitions - 1, partitions));
            for (String node : nodes) {
                String granted = request(node, 0);
                assertEquals(1, awaitLease(node, l -> granted.equals(l.requestId())).epoch());
            }
            assertEquals(0.0, unloaded(), "every partition loaded before the cut");

            database.cut();
            // a second member of the lease group: the range assignor gives it one half, the application the other
            member.subscribe(List.of(requests, topics().name(Topic.NODE_EVENTS)));
            Awaitility.await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(500)).until(() -> {
                nodes.forEach(n -> request(n, 1)); // renewals need no database
                member.poll(Duration.ofMillis(200));
                return member.assignment().stream().anyMatch(tp -> tp.topic().equals(requests));
            });
            Set<Integer> theirs = new HashSet<>();
            member.assignment().stream().filter(tp -> tp.topic().equals(requests)).forEach(tp -> theirs.add(tp.partition()));
            String moved = nodes.stream().filter(n -> theirs.contains(NodePartitioner.partitionFor(n, partitions)))
                    .findFirst().orElseThrow(() -> new AssertionError("the member got " + theirs + ": none of " + nodes));
            String stayed = nodes.get(0).equals(moved) ? nodes.get(1) : nodes.get(0);

            // the partition that stayed is kept through the rebalance: renewed, though nothing could be loaded
            String renewal = request(stayed, 1);
            assertEquals(1, awaitLease(stayed, l -> renewal.equals(l.requestId())).epoch());
            assertEquals(0.0, unloaded(), "nothing to load: the application kept its partitions");
            assertTrue(authority(stayed));

            member.close(); // it leaves: its half comes back to the application, whose load of it fails
            left = true;
            Awaitility.await().atMost(TIMEOUT).pollInterval(Duration.ofMillis(500)).until(() -> {
                request(moved, 1);
                return unloaded() == theirs.size();
            });
            assertFalse(authority(moved), "not the node's authority while its partition is not loaded");

            database.restore();
            // no rebalance from here on: only the retry can load the partition and declare the node's lapse
            // (declared ttl x 1.05 after the reload, which comes up to the reload backoff after the restore)
            NodeLease lapse = awaitLease(moved, l -> l.state() == NodeLeaseState.LAPSED, TIMEOUT.plus(TTL));
            assertEquals(1, lapse.epoch());
            Awaitility.await().atMost(TIMEOUT).until(() -> unloaded() == 0);
            assertTrue(authority(moved));

            // the authority answers again, from the leases it loaded: the lapsed epoch is never granted again
            String next = request(moved, 1);
            assertEquals(2, awaitLease(moved, l -> next.equals(l.requestId())).epoch());
        } finally {
            if (!left) {
                member.close();
            }
        }
    }
}
