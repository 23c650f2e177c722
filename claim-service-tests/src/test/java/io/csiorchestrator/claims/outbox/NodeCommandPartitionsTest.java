package io.csiorchestrator.claims.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.csiorchestrator.claims.Bus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.awaitility.Awaitility;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Partitions added to node-commands while claim-service runs (an operator growing the topic): the
 * outbox relay sends a node command to the node's partition under the count its producer sees at send
 * time, also for a row committed before the change, so it lands where the node's worker now reads
 * (the worker follows the same count). A topic of this test's own, so no other test sees the change: the
 * node-commands of a prefix of its own, on which claim-service's principal gets its rows of {@code KafkaAccess} (as
 * a deployment with that prefix would), nothing more.
 */
@QuarkusTest
class NodeCommandPartitionsTest {

    @Inject
    OutboxRelay relay;
    @Inject
    OutboxProducer producer;
    @Inject
    Pool pool;
    @ConfigProperty(name = "kafka.bootstrap.servers")
    String bootstrapServers;

    final KafkaTestClient kafka = KafkaTestClient.forSharedBroker();

    @AfterEach
    void close() {
        kafka.close();
    }

    @Test
    void aNodeCommandGoesToTheNodesPartitionUnderTheCountAtSendTime() throws Exception {
        String prefix = "cs-grown-" + UUID.randomUUID().toString().substring(0, 8) + ".";
        String topic = new io.csiorchestrator.events.TopicCatalog(prefix).name(io.csiorchestrator.events.Topic.NODE_COMMANDS);
        io.csiorchestrator.testkit.KafkaResource.securityOf(io.csiorchestrator.events.KafkaAccess.Principal.claimService(), prefix);
        kafka.createTopic(topic, 2, Map.of());
        String node = IntStream.range(0, 100).mapToObj(i -> "node-" + i)
                .filter(n -> NodePartitioner.partitionFor(n, 2) != NodePartitioner.partitionFor(n, 8))
                .findFirst().orElseThrow();
        int before = NodePartitioner.partitionFor(node, 2);
        int after = NodePartitioner.partitionFor(node, 8);
        assertNotEquals(before, after);

        String first = commit(topic, node, before);
        assertEquals(before, awaitRecord(topic, first).partition(), "two partitions: the node's partition of two");

        // A row committed under two partitions and not yet sent (the relay held back) when the topic grows.
        relay.suspend();
        String committedBeforeTheChange;
        try {
            committedBeforeTheChange = commit(topic, node, before);
            try (Admin admin = io.csiorchestrator.localinfra.Kraft.admin(bootstrapServers, kafka.security())) {
                admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(8))).all().get(30, TimeUnit.SECONDS);
            }
            // The relay's producer refreshes its metadata (csi.claims.outbox.metadata-max-age, 1 s in tests).
            Awaitility.await().atMost(Bus.WAIT).until(() -> producer.partitionCount(topic) == 8);
        } finally {
            relay.resume();
        }
        assertEquals(after, awaitRecord(topic, committedBeforeTheChange).partition(),
                "a row committed under two partitions goes to the node's partition of eight");
        String later = commit(topic, node, after);
        assertEquals(after, awaitRecord(topic, later).partition());
    }

    /** Commits one node-command outbox row for {@code node} on {@code topic} and signals the relay; its ce_id. */
    private String commit(String topic, String node, int partitionAtCommit) {
        String ceId = UUID.randomUUID().toString();
        pool.preparedQuery("INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, partition_no, payload, created_at)"
                        + " VALUES ($1, 'io.csiorchestrator.node.command.v1', now(), $2, $3, $4, $5, now())")
                .execute(Tuple.of(ceId, topic, node, partitionAtCommit, "{\"test\":\"" + ceId + "\"}"))
                .await().atMost(Duration.ofSeconds(10));
        relay.signal();
        return ceId;
    }

    private ConsumerRecord<String, String> awaitRecord(String topic, String ceId) {
        return kafka.awaitRecord(topic, r -> ceId.equals(KafkaTestClient.header(r, CloudEventHeaders.CE_ID)), Bus.WAIT);
    }
}
