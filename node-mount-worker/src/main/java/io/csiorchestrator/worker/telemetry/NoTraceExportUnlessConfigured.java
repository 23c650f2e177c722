package io.csiorchestrator.worker.telemetry;

import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.quarkus.arc.lookup.LookupIfProperty;
import jakarta.inject.Singleton;
import java.util.Collection;

/**
 * Keeps spans in the process unless an operator names a collector. In Quarkus 3.32.3 the OTLP
 * exporter's endpoint defaults to {@code http://localhost:4317} when
 * {@code quarkus.otel.exporter.otlp.traces.endpoint} is unset (an empty value counts as unset),
 * so a worker without a collector would try to export and log export failures. The extension
 * installs its OTLP span processor only when no {@link SpanExporter} bean is looked up; this one
 * is looked up while the endpoint is unset (or {@code none}) and drops what it is given, so:
 * no endpoint, no export attempt; {@code QUARKUS_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://collector:4317}
 * suppresses this bean and the extension exports there. Spans are still created and trace
 * context still travels in Kafka headers either way.
 */
@Singleton
@LookupIfProperty(name = "quarkus.otel.exporter.otlp.traces.endpoint", stringValue = "none", lookupIfMissing = true)
public class NoTraceExportUnlessConfigured implements SpanExporter {

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
