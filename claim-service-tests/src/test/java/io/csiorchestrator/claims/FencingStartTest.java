package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * claim-service refuses to start with a failover-wait below the floor (issue 19 item 3): {@link Fencing}'s start
 * observer, given the settings as the config would map them (a plain implementation of the mapping interface; no
 * framework runs here), throws with the arithmetic, and accepts the default (unset = the floor).
 */
class FencingStartTest {

    record Settings(Duration leaseTtl, double clockDrift, Duration budget, Duration margin,
                    Optional<Duration> failoverWait) implements FencingSettings {
        @Override
        public Optional<List<String>> storageFencingPlugins() {
            return Optional.empty();
        }
    }

    @Test
    void aFailoverWaitBelowTheFloorStopsTheStartWithTheReason() {
        Fencing fencing = new Fencing();
        fencing.settings = new Settings(Duration.ofSeconds(30), 0.05, Duration.ofSeconds(10), Duration.ofSeconds(5),
                Optional.of(Duration.ofSeconds(20)));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> fencing.onStart(null));
        assertEquals("refusing to start: csi.fencing.failover-wait 20s is below the floor 46.5s = lease-ttl 30s x 1.05"
                + " + budget 10s + margin 5s", e.getMessage());
    }

    @Test
    void theDefaultFailoverWaitIsTheFloor() {
        Fencing fencing = new Fencing();
        fencing.settings = new Settings(Duration.ofSeconds(30), 0.05, Duration.ofSeconds(10), Duration.ofSeconds(5),
                Optional.empty());
        fencing.onStart(null);
        assertEquals(Duration.ofMillis(46_500), fencing.timers().effectiveFailoverWait());
    }
}
