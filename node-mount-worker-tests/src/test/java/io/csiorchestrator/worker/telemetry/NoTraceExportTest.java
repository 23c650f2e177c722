package io.csiorchestrator.worker.telemetry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.worker.it.RecordingSpanExporter;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.quarkus.opentelemetry.runtime.exporter.otlp.tracing.LateBoundSpanProcessor;
import io.quarkus.opentelemetry.runtime.exporter.otlp.tracing.RemoveableLateBoundSpanProcessor;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.Test;

/**
 * The worker as shipped exports no spans: {@code application.properties} sets the traces endpoint to a blank
 * value, and with it Quarkus 3.32.3 installs no OTLP span exporter (its span processor bean is the inert
 * {@link RemoveableLateBoundSpanProcessor}, which the tracer provider leaves out), so nothing is sent anywhere
 * (not to the extension's built-in {@code http://localhost:4317/} either). With an endpoint:
 * {@link NoTraceExportWithEndpointTest}.
 */
@QuarkusTest
@TestProfile(NoTraceExportTest.AsShipped.class)
class NoTraceExportTest {

    static final String ENDPOINT = "quarkus.otel.exporter.otlp.traces.endpoint";

    /**
     * Without the tests' {@link RecordingSpanExporter}: any {@link SpanExporter} bean by itself keeps the
     * extension from installing its OTLP exporter, which would make these checks pass whatever the endpoint.
     */
    public static class AsShipped implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("quarkus.arc.exclude-types", RecordingSpanExporter.class.getName());
        }
    }

    @Inject
    @Any
    Instance<SpanProcessor> processors;

    @Inject
    @Any
    Instance<SpanExporter> exporters;

    @Test
    void withoutAnEndpointNoExporterIsInstalled() {
        Optional<String> endpoint = ConfigProvider.getConfig().getOptionalValue(ENDPOINT, String.class);
        assertTrue(endpoint.isPresent() && endpoint.get().isBlank(),
                "application.properties must set " + ENDPOINT + " to a blank value, is " + endpoint);
        assertTrue(exporters.isUnsatisfied(), "no SpanExporter bean in the shipped worker");

        List<LateBoundSpanProcessor> otlp = otlpProcessors(processors);
        assertEquals(1, otlp.size(), "the extension's OTLP span processor bean: " + otlp);
        assertInstanceOf(RemoveableLateBoundSpanProcessor.class, otlp.get(0),
                "a blank endpoint must leave the OTLP span processor inert (no exporter)");
    }

    static List<LateBoundSpanProcessor> otlpProcessors(Instance<SpanProcessor> processors) {
        return processors.stream()
                .filter(LateBoundSpanProcessor.class::isInstance)
                .map(LateBoundSpanProcessor.class::cast)
                .toList();
    }
}
