package io.csiorchestrator.worker.telemetry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.worker.it.RecordingSpanExporter;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.quarkus.opentelemetry.runtime.exporter.otlp.tracing.LateBoundSpanProcessor;
import io.quarkus.opentelemetry.runtime.exporter.otlp.tracing.RemoveableLateBoundSpanProcessor;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.Test;

/**
 * An operator's endpoint ({@code QUARKUS_OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}) replaces the blank default: the
 * extension installs its OTLP exporter, and a span the worker ends reaches that endpoint (a fake collector
 * that only checks the gRPC connection's HTTP/2 preface arrives).
 */
@QuarkusTest
@TestProfile(NoTraceExportWithEndpointTest.WithEndpoint.class)
class NoTraceExportWithEndpointTest {

    private static final String HTTP2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    /** Like {@link NoTraceExportTest.AsShipped}, plus an endpoint on a free local port. */
    public static class WithEndpoint implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of(
                    "quarkus.arc.exclude-types", RecordingSpanExporter.class.getName(),
                    NoTraceExportTest.ENDPOINT, "http://127.0.0.1:" + freePort(),
                    "quarkus.otel.exporter.otlp.traces.timeout", "2s");
        }

        private static int freePort() {
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                return socket.getLocalPort();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    @Inject
    @Any
    Instance<SpanProcessor> processors;

    @Inject
    Tracer tracer;

    @Test
    void anEndpointInstallsTheExporter() {
        List<LateBoundSpanProcessor> otlp = NoTraceExportTest.otlpProcessors(processors);
        assertEquals(1, otlp.size(), "the extension's OTLP span processor bean: " + otlp);
        assertFalse(otlp.get(0) instanceof RemoveableLateBoundSpanProcessor,
                "with an endpoint the OTLP span processor must export");
    }

    @Test
    void spansAreSentToTheEndpoint() throws IOException {
        URI endpoint = URI.create(ConfigProvider.getConfig().getValue(NoTraceExportTest.ENDPOINT, String.class));
        try (ServerSocket collector = new ServerSocket(endpoint.getPort(), 50, InetAddress.getLoopbackAddress())) {
            collector.setSoTimeout(500);
            long deadline = System.nanoTime() + 20_000_000_000L;
            Socket connection = null;
            while (connection == null && System.nanoTime() - deadline < 0) {
                tracer.spanBuilder("no-trace-export-test").startSpan().end(); // exported within bsp.schedule.delay
                try {
                    connection = collector.accept();
                } catch (SocketTimeoutException notYet) {
                    // next span, next export
                }
            }
            assertTrue(connection != null, "no export reached " + endpoint);
            try (Socket c = connection) {
                c.setSoTimeout(10_000);
                InputStream in = c.getInputStream();
                byte[] preface = in.readNBytes(HTTP2_PREFACE.length());
                assertEquals(HTTP2_PREFACE, new String(preface, StandardCharsets.US_ASCII),
                        "the exporter's connection must start an HTTP/2 (gRPC) exchange");
            }
        }
    }
}
