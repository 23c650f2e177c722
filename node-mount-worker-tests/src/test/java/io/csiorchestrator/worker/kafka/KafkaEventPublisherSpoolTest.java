package io.csiorchestrator.worker.kafka;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.WorkerPaths;
import io.csiorchestrator.worker.telemetry.WorkerTracing;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Headers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A publisher closed gracefully (in this JVM) while Kafka is unreachable leaves its node events
 * spooled under the root, and the next publisher on the same root delivers them first, in order,
 * with the ce_id (and trace context) the first one gave them. mount-done is not spooled. A kill -9
 * in the middle of spooling, in another JVM, is {@link KafkaEventPublisherKillNineTest}.
 */
class KafkaEventPublisherSpoolTest {

    private static final String SOURCE = "/node-mount-worker";
    private static final String TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
    private static final String SPAN_ID = "b7ad6b7169203331";

    @TempDir
    Path temp;

    private static NodeEvent event(int n) {
        return new NodeEvent("spool-node", null, NodeEventKind.RESTORE, "Restore volume after worker restart " + n,
                null, "ns", "v" + n, null, true, null, Map.of(), Instant.now());
    }

    private static MountDone mountDone(String commandId) {
        return new MountDone(commandId, "spool-node", NodeCommandKind.MOUNT, "ns", "v0", "a1", true, null, null,
                Map.of(), "/t", "/s", Instant.now());
    }

    /** W3C trace context, and the ce_id of every record it is injected into (the ids the publisher gave). */
    private static OpenTelemetry capturingCeIds(List<String> ceIds) {
        TextMapPropagator w3c = W3CTraceContextPropagator.getInstance();
        TextMapPropagator capturing = new TextMapPropagator() {
            @Override
            public Collection<String> fields() {
                return w3c.fields();
            }

            @Override
            public <C> void inject(Context context, C carrier, TextMapSetter<C> setter) {
                w3c.inject(context, carrier, setter);
                if (carrier instanceof Headers headers) {
                    ceIds.add(new String(headers.lastHeader(CloudEventHeaders.CE_ID).value(), StandardCharsets.UTF_8));
                }
            }

            @Override
            public <C> Context extract(Context context, C carrier, TextMapGetter<C> getter) {
                return w3c.extract(context, carrier, getter);
            }
        };
        return OpenTelemetry.propagating(ContextPropagators.create(capturing));
    }

    private static List<Path> files(Path dir) throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            return files.sorted().toList();
        }
    }

    @Test
    void nodeEventsSpooledBeforeAGracefulCloseWithKafkaUnreachableAreDeliveredByTheNextPublisher() throws Exception {
        int deadPort;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            deadPort = probe.getLocalPort();
        }
        TopicCatalog topics = new TopicCatalog("spool-test-" + UUID.randomUUID().toString().substring(0, 8) + ".");
        KafkaResource.createContractTopics(topics.prefix());
        WorkerPaths paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
        List<String> givenIds = new CopyOnWriteArrayList<>();
        OpenTelemetry otel = capturingCeIds(givenIds);
        WorkerTracing tracing = new WorkerTracing(otel, otel.getTracer("test"));
        Context cause = Context.root().with(Span.wrap(SpanContext.create(TRACE_ID, SPAN_ID, TraceFlags.getSampled(),
                TraceState.builder().put("csi", "spool").build())));

        // 1. Kafka unreachable: three node events and a mount-done, then the publisher is closed
        KafkaEventPublisher first = new KafkaEventPublisher("127.0.0.1:" + deadPort, topics, SOURCE, 100, tracing,
                EventSpool.open(paths));
        first.start();
        List<CompletableFuture<Void>> acks = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            acks.add(first.send(event(i), cause));
        }
        acks.add(first.send(mountDone("cmd-before-crash")));
        assertEquals(3, givenIds.size(), "the three node events got their ce_id and trace context");
        assertEquals(3, files(paths.eventsDir()).size(), "the node events are spooled, the mount-done is not");
        // close with Kafka down returns (bounded), delivering nothing
        CompletableFuture.runAsync(() -> first.close(Duration.ofSeconds(5))).get(60, TimeUnit.SECONDS);
        for (CompletableFuture<Void> ack : acks) {
            assertFalse(ack.isDone() && !ack.isCompletedExceptionally(), "nothing was acknowledged");
        }
        assertEquals(3, files(paths.eventsDir()).size(), "the spool outlives the publisher");

        // 2. the restarted worker: a new publisher on the same root, Kafka reachable
        KafkaEventPublisher second = new KafkaEventPublisher(KafkaResource.bootstrapServers(), topics, SOURCE, 100,
                WorkerTracing.noop(), EventSpool.open(paths)).withSecurity(KafkaResource.securityOf(
                io.csiorchestrator.events.KafkaAccess.Principal.node("spool-node"), topics.prefix()));
        assertEquals(3, second.queued(), "the spooled events are queued at construction, before anything new");
        CompletableFuture<Void> newEvent = second.send(event(3));
        CompletableFuture<Void> newMountDone = second.send(mountDone("cmd-after-restart"));
        second.start();
        try {
            CompletableFuture.allOf(newEvent, newMountDone).get(60, TimeUnit.SECONDS);
            try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
                List<ConsumerRecord<String, String>> records = kafka.awaitRecords(topics.name(Topic.NODE_EVENTS),
                        r -> true, 4, Duration.ofSeconds(60));
                assertEquals(4, records.size());
                List<String> deliveredIds = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    ConsumerRecord<String, String> r = records.get(i);
                    assertEquals("v" + i, EventCodec.decode(NodeEvent.class, r.value()).volumeId(), "in order");
                    assertEquals("spool-node", r.key());
                    assertEquals(SOURCE, KafkaTestClient.header(r, CloudEventHeaders.CE_SOURCE));
                    assertNotNull(KafkaTestClient.header(r, CloudEventHeaders.CE_TYPE));
                    assertNotNull(KafkaTestClient.header(r, CloudEventHeaders.CE_TIME));
                    deliveredIds.add(KafkaTestClient.header(r, CloudEventHeaders.CE_ID));
                    if (i < 3) {
                        assertEquals("00-" + TRACE_ID + "-" + SPAN_ID + "-01", KafkaTestClient.header(r, "traceparent"),
                                "the spooled record keeps the trace context of its cause");
                        assertEquals("csi=spool", KafkaTestClient.header(r, "tracestate"));
                    }
                }
                assertEquals(givenIds, deliveredIds.subList(0, 3), "the ce_ids the first publisher gave");
                assertFalse(givenIds.contains(deliveredIds.get(3)));

                List<ConsumerRecord<String, String>> mountDones = kafka.readAll(topics.name(Topic.MOUNT_DONE));
                assertEquals(List.of("cmd-after-restart"), mountDones.stream()
                        .map(r -> EventCodec.decode(MountDone.class, r.value()).commandId()).toList(),
                        "the mount-done from before the crash is not redelivered by the spool");
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> files(paths.eventsDir()).isEmpty());
        } finally {
            second.close(Duration.ofSeconds(5));
        }
    }
}
