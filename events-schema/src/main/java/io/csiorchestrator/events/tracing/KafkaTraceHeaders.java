package io.csiorchestrator.events.tracing;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import io.opentelemetry.context.propagation.TextMapSetter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * Trace context (W3C {@code traceparent} and {@code tracestate}) in Kafka record headers, for
 * code that uses a plain {@code KafkaProducer} or {@code KafkaConsumer} (SmallRye channels do
 * this on their own when OpenTelemetry is present). The header names are the ones SmallRye and
 * the OpenTelemetry Kafka instrumentation use, so a trace crosses every service whichever
 * client wrote the record.
 *
 * <p>Needs {@code io.opentelemetry:opentelemetry-api} on the class path; events-schema declares
 * it optional, so consumers of the contract that do not trace do not get it.
 */
public final class KafkaTraceHeaders {

    public static final String TRACEPARENT = "traceparent";
    public static final String TRACESTATE = "tracestate";

    private static final TextMapSetter<Headers> SETTER = (headers, key, value) -> {
        if (headers != null) {
            headers.remove(key);
            headers.add(key, value.getBytes(StandardCharsets.UTF_8));
        }
    };

    private static final TextMapGetter<Headers> GETTER = new TextMapGetter<>() {
        @Override
        public Iterable<String> keys(Headers headers) {
            List<String> keys = new ArrayList<>();
            for (Header header : headers) {
                keys.add(header.key());
            }
            return keys;
        }

        @Override
        public String get(Headers headers, String key) {
            if (headers == null) {
                return null;
            }
            Header header = headers.lastHeader(key);
            return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
        }
    };

    private KafkaTraceHeaders() {
    }

    /** Writes {@code context}'s trace into {@code headers}, replacing any trace headers already there. */
    public static void inject(OpenTelemetry openTelemetry, Context context, Headers headers) {
        openTelemetry.getPropagators().getTextMapPropagator().inject(context, headers, SETTER);
    }

    /** The context carried by {@code headers} on top of {@code parent}; {@code parent} when they carry none. */
    public static Context extract(OpenTelemetry openTelemetry, Context parent, Headers headers) {
        return openTelemetry.getPropagators().getTextMapPropagator().extract(parent, headers, GETTER);
    }

    /** The {@code traceparent} header's text, or null: to keep a trace with a stored row (an outbox). */
    public static String traceparent(Headers headers) {
        return GETTER.get(headers, TRACEPARENT);
    }

    /** {@code context}'s {@code traceparent} text, or null when it carries no valid span: what an outbox row keeps. */
    public static String traceparentOf(OpenTelemetry openTelemetry, Context context) {
        Headers headers = new RecordHeaders();
        inject(openTelemetry, context, headers);
        return traceparent(headers);
    }

    /** Reads a context back from a stored {@code traceparent} (and optional {@code tracestate}). */
    public static Context fromStored(OpenTelemetry openTelemetry, String traceparent, String tracestate) {
        if (traceparent == null || traceparent.isBlank()) {
            return Context.root();
        }
        Headers headers = new RecordHeaders();
        headers.add(TRACEPARENT, traceparent.getBytes(StandardCharsets.UTF_8));
        if (tracestate != null && !tracestate.isBlank()) {
            headers.add(TRACESTATE, tracestate.getBytes(StandardCharsets.UTF_8));
        }
        return extract(openTelemetry, Context.root(), headers);
    }
}
