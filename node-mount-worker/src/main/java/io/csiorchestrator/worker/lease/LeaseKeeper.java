package io.csiorchestrator.worker.lease;

import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseState;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The worker's view of its node's lease (issue 19): pure arithmetic on the monotonic clock, no I/O, not thread-safe
 * (the caller serializes). Times are {@code System.nanoTime()} values passed in, compared overflow-safe.
 *
 * <ul>
 *   <li>Each request the worker sends is remembered with its send time ({@link #requestSent}).</li>
 *   <li>A {@code valid} grant answering one of them sets the local expiry to that request's send time + the granted
 *       ttl, never earlier than an expiry already held for the same epoch. So the worker's expiry always precedes the
 *       registry's ({@code lastGrant + ttl x (1 + drift)}, counted from when the registry received it). A grant of
 *       an older epoch, or one answering no request of this process (a compacted record read at start), gives
 *       nothing.</li>
 *   <li>No answer means no renewal: a one-way partition (requests go out, grants do not come back) lapses like a
 *       full one.</li>
 *   <li>{@code lapsed} or {@code fenced} for the held epoch ends it at once.</li>
 *   <li>The fence is due at {@code expiry - fenceBudget} while not renewed ({@link #fenceDue}).</li>
 * </ul>
 */
public final class LeaseKeeper {

    /** How many unanswered requests are remembered (the oldest is forgotten first). */
    static final int REMEMBERED_REQUESTS = 64;

    private final String nodeId;
    private final Map<String, Long> sentAt = new LinkedHashMap<>();
    private long epoch;
    private boolean ended;
    private NodeLeaseState endedAs;
    private long expiryNanos;
    private long ttlNanos;
    private long budgetNanos;
    private long fencedEpoch;

    public LeaseKeeper(String nodeId) {
        this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
    }

    /** What a grant did to the lease. */
    public enum Change {
        /** The grant gave nothing (stale epoch, unknown request, not valid for the held epoch). */
        NONE,
        /** The first epoch of this process, or a new one after a lapse or fence. */
        NEW_EPOCH,
        /** The held epoch was renewed; the expiry moved on. */
        RENEWED,
        /** The held epoch lapsed or was fenced by the registry. */
        ENDED
    }

    /** Remembers that request {@code requestId} was sent at {@code nowNanos}. */
    public void requestSent(String requestId, long nowNanos) {
        sentAt.put(requestId, nowNanos);
        if (sentAt.size() > REMEMBERED_REQUESTS) {
            Iterator<String> oldest = sentAt.keySet().iterator();
            oldest.next();
            oldest.remove();
        }
    }

    /** The epoch to put in the next request: the held one while it is not ended, else 0 (none). */
    public long heldEpochForRequest() {
        return epoch > 0 && !ended ? epoch : 0;
    }

    /** Applies a record of {@code node-leases} for this node. */
    public Change onLease(NodeLease lease, long nowNanos) {
        if (!nodeId.equals(lease.nodeId()) || lease.epoch() < epoch) {
            return Change.NONE;
        }
        if (lease.state() != NodeLeaseState.VALID) {
            if (lease.epoch() == epoch && !ended) {
                ended = true;
                endedAs = lease.state();
                return Change.ENDED;
            }
            return Change.NONE;
        }
        Long sent = lease.requestId() == null ? null : sentAt.get(lease.requestId());
        if (sent == null) {
            return Change.NONE;
        }
        if (lease.epoch() == epoch && ended) {
            return Change.NONE; // an ended epoch is never valid again
        }
        long ttl = lease.ttlMillis() * 1_000_000L;
        long newExpiry = sent + ttl;
        Change change;
        if (lease.epoch() > epoch) {
            epoch = lease.epoch();
            ended = false;
            endedAs = null;
            expiryNanos = newExpiry;
            change = Change.NEW_EPOCH;
        } else {
            if (newExpiry - expiryNanos > 0) {
                expiryNanos = newExpiry;
            }
            change = Change.RENEWED;
        }
        ttlNanos = ttl;
        budgetNanos = lease.fenceBudgetMillis() * 1_000_000L;
        // requests sent before this one can only give an earlier expiry: forget them
        sentAt.values().removeIf(t -> t - sent <= 0);
        return change;
    }

    /**
     * Whether the lease is valid at {@code nowNanos}: an epoch held, not ended, not fenced, and before expiry - budget
     * (the worker takes no new mount once its fence is due, so no mount escapes the fence).
     */
    public boolean valid(long nowNanos) {
        return epoch > 0 && !ended && fencedEpoch != epoch && nowNanos - fenceAtNanos() < 0;
    }

    public String nodeId() {
        return nodeId;
    }

    /** The held (or last held) epoch; 0 if none was ever granted to this process. */
    public long epoch() {
        return epoch;
    }

    /** The local expiry of the held epoch (a nanoTime value); meaningless while {@link #epoch()} is 0. */
    public long expiryNanos() {
        return expiryNanos;
    }

    /** The moment the fence is due: expiry - budget. */
    public long fenceAtNanos() {
        return expiryNanos - budgetNanos;
    }

    /**
     * Whether the worker must fence now: it held an epoch that it has not fenced yet, and either {@code nowNanos} has
     * reached expiry - budget without renewal, or the registry ended the epoch.
     */
    public boolean fenceDue(long nowNanos) {
        if (epoch == 0 || fencedEpoch == epoch) {
            return false;
        }
        return ended || nowNanos - fenceAtNanos() >= 0;
    }

    /** The last epoch this worker fenced (or a previous process did, {@link #restoreFenced}); 0 if none. */
    public long fencedEpoch() {
        return fencedEpoch;
    }

    /** Records that the worker fenced at the held epoch (so {@link #fenceDue} is false until a new epoch). */
    public void fenced() {
        fencedEpoch = epoch;
    }

    /** Records a fence found in the crash-safe record at start (the epoch a previous process fenced). */
    public void restoreFenced(long fenced) {
        if (fenced > epoch) {
            epoch = fenced;
            ended = true;
            endedAs = NodeLeaseState.FENCED;
        }
        fencedEpoch = Math.max(fencedEpoch, fenced);
    }

    /** The renew interval: ttl / 6 of the last grant, or {@code defaultTtlNanos / 6} before any. */
    public long renewIntervalNanos(long defaultTtlNanos) {
        return (ttlNanos > 0 ? ttlNanos : defaultTtlNanos) / 6;
    }

    /**
     * Why a new mount is refused at {@code nowNanos}, or null if the lease is valid: e.g. "node-1 has no valid lease
     * (epoch 3 lapsed)".
     */
    public String refusal(long nowNanos) {
        if (valid(nowNanos)) {
            return null;
        }
        if (epoch == 0) {
            return nodeId + " has no valid lease (none granted yet)";
        }
        String how = ended ? endedAs.wire() : fencedEpoch == epoch ? "fenced" : "expired";
        return nodeId + " has no valid lease (epoch " + epoch + " " + how + ")";
    }

    /**
     * Why a command of {@code commandEpoch} is refused as stale, or null: a command issued under an older epoch than
     * the one this worker holds (or last held) is refused, e.g. "stale lease epoch 2 < 3". A command without epoch
     * (a sender that predates leases) is not stale.
     */
    public String staleEpoch(Long commandEpoch) {
        if (commandEpoch == null || commandEpoch >= epoch) {
            return null;
        }
        return "stale lease epoch " + commandEpoch + " < " + epoch;
    }
}
