package io.csiorchestrator.worker.telemetry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.Test;

/**
 * Without a configured endpoint the traces endpoint is Quarkus' built-in default and the
 * drop-everything exporter can be looked up, so the extension installs no OTLP exporter.
 * (With an endpoint: {@link NoTraceExportWithEndpointTest}.)
 */
@QuarkusTest
class NoTraceExportTest {

    @Inject
    Instance<SpanExporter> exporters;

    @Test
    void withoutAnEndpointNothingIsExported() {
        assertEquals(NoTraceExportUnlessConfigured.QUARKUS_DEFAULT, ConfigProvider.getConfig()
                .getValue(NoTraceExportUnlessConfigured.ENDPOINT, String.class),
                "the extension's default endpoint changed: update NoTraceExportUnlessConfigured");
        assertTrue(exporters.stream().anyMatch(e -> e instanceof NoTraceExportUnlessConfigured));
    }
}
