package io.csiorchestrator.plugins.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The lease reload's retry schedule (pure): backoff from 200 ms doubling to the maximum, reset once nothing waits. */
class PendingLoadsTest {

    private static final long MS = 1_000_000L;

    @Test
    void aFailedLoadIsDueAfterABackoffThatDoublesUpToTheMaximumAndStartsOverOnceLoaded() {
        PendingLoads p = new PendingLoads(Duration.ofSeconds(1));
        assertFalse(p.due(0), "nothing waits");
        assertEquals(java.util.OptionalLong.empty(), p.nextTryNanos(), "no try to wake for");
        p.failed(List.of(0, 1, 2), 0);
        assertEquals(java.util.OptionalLong.of(200 * MS), p.nextTryNanos(), "the authority's loop wakes for it");
        assertEquals(Set.of(0, 1, 2), p.partitions());
        assertFalse(p.due(199 * MS));
        assertTrue(p.due(200 * MS));
        p.failed(p.partitions(), 200 * MS);
        assertEquals(Duration.ofMillis(400), p.backoff());
        p.failed(p.partitions(), 600 * MS);
        p.failed(p.partitions(), 1400 * MS);
        assertEquals(Duration.ofSeconds(1), p.backoff(), "capped");
        assertEquals(4, p.failures());

        p.loaded(Set.of(0, 1));
        assertEquals(Set.of(2), p.partitions());
        assertEquals(4, p.failures(), "partition 2 still waits");
        p.revoked(Set.of(2));
        assertFalse(p.due(Long.MAX_VALUE / 2), "a revoked partition is not this instance's to load");
        p.failed(List.of(3), 5000 * MS);
        assertEquals(Duration.ofMillis(200), p.backoff(), "starts over");
    }

    @Test
    void aMaximumBelowTheFirstBackoffIsRefusedNamingIt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new PendingLoads(Duration.ofMillis(50)));
        assertTrue(e.getMessage().contains("csi.registry.lease-reload-max-backoff PT0.05S"), e.getMessage());
    }
}
