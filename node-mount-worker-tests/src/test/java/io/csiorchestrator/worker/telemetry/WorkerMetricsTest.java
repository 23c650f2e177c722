package io.csiorchestrator.worker.telemetry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.csiorchestrator.csi.CsiAttempt;
import io.csiorchestrator.csi.CsiRpc;
import io.csiorchestrator.events.NodeCommandKind;
import io.grpc.Status;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WorkerMetricsTest {

    @Test
    void everyAttemptIsTimedByPluginRpcAndCodeAndRetriesAreCounted() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        WorkerMetrics metrics = new WorkerMetrics(registry);
        var listener = metrics.csiAttempts("hp");
        listener.onAttempt(new CsiAttempt(CsiRpc.NODE_STAGE_VOLUME, 1, Status.Code.UNAVAILABLE,
                Optional.of(Duration.ofMillis(100)), Duration.ofMillis(30)));
        listener.onAttempt(new CsiAttempt(CsiRpc.NODE_STAGE_VOLUME, 2, Status.Code.OK, Optional.empty(),
                Duration.ofMillis(70)));

        var unavailable = registry.get(WorkerMetrics.CSI_RPC).tag("plugin", "hp").tag("rpc", "NodeStageVolume")
                .tag("code", "UNAVAILABLE").timer();
        var ok = registry.get(WorkerMetrics.CSI_RPC).tag("plugin", "hp").tag("rpc", "NodeStageVolume")
                .tag("code", "OK").timer();
        assertEquals(1, unavailable.count());
        assertEquals(30, unavailable.totalTime(TimeUnit.MILLISECONDS), 0.5);
        assertEquals(1, ok.count());
        assertEquals(70, ok.totalTime(TimeUnit.MILLISECONDS), 0.5);
        assertEquals(1.0, registry.get(WorkerMetrics.CSI_RPC_RETRIES).tag("plugin", "hp").tag("rpc", "NodeStageVolume")
                .counter().count(), "the second attempt is a retry");
        assertEquals(WorkerMetrics.BUCKETS.length, ok.takeSnapshot().histogramCounts().length, "histogram buckets");
    }

    @Test
    void nodeCommandsAreTimedByKindAndOutcome() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        WorkerMetrics metrics = new WorkerMetrics(registry);
        metrics.nodeCommand(NodeCommandKind.CONTROLLER_PUBLISH, false, Duration.ofSeconds(2));
        assertEquals(1, registry.get(WorkerMetrics.NODE_COMMAND).tag("kind", "controller-publish")
                .tag("outcome", "failed").timer().count());
        assertNull(registry.find(WorkerMetrics.CSI_RPC_RETRIES).counter());
    }
}
