package io.csiorchestrator.worker.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What the FENCED report of a guard's fence lists (issue 19). */
class FenceReportTest {

    /**
     * The publications the guard's marker named when the worker took it in are all reported, by how the guard removed
     * them, also one an operation in flight released before the take-in reached its volume (absent from what the
     * volume's part of the take-in found); one listed already is not listed twice, and one the volume's part found
     * failed stays failed only.
     */
    @Test
    void everyPublicationTheGuardRemovedIsReportedOnceEvenWhenReleasedMeanwhile() {
        FenceReport applied = new FenceReport();
        applied.unmounted.add("ns/v1/a1");
        applied.failed.add("ns/v3/a3");
        Map<String, Boolean> named = new LinkedHashMap<>();
        named.put("ns/v1/a1", false);
        named.put("ns/v2/a2", false); // released meanwhile by a queued unmount: the volume's part found nothing
        named.put("ns/v4/a4", true); // the same, lazily detached by the guard
        named.put("ns/v3/a3", false);

        applied.withGuardNamed(named);

        assertEquals(List.of("ns/v1/a1", "ns/v2/a2"), applied.unmounted);
        assertEquals(List.of("ns/v4/a4"), applied.lazilyDetached);
        assertEquals(List.of("ns/v3/a3"), applied.failed);
    }
}
