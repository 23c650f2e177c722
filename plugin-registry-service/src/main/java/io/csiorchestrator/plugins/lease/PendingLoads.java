package io.csiorchestrator.plugins.lease;

import java.time.Duration;
import java.util.Collection;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;

/**
 * The node-lease-requests partitions this instance was assigned whose persisted leases could not be loaded yet (the
 * database away at the assignment), and when to try again: 200 ms after the first failure, doubling up to a maximum.
 * Pure: the caller (the lease authority's one thread) passes {@code System.nanoTime()} values in, tries the load when
 * {@link #due} and says how it went. Until loaded, those partitions are neither answered nor swept for lapses.
 */
final class PendingLoads {

    static final Duration FIRST_BACKOFF = Duration.ofMillis(200);

    private final long maxBackoffNanos;
    private final Set<Integer> partitions = new TreeSet<>();
    private long backoffNanos;
    private long nextTryNanos;
    private int failures;

    PendingLoads(Duration maxBackoff) {
        if (maxBackoff.compareTo(FIRST_BACKOFF) < 0) {
            throw new IllegalArgumentException("csi.registry.lease-reload-max-backoff " + maxBackoff + " must be at least "
                    + FIRST_BACKOFF);
        }
        this.maxBackoffNanos = maxBackoff.toNanos();
    }

    /** Loading {@code failed} failed at {@code nowNanos}: they wait, the next try after the backoff. */
    void failed(Collection<Integer> failed, long nowNanos) {
        partitions.addAll(failed);
        backoffNanos = failures == 0 ? FIRST_BACKOFF.toNanos() : Math.min(maxBackoffNanos, backoffNanos * 2);
        failures++;
        nextTryNanos = nowNanos + backoffNanos;
    }

    /** Whether partitions wait and their next try is due at {@code nowNanos}. */
    boolean due(long nowNanos) {
        return !partitions.isEmpty() && nowNanos - nextTryNanos >= 0;
    }

    /** When the next try is due (a nanoTime value); empty while no partition waits. */
    OptionalLong nextTryNanos() {
        return partitions.isEmpty() ? OptionalLong.empty() : OptionalLong.of(nextTryNanos);
    }

    /** The partitions waiting for their load (a copy). */
    Set<Integer> partitions() {
        return new TreeSet<>(partitions);
    }

    /** Tries that failed since the last success. */
    int failures() {
        return failures;
    }

    /** How long until the next try after the last failure. */
    Duration backoff() {
        return Duration.ofNanos(backoffNanos);
    }

    /** {@code loaded} were loaded: they no longer wait; with none left the backoff starts over. */
    void loaded(Collection<Integer> loaded) {
        partitions.removeAll(loaded);
        if (partitions.isEmpty()) {
            failures = 0;
        }
    }

    /** {@code revoked} are no longer this instance's: nothing to load for them. */
    void revoked(Collection<Integer> revoked) {
        loaded(revoked);
    }

    int size() {
        return partitions.size();
    }
}
