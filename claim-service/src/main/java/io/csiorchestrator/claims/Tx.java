package io.csiorchestrator.claims;

import io.csiorchestrator.events.tracing.KafkaTraceHeaders;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.context.Context;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * One state transaction and the input that caused it: the trace context to continue in the outbox
 * rows it writes (captured synchronously when the input's handler starts), and the observations
 * (latency timers) that count only once the transaction committed.
 */
public final class Tx {

    private final String traceparent;
    private final String tracestate;
    private final List<Runnable> afterCommit = new ArrayList<>();

    private Tx(String traceparent, String tracestate) {
        this.traceparent = traceparent;
        this.tracestate = tracestate;
    }

    /** A transaction without a traced cause (reconciler, REST): its outbox rows start new traces. */
    public static Tx untraced() {
        return new Tx(null, null);
    }

    /** A transaction caused by {@code context} (e.g. the span of the Kafka record being processed). */
    public static Tx causedBy(OpenTelemetry openTelemetry, Context context) {
        RecordHeaders headers = new RecordHeaders();
        KafkaTraceHeaders.inject(openTelemetry, context, headers);
        return new Tx(text(headers.lastHeader(KafkaTraceHeaders.TRACEPARENT)), text(headers.lastHeader(KafkaTraceHeaders.TRACESTATE)));
    }

    private static String text(Header header) {
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    /** The W3C traceparent of the cause, or null. */
    public String traceparent() {
        return traceparent;
    }

    /** The W3C tracestate of the cause, or null. */
    public String tracestate() {
        return tracestate;
    }

    /** Runs {@code observation} once the transaction committed (never if it rolls back). */
    public void afterCommit(Runnable observation) {
        afterCommit.add(observation);
    }

    /** Forgets the observations of a transaction that rolled back (a retry records its own). */
    void rolledBack() {
        afterCommit.clear();
    }

    void committed() {
        for (Runnable r : afterCommit) {
            r.run();
        }
        afterCommit.clear();
    }
}
