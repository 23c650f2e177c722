package io.csiorchestrator.worker.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.worker.state.VolumeKey;
import java.time.Instant;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Which observed volume conditions the poller reports: first sight, a change, a new message while abnormal. */
class VolumeConditionsTest {

    static final VolumeKey V1 = new VolumeKey("ns", "v1");
    static final VolumeCondition NORMAL = new VolumeCondition(false, "volume is healthy");
    static final VolumeCondition DISK = new VolumeCondition(true, "disk failing");

    private final VolumeConditions conditions = new VolumeConditions();

    private Optional<VolumeConditions.Change> seen(VolumeCondition condition, int second) {
        return conditions.observe(V1, "hp", condition, Instant.ofEpochSecond(second));
    }

    @Test
    void theFirstSightIsReportedThenOnlyChanges() {
        assertEquals(Optional.of(new VolumeConditions.Change(V1, "hp", NORMAL, Instant.ofEpochSecond(1))), seen(NORMAL, 1));
        assertEquals(Optional.empty(), seen(NORMAL, 2), "the same normal condition again");
        assertEquals(Instant.ofEpochSecond(3), seen(DISK, 3).orElseThrow().since(), "normal -> abnormal");
        assertEquals(1, conditions.abnormal());
        assertEquals(Optional.empty(), seen(DISK, 4), "the same abnormal condition again");
        assertEquals("disk on fire", seen(new VolumeCondition(true, "disk on fire"), 5).orElseThrow().condition().message(),
                "a new message while abnormal");
        assertEquals(false, seen(new VolumeCondition(false, "ok"), 6).orElseThrow().condition().abnormal(),
                "abnormal -> normal");
        assertEquals(0, conditions.abnormal());
        assertEquals(Optional.empty(), seen(NORMAL, 7), "a normal message change is no change");
    }

    @Test
    void aVolumeNoLongerPublishedIsForgottenAndReportedAgainWhenSeenAgain() {
        seen(DISK, 1);
        conditions.retainOnly(Set.of());
        assertEquals(0, conditions.abnormal());
        assertTrue(seen(DISK, 2).isPresent());
    }
}
