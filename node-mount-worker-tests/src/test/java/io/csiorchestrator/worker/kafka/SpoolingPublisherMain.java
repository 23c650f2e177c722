package io.csiorchestrator.worker.kafka;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.WorkerPaths;
import io.csiorchestrator.worker.telemetry.WorkerTracing;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.header.Headers;

/**
 * A worker's event publisher in its own JVM, for {@link KafkaEventPublisherKillNineTest}: with
 * Kafka unreachable it sends node events in a loop, without end, until it is killed. Each event is
 * spooled under the root by {@code send} before {@code send} returns; only then is the line
 * {@code spooled <ce_id> <volumeId>} printed (and flushed), so every printed event is one the
 * publisher acknowledged as spooled.
 *
 * <p>Arguments: the worker root, the (unreachable) bootstrap servers, the topic prefix.
 */
public final class SpoolingPublisherMain {

    private SpoolingPublisherMain() {
    }

    public static void main(String[] args) throws Exception {
        WorkerPaths paths = new WorkerPaths(Path.of(args[0]), new PosixDirs());
        AtomicReference<String> lastCeId = new AtomicReference<>();
        OpenTelemetry otel = OpenTelemetry.propagating(ContextPropagators.create(new TextMapPropagator() {
            @Override
            public Collection<String> fields() {
                return List.of();
            }

            @Override
            public <C> void inject(Context context, C carrier, TextMapSetter<C> setter) {
                if (carrier instanceof Headers headers) {
                    lastCeId.set(new String(headers.lastHeader(CloudEventHeaders.CE_ID).value(), StandardCharsets.UTF_8));
                }
            }

            @Override
            public <C> Context extract(Context context, C carrier, TextMapGetter<C> getter) {
                return context;
            }
        }));
        // a capacity no run reaches: a full queue drops the oldest event with its spool file
        KafkaEventPublisher publisher = new KafkaEventPublisher(args[1], new TopicCatalog(args[2]), "/node-mount-worker",
                Integer.MAX_VALUE, new WorkerTracing(otel, otel.getTracer("spool-main")), EventSpool.open(paths));
        publisher.start();
        // a traced cause: the publish span's context is injected into the record's headers, where the
        // propagator above reads the ce_id the publisher gave
        Context cause = Context.root().with(Span.wrap(SpanContext.create("0af7651916cd43dd8448eb211c80319c",
                "b7ad6b7169203331", TraceFlags.getSampled(), TraceState.getDefault())));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (long n = 0; ; n++) {
            String volumeId = "v" + n;
            publisher.send(new NodeEvent("spool-node", null, NodeEventKind.RESTORE, "Restore volume after worker restart",
                    null, "ns", volumeId, null, true, null, Map.of(), Instant.now()), cause);
            out.println("spooled " + lastCeId.get() + " " + volumeId);
            out.flush();
        }
    }
}
