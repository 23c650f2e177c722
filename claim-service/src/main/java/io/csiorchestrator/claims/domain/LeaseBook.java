package io.csiorchestrator.claims.domain;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What claim-service knows of each node's lease (topic {@code node-leases}, read by every replica), and the one rule
 * that lets a node's claims be assumed detached without its word (issue 19, design "claim-service"). Pure: times are
 * the caller's monotonic clock ({@code System.nanoTime()}), passed in; thread-safe (every method is synchronized).
 *
 * <p>Per node: the newest epoch, its state, the local receipt time of the newest VALID lease, and the receipt time of
 * the LAPSED (or FENCED) lease that ended the epoch. A book starts with every receipt time at its own start: after a
 * restart or a failover claim-service treats every lease as just granted (it cannot know when the node last renewed).
 *
 * <p>A node's claims may be assumed detached ({@link Verdict.Fenced}) only when it received LAPSED or FENCED for the
 * node at an epoch at or above the claim's mount epoch, and {@code now >= lastValidReceipt + failover-wait} and
 * {@code now >= lapseReceipt + budget + margin}. Never by a plain timeout: a node of which no lease is known waits for
 * its own unmount or an operator ({@link Verdict.NoLease}).
 */
public final class LeaseBook {

    /** A lease's state as the registry publishes it. */
    public enum State {
        VALID, LAPSED, FENCED;

        boolean ended() {
            return this != VALID;
        }
    }

    /** Whether a received lease changed the book. */
    public enum Applied {
        /** Newer or as new as what the book held: taken. */
        TAKEN,
        /** Older than the node's newest epoch: ignored. */
        STALE
    }

    /** The verdict on a node's claims that are waiting for the node's unmount. */
    public sealed interface Verdict permits Verdict.Fenced, Verdict.Wait, Verdict.NoLease {
        String reason();

        /** The node's lease ended at an epoch covering the claim and the fence wait passed: assumed detached. */
        record Fenced(long epoch, String reason) implements Verdict {
        }

        /**
         * Not yet: {@code lapsed} false = the lease is (as far as known) still valid; true = it lapsed and its fence
         * wait runs. {@code left}: at least this long (never negative).
         */
        record Wait(boolean lapsed, Duration left, String reason) implements Verdict {
        }

        /** No lease of the node is known (a worker without leases): only its unmount or an operator frees it. */
        record NoLease(String reason) implements Verdict {
        }
    }

    /** One node's lease as known here. */
    public record Entry(long epoch, State state, long lastValidNanos, long endedNanos) {
    }

    private final long startNanos;
    private final Map<String, Entry> nodes = new HashMap<>();

    /** A book whose every receipt time starts at {@code startNanos} (claim-service's start). */
    public LeaseBook(long startNanos) {
        this.startNanos = startNanos;
    }

    /** Takes a lease record received at {@code nowNanos}, unless its epoch is older than the node's newest. */
    public synchronized Applied receive(String nodeId, long epoch, State state, long nowNanos) {
        Entry known = nodes.get(nodeId);
        if (known != null && epoch < known.epoch()) {
            return Applied.STALE;
        }
        long lastValid = known == null ? startNanos : known.lastValidNanos();
        if (state == State.VALID) {
            if (known != null && known.epoch() == epoch && known.state().ended()) {
                // The registry never grants an ended epoch again: a VALID of it is a late copy.
                return Applied.STALE;
            }
            nodes.put(nodeId, new Entry(epoch, State.VALID, Math.max(nowNanos, startNanos), -1));
            return Applied.TAKEN;
        }
        boolean sameEnd = known != null && known.epoch() == epoch && known.state().ended();
        long ended = sameEnd ? known.endedNanos() : Math.max(nowNanos, startNanos);
        nodes.put(nodeId, new Entry(epoch, state, lastValid, ended));
        return Applied.TAKEN;
    }

    /** The node's newest known epoch, or null when none is known. */
    public synchronized Long epoch(String nodeId) {
        Entry e = nodes.get(nodeId);
        return e == null ? null : e.epoch();
    }

    /** The node's lease, or null. */
    public synchronized Entry entry(String nodeId) {
        return nodes.get(nodeId);
    }

    /**
     * Whether {@code epoch} (an event's or answer's lease epoch; null = its sender predates leases) is older than the
     * node's newest known epoch: such a record is ignored (a node back from a partition cannot overwrite newer state).
     */
    public synchronized boolean stale(String nodeId, Long epoch) {
        Entry e = nodes.get(nodeId);
        return epoch != null && e != null && epoch < e.epoch();
    }

    /** The nodes whose newest lease is LAPSED or FENCED. */
    public synchronized List<String> endedNodes() {
        return nodes.entrySet().stream().filter(e -> e.getValue().state().ended()).map(Map.Entry::getKey).sorted().toList();
    }

    /**
     * Whether the claims on {@code nodeId} mounted under {@code mountEpoch} (0 when it was not known) may be assumed
     * detached at {@code nowNanos}.
     */
    public synchronized Verdict verdict(String nodeId, long mountEpoch, FenceTimers timers, long nowNanos) {
        Entry e = nodes.get(nodeId);
        if (e == null) {
            return new Verdict.NoLease("no lease of " + nodeId + " is known: waiting for its unmount or an operator's detach");
        }
        long validDue = e.lastValidNanos() + timers.effectiveFailoverWait().toNanos();
        if (!e.state().ended() || e.epoch() < mountEpoch) {
            Duration left = left(validDue, nowNanos);
            return new Verdict.Wait(false, left, "waiting for " + nodeId + "'s lease to lapse: " + seconds(left) + " s left");
        }
        long due = Math.max(validDue, e.endedNanos() + timers.afterLapse().toNanos());
        if (nowNanos - due >= 0) {
            return new Verdict.Fenced(e.epoch(), nodeId + "'s lease epoch " + e.epoch() + " "
                    + (e.state() == State.FENCED ? "was fenced" : "lapsed") + " and the fence wait passed: assumed detached");
        }
        Duration left = left(due, nowNanos);
        return new Verdict.Wait(true, left, nodeId + " lease " + (e.state() == State.FENCED ? "fenced" : "lapsed")
                + ", waiting for its fence: " + seconds(left) + " s left");
    }

    private static Duration left(long dueNanos, long nowNanos) {
        return Duration.ofNanos(Math.max(0, dueNanos - nowNanos));
    }

    private static long seconds(Duration d) {
        return (d.toMillis() + 999) / 1000;
    }
}
