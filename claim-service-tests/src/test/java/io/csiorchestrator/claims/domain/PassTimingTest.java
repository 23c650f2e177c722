package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The reconcile pass's timing arithmetic: fireAt(due) = max(due, lastPass + spacing), the earliest armed wins. */
class PassTimingTest {

    private static final Instant T = Instant.parse("2026-11-29T08:00:00Z");
    private static final Duration SPACING = Duration.ofSeconds(5);

    @Test
    void aDueTimeIsArmedAsItIsWhenThePassBeforeIsFarEnoughBack() {
        PassTiming timing = new PassTiming(SPACING);
        timing.began(T);
        assertEquals(T.plusSeconds(60), timing.offer(T.plusSeconds(60)));
        assertEquals(T.plusSeconds(60), timing.armed());
    }

    @Test
    void aDueTimeTooSoonAfterThePassBeforeWaitsOneSpacing() {
        PassTiming timing = new PassTiming(SPACING);
        timing.began(T);
        assertEquals(T.plusSeconds(5), timing.offer(T.plusSeconds(1)), "rate limit: not sooner than lastPass + spacing");
        assertNull(timing.offer(T.minusSeconds(30)), "a due time in the past is held at the same limit: covered");
        assertEquals(T.plusSeconds(5), timing.armed());
    }

    @Test
    void onlyAnEarlierMomentReplacesWhatIsArmed() {
        PassTiming timing = new PassTiming(SPACING);
        assertEquals(T.plusSeconds(120), timing.offer(T.plusSeconds(120)));
        assertNull(timing.offer(T.plusSeconds(130)), "later than the armed pass: covered by it");
        assertNull(timing.offer(T.plusSeconds(120)), "the same moment: covered");
        assertEquals(T.plusSeconds(30), timing.offer(T.plusSeconds(30)));
        assertEquals(T.plusSeconds(30), timing.armed());
    }

    @Test
    void aPassThatBeganDisarmsAndTheNextOfferArmsAgain() {
        PassTiming timing = new PassTiming(SPACING);
        timing.offer(T.plusSeconds(10));
        timing.began(T.plusSeconds(10));
        assertNull(timing.armed());
        assertEquals(T.plusSeconds(15), timing.offer(T.plusSeconds(10)), "work left by the batch limit: one spacing on");
    }

    @Test
    void clearForgetsTheArmedPass() {
        PassTiming timing = new PassTiming(SPACING);
        timing.offer(T.plusSeconds(100));
        timing.clear();
        assertNull(timing.armed());
        assertEquals(T.plusSeconds(200), timing.offer(T.plusSeconds(200)), "after a clear a later moment arms again");
    }

    @Test
    void aNegativeSpacingIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> new PassTiming(Duration.ofSeconds(-1)));
    }
}
