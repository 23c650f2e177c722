package io.csiorchestrator.events.tracing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.ContextPropagators;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class KafkaTraceHeadersTest {

    private static final OpenTelemetry OTEL =
            OpenTelemetry.propagating(ContextPropagators.create(W3CTraceContextPropagator.getInstance()));
    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String SPAN_ID = "00f067aa0ba902b7";
    private static final String TRACEPARENT = "00-" + TRACE_ID + "-" + SPAN_ID + "-01";

    private static Context sampledContext() {
        SpanContext span = SpanContext.createFromRemoteParent(TRACE_ID, SPAN_ID, TraceFlags.getSampled(), TraceState.getDefault());
        return Context.root().with(Span.wrap(span));
    }

    @Test
    void injectWritesOneTraceparentAndReplacesAnOldOne() {
        Headers headers = new RecordHeaders();
        headers.add(KafkaTraceHeaders.TRACEPARENT, "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01".getBytes(StandardCharsets.UTF_8));

        KafkaTraceHeaders.inject(OTEL, sampledContext(), headers);

        assertEquals(1, headers.toArray().length);
        assertEquals(TRACEPARENT, KafkaTraceHeaders.traceparent(headers));
    }

    @Test
    void extractReadsTheRemoteSpanBack() {
        Headers headers = new RecordHeaders();
        headers.add(KafkaTraceHeaders.TRACEPARENT, TRACEPARENT.getBytes(StandardCharsets.UTF_8));

        SpanContext read = Span.fromContext(KafkaTraceHeaders.extract(OTEL, Context.root(), headers)).getSpanContext();

        assertTrue(read.isRemote());
        assertEquals(TRACE_ID, read.getTraceId());
        assertEquals(SPAN_ID, read.getSpanId());
    }

    @Test
    void aStoredTraceparentRoundTrips() {
        String stored = KafkaTraceHeaders.traceparentOf(OTEL, sampledContext());
        assertEquals(TRACEPARENT, stored);

        SpanContext read = Span.fromContext(KafkaTraceHeaders.fromStored(OTEL, stored, null)).getSpanContext();
        assertEquals(TRACE_ID, read.getTraceId());
    }

    @Test
    void noTraceMeansNoHeaderAndAnInvalidSpan() {
        assertNull(KafkaTraceHeaders.traceparentOf(OTEL, Context.root()));
        assertFalse(Span.fromContext(KafkaTraceHeaders.fromStored(OTEL, null, null)).getSpanContext().isValid());
        Headers garbage = new RecordHeaders();
        garbage.add(KafkaTraceHeaders.TRACEPARENT, "not-a-traceparent".getBytes(StandardCharsets.UTF_8));
        assertFalse(Span.fromContext(KafkaTraceHeaders.extract(OTEL, Context.root(), garbage)).getSpanContext().isValid());
    }
}
