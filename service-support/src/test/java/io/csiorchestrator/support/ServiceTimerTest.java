package io.csiorchestrator.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The interval settings the services' timers read ({@link ServiceTimer#interval}), as quarkus-scheduler read them before. */
class ServiceTimerTest {

    @Test
    void offOrDisabledIsNoInterval() {
        assertNull(ServiceTimer.interval("off"));
        assertNull(ServiceTimer.interval(" Disabled "));
    }

    @Test
    void durationsInEitherFormAreRead() {
        assertEquals(Duration.ofMinutes(5), ServiceTimer.interval("5m"));
        assertEquals(Duration.ofSeconds(30), ServiceTimer.interval("30s"));
        assertEquals(Duration.ofMinutes(5), ServiceTimer.interval("PT5M"));
    }

    @Test
    void aZeroOrNegativeIntervalIsRefusedWithTheValue() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ServiceTimer.interval("0s"));
        assertTrue(e.getMessage().contains("'0s'"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ServiceTimer.interval("-PT1M"));
    }

    @Test
    void aRunThatThrowsIsLoggedAndTheNextOneIsStillDue() throws InterruptedException {
        try (ServiceTimer timer = new ServiceTimer("service-timer-test")) {
            CountDownLatch runs = new CountDownLatch(3);
            AtomicReference<String> thread = new AtomicReference<>();
            timer.every("a job that always fails", Duration.ZERO, Duration.ofMillis(10), () -> {
                thread.set(Thread.currentThread().getName());
                runs.countDown();
                throw new IllegalStateException("it failed");
            });
            assertTrue(runs.await(30, TimeUnit.SECONDS), "the job ran " + (3 - runs.getCount()) + " times, not 3");
            assertEquals("service-timer-test", thread.get());
        }
    }
}
