package io.csiorchestrator.worker.telemetry;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.quarkus.arc.Unremovable;
import io.quarkus.arc.lookup.LookupIfProperty;
import jakarta.inject.Singleton;
import java.util.Collection;

/**
 * Keeps spans in the process unless an operator names a collector. In Quarkus 3.32.3
 * {@code quarkus.otel.exporter.otlp.traces.endpoint} falls back to
 * {@code quarkus.otel.exporter.otlp.endpoint}, whose built-in default is
 * {@code http://localhost:4317/} (an empty value counts as unset), so a worker without a collector
 * would export there and log "Failed to export" warnings. The extension installs its OTLP span
 * processor only when no {@link SpanExporter} bean can be looked up; this one, which drops what
 * it is given, can be looked up exactly while the traces endpoint is that built-in default. So: no
 * endpoint configured, no export attempt; {@code QUARKUS_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://collector:4317}
 * (any other value, {@code http://localhost:4317} without the slash included) suppresses this bean
 * and the extension exports there. Spans are created and trace context travels in Kafka headers
 * either way. NoTraceExportTest checks both sides.
 */
@Singleton
@Unremovable // only looked up by the extension, never injected
@LookupIfProperty(name = NoTraceExportUnlessConfigured.ENDPOINT, stringValue = NoTraceExportUnlessConfigured.QUARKUS_DEFAULT)
public class NoTraceExportUnlessConfigured implements SpanExporter {

    public static final String ENDPOINT = "quarkus.otel.exporter.otlp.traces.endpoint";
    /** The endpoint Quarkus 3.32.3 falls back to when none is configured. */
    public static final String QUARKUS_DEFAULT = "http://localhost:4317/";

    @Override
    public CompletableResultCode export(Collection<SpanData> spans) {
        return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode flush() {
        return CompletableResultCode.ofSuccess();
    }

    @Override
    public CompletableResultCode shutdown() {
        return CompletableResultCode.ofSuccess();
    }
}
