package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/**
 * An application that stops and starts again in one JVM (Quarkus' tests, between test profiles) shows the new
 * application's outbox gauge, not the stopped one's: Quarkus' registry is Micrometer's global composite, which keeps
 * its meters across the restart in test mode, only swapping the registries under it (as done here by hand).
 */
class ClaimMetricsRestartTest {

    @Test
    void aRestartedApplicationsGaugeReadsTheNewBean() {
        CompositeMeterRegistry global = new CompositeMeterRegistry();
        SimpleMeterRegistry firstExport = new SimpleMeterRegistry();
        global.add(firstExport);
        ClaimMetrics first = metrics(global);
        first.outboxPending(3);
        assertEquals(3.0, firstExport.get(ClaimMetrics.OUTBOX_PENDING).gauge().value());

        first.unregister(); // the application stops: its beans are destroyed ...
        global.remove(firstExport); // ... and Quarkus closes and removes its registry, keeping the composite's meters
        SimpleMeterRegistry secondExport = new SimpleMeterRegistry();
        global.add(secondExport);
        ClaimMetrics second = metrics(global);
        second.outboxPending(7);

        assertEquals(7.0, secondExport.get(ClaimMetrics.OUTBOX_PENDING).gauge().value(),
            "the gauge /q/metrics renders reads the running application's bean");
    }

    private static ClaimMetrics metrics(CompositeMeterRegistry global) {
        ClaimMetrics metrics = new ClaimMetrics();
        metrics.registry = global;
        metrics.register();
        return metrics;
    }
}
