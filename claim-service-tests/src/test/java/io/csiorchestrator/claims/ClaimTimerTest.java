package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The interval settings claim-service's timers read ({@link ClaimTimer#interval}), as quarkus-scheduler read them before. */
class ClaimTimerTest {

    @Test
    void offOrDisabledIsNoInterval() {
        assertNull(ClaimTimer.interval("off"));
        assertNull(ClaimTimer.interval(" Disabled "));
    }

    @Test
    void durationsInEitherFormAreRead() {
        assertEquals(Duration.ofMinutes(5), ClaimTimer.interval("5m"));
        assertEquals(Duration.ofSeconds(30), ClaimTimer.interval("30s"));
        assertEquals(Duration.ofMinutes(5), ClaimTimer.interval("PT5M"));
    }

    @Test
    void aZeroOrNegativeIntervalIsRefusedWithTheValue() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ClaimTimer.interval("0s"));
        assertTrue(e.getMessage().contains("'0s'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ClaimTimer.interval("-PT1M"));
    }
}
