package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** {@link LiveChanges}' signalling (pure; the live stream itself runs in StatusPageIT against claim-service). */
class LiveChangesTest {

    /** A waiter is woken by a signal; several signals while nobody waits count as one. */
    @Test
    void signalsWakeAWaiterAndCoalesce() throws Exception {
        try (LiveChanges changes = LiveChanges.none()) {
            CompletableFuture<Boolean> woken = CompletableFuture.supplyAsync(() -> {
                try {
                    return changes.await(TimeUnit.MINUTES.toNanos(5));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            changes.signal();
            assertTrue(woken.get(30, TimeUnit.SECONDS));
            changes.signal();
            changes.signal();
            assertTrue(changes.await(0));
            assertFalse(changes.await(0), "two signals while nobody waited are one change");
        }
    }

    /** With no live source, a watch looks again every interval: the view is read more than once before the deadline. */
    @Test
    void withoutLiveEventsTheWatchRefreshesEveryInterval() {
        AtomicInteger reads = new AtomicInteger();
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        Follow.watch(() -> {
            if (reads.incrementAndGet() == 3) {
                Thread.currentThread().interrupt();
            }
            return "v\n";
        }, LiveChanges.none(), Duration.ofMillis(1), Duration.ofHours(1), Long.MAX_VALUE,
                new PrintStream(buffer, true, StandardCharsets.UTF_8));
        Thread.interrupted();
        assertTrue(reads.get() >= 3);
    }

    /** A live source that signals wakes the watch long before its safety refresh (an hour here). */
    @Test
    void aSignalMakesTheWatchLookAgain() {
        LiveChanges changes = LiveChanges.none();
        AtomicInteger reads = new AtomicInteger();
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        Follow.watch(() -> {
            int n = reads.incrementAndGet();
            if (n == 2) {
                Thread.currentThread().interrupt();
            } else {
                changes.signal();
            }
            return "v" + n + "\n";
        }, changes, Duration.ofHours(1), Duration.ofHours(1), System.nanoTime() + TimeUnit.SECONDS.toNanos(60),
                new PrintStream(buffer, true, StandardCharsets.UTF_8));
        Thread.interrupted();
        assertTrue(buffer.toString(StandardCharsets.UTF_8).contains("v2"));
    }
}
