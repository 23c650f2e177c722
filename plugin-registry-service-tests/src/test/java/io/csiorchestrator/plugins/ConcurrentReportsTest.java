package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.deadLetterTopic;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.healthTopic;
import static io.csiorchestrator.plugins.HealthRecords.statusRecords;
import static io.csiorchestrator.plugins.HealthRecords.statusTopic;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;

/**
 * Reports of one plugin from many nodes applied at the same time: the row lock keeps every instance and
 * the stored counts right, and the last plugin-status record is the final state. Two cases: {@link PluginRegistry}
 * called directly from 8 threads, with sweeps in between (the row lock alone, no Kafka), and reports sent
 * concurrently through Kafka to the real consumer. The profile runs the {@code plugin-health} channel with
 * {@code concurrency=6}: six copies of the channel, each with its own Kafka consumer in the service's group,
 * one per partition of the topic, as six service instances would be, so reports of one plugin from different
 * partitions are applied in parallel.
 */
@QuarkusTest
@TestProfile(ConcurrentReportsTest.SixConsumers.class)
class ConcurrentReportsTest {

    /** Six consumers of {@code plugin-health} in this one service, as six service instances would have. */
    public static class SixConsumers implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("mp.messaging.incoming.plugin-health.concurrency", "6");
        }
    }

    @Inject
    PluginRegistry registry;

    /**
     * The row lock alone: {@link PluginRegistry#record} and {@link PluginRegistry#sweep} called directly on
     * Vert.x contexts from 8 threads, bypassing Kafka and the consumer.
     */
    @Test
    void concurrentRecordCallsOfOnePluginNeverLoseAnInstance() throws Exception {
        String plugin = uniquePluginId("concurrent");
        Instant t = now();
        int nodes = 24;
        List<Callable<Object>> work = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            String nodeId = "node-" + i;
            work.add(() -> onVertx(() -> registry.record(node(plugin, nodeId, false, t))));
            work.add(() -> onVertx(() -> registry.record(node(plugin, nodeId, true, t.plusSeconds(1)))));
            if (i % 6 == 0) {
                work.add(() -> onVertx(() -> registry.sweep()));
            }
        }
        runAll(work);

        try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
            assertFinalStatusIsExact(kafka, plugin, nodes, t);
        }
    }

    /**
     * Through Kafka and the real consumers: 12 nodes of one plugin, 2 on each of the 6 partitions. In round 0
     * every node registers, every other node healthy; in each of 10 further rounds every node sends at once (8
     * sending threads) a newer report that flips its health, so every report changes the plugin. After each
     * round: exactly one plugin-status record per node was published, the last of them has exactly that round's
     * health per node and counts, and the REST API (the counts stored on the plugin row) agrees with it. A
     * change applied on a stale view of the plugin (no row lock) leaves the stored counts wrong. At the end, no
     * report of the plugin was dead-lettered.
     */
    @Test
    void concurrentReportsOfOnePluginThroughKafkaEndWithExactCounts() throws Exception {
        String plugin = uniquePluginId("concurrent-kafka");
        Instant t = now();
        int nodes = 12;
        int rounds = 10;
        try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
            for (int round = 0; round <= rounds; round++) {
                Map<String, Boolean> health = new TreeMap<>();
                for (int i = 0; i < nodes; i++) {
                    health.put("node-" + i, (i + round) % 2 == 0);
                }
                Map<TopicPartition, Long> statusEnd = kafka.endOffsets(statusTopic());
                Instant observedAt = t.plusSeconds(round);
                List<Callable<Object>> senders = new ArrayList<>();
                for (int i = 0; i < nodes; i++) {
                    String nodeId = "node-" + i;
                    int partition = i % 6;
                    senders.add(() -> {
                        sendToPartition(kafka, node(plugin, nodeId, health.get(nodeId), observedAt), partition);
                        return null;
                    });
                }
                runAll(senders);

                // Each report changes the plugin, so the round publishes exactly one status per node; the last
                // of them must be the round's final state, and the stored counts (REST) must agree with it.
                int healthy = (int) health.values().stream().filter(Boolean::booleanValue).count();
                List<ConsumerRecord<String, String>> published = kafka.awaitRecords(statusTopic(), statusEnd,
                        r -> plugin.equals(r.key()), nodes, HealthRecords.TIMEOUT);
                PluginStatus last = HealthRecords.decodeStatus(published.get(nodes - 1));
                assertEquals(health, healthByNode(last), "round " + round + ": the last status published is the final one");
                assertTrue(counts(0, 0, healthy, nodes).test(last), "round " + round + ": " + last);
                PluginHealthFlowTest.assertRestAgrees(last);
            }

            assertTrue(kafka.readAll(deadLetterTopic()).stream().noneMatch(r -> r.key() != null
                    && r.key().startsWith(plugin + "/")), "no report of " + plugin + " was dead-lettered");
        }
    }

    private static Map<String, Boolean> healthByNode(PluginStatus status) {
        Map<String, Boolean> health = new TreeMap<>();
        status.nodes().forEach(n -> health.put(n.nodeId(), n.healthy()));
        return health;
    }

    /** Sends a report, keyed by its record key, to one partition of {@code plugin-health}. */
    private static void sendToPartition(KafkaTestClient kafka, PluginHealth report, int partition) {
        List<Header> headers = new ArrayList<>();
        String value = EventCodec.encodeToString(report);
        HealthRecords.signed(report.recordKey(), value, HealthRecords.cloudEventHeaders())
                .forEach((k, v) -> headers.add(new RecordHeader(k, v.getBytes(StandardCharsets.UTF_8))));
        kafka.send(new ProducerRecord<>(healthTopic(), partition, report.recordKey(), value, headers));
    }

    /**
     * Every node of the plugin healthy and counted, in the REST API and in the last plugin-status record;
     * every record published on the way counts exactly the instances it lists.
     */
    private static void assertFinalStatusIsExact(KafkaTestClient kafka, String plugin, int nodes, Instant t) {
        PluginHealthFlowTest.assertRestAgrees(new PluginStatus(plugin, "hostpath.csi.example", "1.2.0", false,
                0, 0, nodes, nodes, List.of(), List.of(), t));
        List<ConsumerRecord<String, String>> records = statusRecords(kafka, plugin);
        assertTrue(!records.isEmpty());
        PluginStatus last = HealthRecords.decodeStatus(records.get(records.size() - 1));
        assertTrue(counts(0, 0, nodes, nodes).test(last), "the last status published is the final one: " + last);
        assertEquals(nodes, last.nodes().size());
        for (ConsumerRecord<String, String> record : records) {
            PluginStatus status = HealthRecords.decodeStatus(record);
            assertEquals(status.nodes().size(), status.nodesExpected());
            assertEquals(status.nodes().stream().filter(PluginStatus.NodeInstance::healthy).count(), (long) status.nodesHealthy());
        }
    }

    /** Runs every task on 8 threads and rethrows the first failure. */
    private static void runAll(List<Callable<Object>> tasks) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            for (Future<Object> done : pool.invokeAll(tasks, 120, TimeUnit.SECONDS)) {
                done.get(); // rethrows any failure
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** Runs {@code work} on a Vert.x context, as the Kafka consumer and the scheduler do, and waits for it. */
    private static Object onVertx(Supplier<Uni<?>> work) throws Exception {
        try {
            return VertxContextSupport.subscribeAndAwait(work::get);
        } catch (Exception | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
