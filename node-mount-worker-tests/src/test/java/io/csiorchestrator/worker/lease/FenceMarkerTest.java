package io.csiorchestrator.worker.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The reading side of the fence guard's marker (issue 19 item 2): its grammar and what is refused. */
class FenceMarkerTest {

    @Test
    void readsTheEpochAndEachPathByOutcome() {
        FenceMarker m = FenceMarker.parse("epoch 7\nunmounted /w/per-alloc/a1/ns/v1\nlazy /w/per-alloc/a2/ns/v2\n"
                + "failed /w/staging/ns/v3\n\nlazy /w/staging/ns/v2\n");
        assertEquals(7, m.epoch());
        assertEquals(List.of("/w/per-alloc/a1/ns/v1"), m.unmounted());
        assertEquals(List.of("/w/per-alloc/a2/ns/v2", "/w/staging/ns/v2"), m.lazy());
        assertEquals(List.of("/w/staging/ns/v3"), m.failed());
    }

    /**
     * The guard's time of its unmounts ({@code at <EPOCHREALTIME>}, the last line; a comma as a locale may print it)
     * is read to the microsecond, so the FENCED report carries it; a marker without it has none; a bad one is refused.
     */
    @Test
    void readsTheGuardsTimeOfItsUnmounts() {
        FenceMarker m = FenceMarker.parse("epoch 3\nunmounted /w/per-alloc/a1/ns/v1\nat 1764033147.250001\n");
        assertEquals(java.time.Instant.ofEpochSecond(1764033147, 250_001_000), m.fencedAt());
        assertEquals(List.of("/w/per-alloc/a1/ns/v1"), m.unmounted());
        assertEquals(java.time.Instant.ofEpochSecond(1764033147, 500_000_000),
                FenceMarker.parse("epoch 3\nat 1764033147,500000\n").fencedAt());
        assertEquals(null, FenceMarker.parse("epoch 3\nunmounted /x\n").fencedAt());
        assertEquals("fence marker line 2: 'at soon' is not a time (seconds since the epoch)",
                assertThrows(IllegalArgumentException.class, () -> FenceMarker.parse("epoch 3\nat soon\n")).getMessage());
    }

    @Test
    void aMarkerOfNothingIsStillAFenceOfItsEpoch() {
        FenceMarker m = FenceMarker.parse("epoch 2\n");
        assertEquals(2, m.epoch());
        assertEquals(List.of(), m.unmounted());
    }

    @Test
    void refusesWhatIsNotAMarker() {
        assertEquals("fence marker: empty (no 'epoch <E>' line)",
                assertThrows(IllegalArgumentException.class, () -> FenceMarker.parse("\n")).getMessage());
        assertEquals("fence marker line 1: expected 'epoch <E>' first, got 'lazy /x'",
                assertThrows(IllegalArgumentException.class, () -> FenceMarker.parse("lazy /x\nepoch 1")).getMessage());
        assertEquals("fence marker line 1: epoch 'x' is not a positive number",
                assertThrows(IllegalArgumentException.class, () -> FenceMarker.parse("epoch x")).getMessage());
        assertEquals("fence marker line 1: epoch '0' is not a positive number",
                assertThrows(IllegalArgumentException.class, () -> FenceMarker.parse("epoch 0")).getMessage());
        assertEquals("fence marker line 2: unknown 'gone' (unmounted, lazy, failed or at)",
                assertThrows(IllegalArgumentException.class, () -> FenceMarker.parse("epoch 1\ngone /x")).getMessage());
        assertEquals("fence marker line 2: 'lazy' without a path",
                assertThrows(IllegalArgumentException.class, () -> FenceMarker.parse("epoch 1\nlazy")).getMessage());
    }
}
