package io.csiorchestrator.worker.telemetry;

import static org.junit.jupiter.api.Assertions.assertFalse;

import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** An operator's endpoint suppresses the drop-everything exporter, so the extension's OTLP exporter is installed. */
@QuarkusTest
@TestProfile(NoTraceExportWithEndpointTest.WithEndpoint.class)
class NoTraceExportWithEndpointTest {

    public static class WithEndpoint implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of(NoTraceExportUnlessConfigured.ENDPOINT, "http://127.0.0.1:14317");
        }
    }

    @Inject
    Instance<SpanExporter> exporters;

    @Test
    void anEndpointLetsTheExtensionExport() {
        assertFalse(exporters.stream().anyMatch(e -> e instanceof NoTraceExportUnlessConfigured));
    }
}
