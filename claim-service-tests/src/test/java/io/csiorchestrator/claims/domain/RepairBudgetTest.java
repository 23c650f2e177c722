package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The repair rate limit: a token bucket, with the time passed in. */
class RepairBudgetTest {

    static final Instant T0 = Instant.parse("2026-11-24T12:00:00Z");

    @Test
    void aBurstThenOnePerRefillInterval() {
        RepairBudget budget = new RepairBudget(60, 3); // one a second, three at once
        assertTrue(budget.tryTake(T0));
        assertTrue(budget.tryTake(T0));
        assertTrue(budget.tryTake(T0));
        assertFalse(budget.tryTake(T0), "burst used up");
        assertFalse(budget.tryTake(T0.plusMillis(500)), "half a token");
        assertTrue(budget.tryTake(T0.plusSeconds(1)), "refilled one");
        assertFalse(budget.tryTake(T0.plusSeconds(1)));
        assertTrue(budget.tryTake(T0.plusSeconds(60)));
        assertTrue(budget.tryTake(T0.plusSeconds(60)));
        assertTrue(budget.tryTake(T0.plusSeconds(60)));
        assertFalse(budget.tryTake(T0.plusSeconds(60)), "never more than the burst");
    }

    @Test
    void timeGoingBackwardsGivesNoTokens() {
        RepairBudget budget = new RepairBudget(60, 1);
        assertTrue(budget.tryTake(T0));
        assertFalse(budget.tryTake(T0.minusSeconds(30)));
        assertFalse(budget.tryTake(T0.plusMillis(999)));
    }

    @Test
    void rejectsANonPositiveRateOrBurst() {
        assertThrows(IllegalArgumentException.class, () -> new RepairBudget(0, 1));
        assertThrows(IllegalArgumentException.class, () -> new RepairBudget(1, 0));
    }
}
