package io.csiorchestrator.cli;

import java.time.Duration;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A bounded wait for a condition that has no event to listen to (a process' health endpoint, a
 * file a process writes): retries with a small, growing backoff, and fails at once when the
 * process it waits on has exited.
 */
public final class Wait {

    /** A wait that ended without its condition. */
    public static final class WaitFailed extends RuntimeException {
        public WaitFailed(String message) {
            super(message);
        }
    }

    private Wait() {
    }

    public static <T> T until(String what, Duration timeout, Cluster.Proc proc, Supplier<Optional<T>> check) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long backoff = 50;
        while (true) {
            Optional<T> value = check.get();
            if (value.isPresent()) {
                return value.get();
            }
            if (proc != null && !proc.handle().isAlive()) {
                throw new WaitFailed(proc.name() + " exited while waiting for " + what + " (log: " + proc.log() + ")");
            }
            if (System.nanoTime() > deadline) {
                throw new WaitFailed("timed out after " + timeout.toSeconds() + " s waiting for " + what
                        + (proc == null ? "" : " (log: " + proc.log() + ")"));
            }
            try {
                Thread.sleep(backoff);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new WaitFailed("interrupted while waiting for " + what);
            }
            backoff = Math.min(backoff * 2, 500);
        }
    }
}
