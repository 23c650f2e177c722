package io.csiorchestrator.worker.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.VolumeUsageFigures;
import io.csiorchestrator.worker.state.VolumeKey;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** When a volume's usage is reported (issue 34): a table of before/after figures, then the first-seen and forget rules. */
class VolumeUsagesTest {

    private static final long GIB = 1L << 30;
    private static final long MIB = 1L << 20;

    private record Case(String name, VolumeUsageFigures before, VolumeUsageFigures now, boolean reported) {
    }

    private static VolumeUsageFigures bytes(long total, long used) {
        return new VolumeUsageFigures(total, total - used, used, 1000L, 900L, 100L);
    }

    @Test
    void aChangeIsReportedWhenATotalChangesOrAFigureMovesByOnePercentOfTheTotal() {
        // 4 KiB at least; 1 MiB without a total; inodes 16 at least
        List<Case> cases = List.of(
                new Case("same figures", bytes(GIB, 0), bytes(GIB, 0), false),
                new Case("a few KiB written to 1 GiB", bytes(GIB, 0), bytes(GIB, 4096), false),
                new Case("just under 1% of 1 GiB", bytes(GIB, 0), bytes(GIB, GIB / 100 - 1), false),
                new Case("1% of 1 GiB", bytes(GIB, 0), bytes(GIB, GIB / 100), true),
                new Case("1% freed", bytes(GIB, GIB / 2), bytes(GIB, GIB / 2 - GIB / 100), true),
                new Case("10 MiB volume: under 1%", bytes(10 * MIB, 0), bytes(10 * MIB, 10 * MIB / 100 - 1), false),
                new Case("10 MiB volume: 1%", bytes(10 * MIB, 0), bytes(10 * MIB, 10 * MIB / 100), true),
                new Case("tiny volume: under a block", bytes(100_000, 0), bytes(100_000, 4095), false),
                new Case("tiny volume: a block", bytes(100_000, 0), bytes(100_000, 4096), true),
                new Case("no total: under 1 MiB", new VolumeUsageFigures(null, null, 0L, null, null, null),
                        new VolumeUsageFigures(null, null, MIB - 1, null, null, null), false),
                new Case("no total: 1 MiB", new VolumeUsageFigures(null, null, 0L, null, null, null),
                        new VolumeUsageFigures(null, null, MIB, null, null, null), true),
                new Case("expanded", bytes(GIB, 0), bytes(2 * GIB, 0), true),
                new Case("inodes: 15 more", bytes(GIB, 0), new VolumeUsageFigures(GIB, GIB, 0L, 1000L, 885L, 115L), false),
                new Case("inodes: 16 more", bytes(GIB, 0), new VolumeUsageFigures(GIB, GIB, 0L, 1000L, 884L, 116L), true),
                new Case("inodes no longer reported", bytes(GIB, 0),
                        new VolumeUsageFigures(GIB, GIB, 0L, null, null, null), true),
                new Case("available appears", new VolumeUsageFigures(GIB, null, 0L, null, null, null),
                        new VolumeUsageFigures(GIB, GIB, 0L, null, null, null), true));
        for (Case c : cases) {
            assertEquals(c.reported(), VolumeUsages.noticeable(c.before(), c.now()), c.name());
        }
    }

    @Test
    void theFirstObservationIsReportedAndAForgottenVolumeIsReportedAgain() {
        VolumeUsages usages = new VolumeUsages();
        VolumeKey key = new VolumeKey("default", "v1");
        assertTrue(usages.observe(key, "hp", bytes(GIB, 0)).isPresent(), "first seen");
        assertFalse(usages.observe(key, "hp", bytes(GIB, 4096)).isPresent(), "small change");
        assertEquals(4096L, usages.latest().get(key).usage().bytesUsed(), "the gauges see every change");
        // the last reported figures are the reference: many small steps add up to a reported one
        for (long used = 8192; used < GIB / 100; used += GIB / 1000) {
            usages.observe(key, "hp", bytes(GIB, used));
        }
        assertTrue(usages.observe(key, "hp", bytes(GIB, GIB / 100)).isPresent(), "1% since the last report");
        assertTrue(usages.retainOnly(Set.of()), "unpublished: forgotten");
        assertTrue(usages.latest().isEmpty());
        assertFalse(usages.retainOnly(Set.of()), "nothing left to forget");
        assertTrue(usages.observe(key, "hp", bytes(GIB, GIB / 100)).isPresent(), "published again: reported again");
    }
}
