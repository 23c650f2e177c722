package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The floor of the control plane's fence wait (issue 19 item 3) and the refusal of a failover-wait below it. */
class FenceTimersTest {

    @Test
    void theFloorIsTtlTimesOnePlusDriftPlusBudgetPlusMargin() {
        assertEquals(Duration.ofMillis(46_500), FenceTimers.DEFAULT.floor());
        assertEquals(Duration.ofMillis(31_500), FenceTimers.DEFAULT.driftedTtl());
        assertEquals(Duration.ofSeconds(15), FenceTimers.DEFAULT.afterLapse());
        assertEquals(Duration.ofMillis(46_500), FenceTimers.DEFAULT.effectiveFailoverWait(), "unset failover-wait = the floor");
        FenceTimers shortOnes = new FenceTimers(Duration.ofSeconds(2), 0.1, Duration.ofMillis(500), Duration.ofMillis(300), null);
        assertEquals(Duration.ofMillis(2_200 + 500 + 300), shortOnes.floor());
    }

    @Test
    void aFailoverWaitBelowTheFloorIsRefusedWithTheArithmetic() {
        FenceTimers low = new FenceTimers(Duration.ofSeconds(30), 0.05, Duration.ofSeconds(10), Duration.ofSeconds(5),
                Duration.ofSeconds(20));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, low::checked);
        assertEquals("csi.fencing.failover-wait 20s is below the floor 46.5s = lease-ttl 30s x 1.05 + budget 10s + margin 5s",
                e.getMessage());
        FenceTimers justBelow = new FenceTimers(Duration.ofSeconds(30), 0.05, Duration.ofSeconds(10), Duration.ofSeconds(5),
                Duration.ofMillis(46_499));
        assertThrows(IllegalArgumentException.class, justBelow::checked);
    }

    @Test
    void aFailoverWaitAtOrAboveTheFloorIsKept() {
        FenceTimers at = new FenceTimers(Duration.ofSeconds(30), 0.05, Duration.ofSeconds(10), Duration.ofSeconds(5),
                Duration.ofMillis(46_500));
        assertSame(at, at.checked());
        FenceTimers above = new FenceTimers(Duration.ofSeconds(30), 0.05, Duration.ofSeconds(10), Duration.ofSeconds(5),
                Duration.ofMinutes(2));
        assertEquals(Duration.ofMinutes(2), above.checked().effectiveFailoverWait());
    }

    @Test
    void nonsenseTimersAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new FenceTimers(Duration.ZERO, 0.05, Duration.ZERO, Duration.ZERO, null));
        assertThrows(IllegalArgumentException.class, () -> new FenceTimers(Duration.ofSeconds(1), -0.1, Duration.ZERO, Duration.ZERO, null));
        assertThrows(IllegalArgumentException.class, () -> new FenceTimers(Duration.ofSeconds(1), 0, Duration.ofSeconds(-1), Duration.ZERO, null));
    }
}
