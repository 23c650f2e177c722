package io.csiorchestrator.worker.telemetry;

import io.csiorchestrator.events.tracing.KafkaTraceHeaders;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Headers;

/**
 * Spans of the worker, with W3C trace context carried in Kafka headers ({@link KafkaTraceHeaders}):
 * a CONSUMER span {@code <topic> process} per node command (child of the record's
 * {@code traceparent}), a PRODUCER span {@code <topic> publish} per record produced because of
 * it, and a CLIENT span {@code csi/<Rpc>} per CSI call. Contexts are passed explicitly; the only
 * implicit one is the command's context made current on the volume thread for the (blocking)
 * duration of the command, see {@link #csiCall}.
 */
public final class WorkerTracing {

    static final AttributeKey<String> MESSAGING_SYSTEM = AttributeKey.stringKey("messaging.system");
    static final AttributeKey<String> MESSAGING_DESTINATION = AttributeKey.stringKey("messaging.destination.name");
    static final AttributeKey<String> MESSAGING_OPERATION = AttributeKey.stringKey("messaging.operation");
    static final AttributeKey<String> MESSAGING_PARTITION = AttributeKey.stringKey("messaging.destination.partition.id");
    static final AttributeKey<Long> MESSAGING_OFFSET = AttributeKey.longKey("messaging.kafka.message.offset");
    static final AttributeKey<String> MESSAGING_KEY = AttributeKey.stringKey("messaging.kafka.message.key");
    static final AttributeKey<String> RPC_SYSTEM = AttributeKey.stringKey("rpc.system");
    static final AttributeKey<String> RPC_SERVICE = AttributeKey.stringKey("rpc.service");
    static final AttributeKey<String> RPC_METHOD = AttributeKey.stringKey("rpc.method");
    static final AttributeKey<String> GRPC_STATUS = AttributeKey.stringKey("rpc.grpc.status_code");
    static final AttributeKey<String> CSI_PLUGIN = AttributeKey.stringKey("csi.plugin");

    private final OpenTelemetry openTelemetry;
    private final Tracer tracer;

    public WorkerTracing(OpenTelemetry openTelemetry, Tracer tracer) {
        this.openTelemetry = openTelemetry;
        this.tracer = tracer;
    }

    /** No spans, no headers (plain unit tests). */
    public static WorkerTracing noop() {
        OpenTelemetry noop = OpenTelemetry.noop();
        return new WorkerTracing(noop, noop.getTracer("node-mount-worker"));
    }

    /**
     * Starts the CONSUMER span {@code <topic> process} of a consumed record, as a child of the
     * trace its headers carry (a new trace when they carry none). End it when the record's work is done.
     */
    public Span startProcess(ConsumerRecord<String, ?> record) {
        Context parent = KafkaTraceHeaders.extract(openTelemetry, Context.root(), record.headers());
        return tracer.spanBuilder(record.topic() + " process")
                .setParent(parent)
                .setSpanKind(SpanKind.CONSUMER)
                .setAttribute(MESSAGING_SYSTEM, "kafka")
                .setAttribute(MESSAGING_OPERATION, "process")
                .setAttribute(MESSAGING_DESTINATION, record.topic())
                .setAttribute(MESSAGING_PARTITION, Integer.toString(record.partition()))
                .setAttribute(MESSAGING_OFFSET, record.offset())
                .startSpan();
    }

    /**
     * For a record produced because of {@code cause}: starts the PRODUCER span
     * {@code <topic> publish} as its child and writes that span's context into {@code headers}.
     * Returns the span (end it on the broker's acknowledgement), or an invalid span and no headers
     * when {@code cause} carries no trace (a heartbeat has no parent and needs no trace).
     */
    public Span startPublish(Context cause, String topic, Headers headers) {
        if (!Span.fromContext(cause).getSpanContext().isValid()) {
            return Span.getInvalid();
        }
        Span span = tracer.spanBuilder(topic + " publish")
                .setParent(cause)
                .setSpanKind(SpanKind.PRODUCER)
                .setAttribute(MESSAGING_SYSTEM, "kafka")
                .setAttribute(MESSAGING_OPERATION, "publish")
                .setAttribute(MESSAGING_DESTINATION, topic)
                .startSpan();
        KafkaTraceHeaders.inject(openTelemetry, cause.with(span), headers);
        return span;
    }

    /**
     * Starts the CLIENT span {@code csi/<method>} of one CSI call (with its retries) made on the
     * calling thread, as a child of the current context: the volume thread runs a command inside
     * the command's context ({@code Context.makeCurrent()} around the command) and awaits each
     * call there, so the parent is the command's {@code node-commands process} span; a restore or
     * heal runs without one and its calls start their own traces.
     */
    public Span csiCall(String pluginId, String service, String method) {
        return tracer.spanBuilder("csi/" + method)
                .setParent(Context.current())
                .setSpanKind(SpanKind.CLIENT)
                .setAttribute(RPC_SYSTEM, "grpc")
                .setAttribute(RPC_SERVICE, service)
                .setAttribute(RPC_METHOD, method)
                .setAttribute(CSI_PLUGIN, pluginId)
                .startSpan();
    }

    /** Ends a CSI span with the call's gRPC status code name ({@code OK} on success). */
    public static void endCsiCall(Span span, String code, String message) {
        span.setAttribute(GRPC_STATUS, code);
        if (!"OK".equals(code)) {
            span.setStatus(StatusCode.ERROR, message == null ? code : code + ": " + message);
        }
        span.end();
    }

    /** Ends a span, marking it failed when {@code failure} is set. */
    public static void end(Span span, Throwable failure) {
        if (failure != null) {
            span.recordException(failure);
            span.setStatus(StatusCode.ERROR, String.valueOf(failure.getMessage()));
        }
        span.end();
    }

    public OpenTelemetry openTelemetry() {
        return openTelemetry;
    }
}
