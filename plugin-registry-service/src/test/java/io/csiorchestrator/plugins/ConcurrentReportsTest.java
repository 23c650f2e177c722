package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.statusRecords;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.vertx.VertxContextSupport;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import io.smallrye.mutiny.Uni;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * Reports of one plugin from many nodes applied at the same time (as several partitions or service instances
 * would), with sweeps running in between: the row lock keeps every instance and the counts right, and the
 * last plugin-status record is the final state.
 */
@QuarkusTest
class ConcurrentReportsTest {

    @Inject
    PluginRegistry registry;

    @Test
    void concurrentReportsOfOnePluginNeverLoseAnInstance() throws Exception {
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
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Object>> done = pool.invokeAll(work, 120, TimeUnit.SECONDS);
            for (Future<Object> future : done) {
                future.get(); // rethrows any failure
            }
        } finally {
            pool.shutdownNow();
        }

        PluginHealthFlowTest.assertRestAgrees(new PluginStatus(plugin, "hostpath.csi.example", "1.2.0", false,
                0, 0, nodes, nodes, List.of(), List.of(), t));
        try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
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
