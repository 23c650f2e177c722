package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.cloudEventHeaders;
import static io.csiorchestrator.plugins.HealthRecords.healthTopic;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.statusTopic;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Duration;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.trace.data.SpanData;
import jakarta.inject.Inject;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The plugin-status record a plugin-health record causes carries that record's trace (W3C traceparent):
 * same trace id, the registry's publish span as parent; the spans are "<topic> receive" and "<topic> publish".
 */
@QuarkusTest
class TracePropagationTest {

    private static KafkaTestClient kafka;

    @Inject
    RecordedSpans spans;

    @BeforeAll
    static void client() {
        kafka = KafkaTestClient.forSharedBroker();
    }

    @AfterAll
    static void close() {
        kafka.close();
    }

    @Test
    void theStatusRecordCarriesTheTraceOfTheHealthRecord() {
        for (String nodeId : new String[] {"n1", "n2"}) {
            String plugin = uniquePluginId("traced");
            String traceId = hex(32);
            String spanId = hex(16);
            PluginHealth report = node(plugin, nodeId, true, now());
            Map<String, String> headers = new LinkedHashMap<>(cloudEventHeaders());
            headers.put("traceparent", "00-" + traceId + "-" + spanId + "-01");
            String value = EventCodec.encodeToString(report);
            kafka.send(healthTopic(), report.recordKey(), value, HealthRecords.signed(report.recordKey(), value, headers));

            ConsumerRecord<String, String> status = kafka.awaitRecord(statusTopic(),
                    r -> plugin.equals(r.key()) && r.value() != null, Duration.ofSeconds(30));
            String traceparent = KafkaTestClient.header(status, "traceparent");
            assertNotNull(traceparent, "plugin-status carries a traceparent");
            String[] parts = traceparent.split("-");
            assertEquals(4, parts.length, traceparent);
            assertEquals(traceId, parts[1], "same trace as the plugin-health record");
            assertNotEquals(spanId, parts[2], "a span of the registry, not the producer's");
            assertTrue(parts[3].equals("01"), "sampled: " + traceparent);

            // The spans: "<topic> receive" (consumer) child of the producer's span, and the publish span
            // (producer) whose id is the one in the plugin-status record's traceparent.
            String publishSpanId = parts[2];
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                List<SpanData> trace = spans.ofTrace(traceId);
                SpanData receive = trace.stream().filter(s -> s.getKind() == SpanKind.CONSUMER
                        && s.getName().contains(healthTopic())).findFirst().orElseThrow(() -> new AssertionError("no consumer span in " + trace));
                assertEquals(spanId, receive.getParentSpanId());
                SpanData publish = trace.stream().filter(s -> s.getSpanId().equals(publishSpanId)).findFirst()
                        .orElseThrow(() -> new AssertionError("no publish span in " + trace));
                assertEquals(SpanKind.PRODUCER, publish.getKind());
                assertTrue(publish.getName().contains(statusTopic()), publish.getName());
            });
        }
    }

    private static String hex(int length) {
        StringBuilder s = new StringBuilder();
        while (s.length() < length) {
            s.append(Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE));
        }
        return s.substring(0, length);
    }
}
