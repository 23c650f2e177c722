package io.csiorchestrator.plugins.lease;

import io.csiorchestrator.events.NodeLeaseState;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * The registry's node leases (issue 19), pure: no I/O, no framework; the caller serializes (one thread). Times are
 * {@code System.nanoTime()} values passed in, compared overflow-safe.
 *
 * <ul>
 *   <li>A request for a node without a valid lease (never granted, lapsed, fenced) is granted epoch = last + 1
 *       (and at least the worker's held epoch + 1): the caller persists it before publishing ({@link Grant#persist}).
 *       A request for a node with a valid lease renews it: same epoch, no database write.</li>
 *   <li>A valid lease whose last grant is {@code ttl x (1 + drift)} old is lapsed by {@link #lapses}; that epoch is
 *       never granted again.</li>
 *   <li>Leases loaded at start (or on taking over a node's partition) count as granted at that moment
 *       ({@link #load}), so a lapse is never declared earlier than start + ttl x (1 + drift).</li>
 * </ul>
 */
public final class LeaseBook {

    /** One node's lease. */
    public static final class Entry {
        final String nodeId;
        long epoch;
        NodeLeaseState state;
        long lastGrantNanos;
        Instant lastRenewedAt;
        long fencedEpoch;
        boolean persisted;
        long lapses;

        Entry(String nodeId) {
            this.nodeId = nodeId;
        }

        public String nodeId() {
            return nodeId;
        }

        public long epoch() {
            return epoch;
        }

        public NodeLeaseState state() {
            return state;
        }

        public Instant lastRenewedAt() {
            return lastRenewedAt;
        }

        public long fencedEpoch() {
            return fencedEpoch;
        }

        public long lastGrantNanos() {
            return lastGrantNanos;
        }

        /** Lapses this registry process declared for the node. */
        public long lapses() {
            return lapses;
        }

        /** A copy, for readers on other threads. */
        public View view() {
            return new View(nodeId, epoch, state, lastRenewedAt, fencedEpoch, lastGrantNanos, lapses);
        }
    }

    /** An immutable snapshot of one node's lease. */
    public record View(String nodeId, long epoch, NodeLeaseState state, Instant lastRenewedAt, long fencedEpoch,
                       long lastGrantNanos, long lapses) {
    }

    /** A persisted lease row, as loaded. */
    public record Stored(String nodeId, long epoch, NodeLeaseState state, Instant lastRenewedAt, long fencedEpoch) {
    }

    /**
     * The answer to a request: publish {@code epoch} as valid; if {@code persist}, write the row before publishing
     * (a new epoch) and then call {@link #persisted}.
     */
    public record Grant(String nodeId, long epoch, boolean persist, boolean newEpoch) {
    }

    private final long lapseAfterNanos;
    private final Map<String, Entry> entries = new TreeMap<>();

    /** @param lapseAfterNanos ttl x (1 + clock drift) */
    public LeaseBook(long lapseAfterNanos) {
        if (lapseAfterNanos <= 0) {
            throw new IllegalArgumentException("lapseAfterNanos must be positive");
        }
        this.lapseAfterNanos = lapseAfterNanos;
    }

    /** ttl x (1 + drift), in nanoseconds. */
    public static long lapseAfterNanos(java.time.Duration ttl, double clockDrift) {
        return (long) Math.ceil(ttl.toNanos() * (1 + clockDrift));
    }

    /**
     * Loads persisted leases (at start, or on taking over their partitions): a valid one counts as granted at
     * {@code nowNanos}. A row never lowers an epoch already known here.
     */
    public void load(List<Stored> rows, long nowNanos) {
        for (Stored row : rows) {
            Entry e = entries.computeIfAbsent(row.nodeId(), Entry::new);
            if (row.epoch() < e.epoch || (row.epoch() == e.epoch && e.state != null && e.state != NodeLeaseState.VALID)) {
                continue; // never back to an older epoch, nor an ended epoch back to valid (its end not yet written)
            }
            e.epoch = row.epoch();
            e.state = row.state();
            e.lastRenewedAt = row.lastRenewedAt();
            e.fencedEpoch = Math.max(e.fencedEpoch, row.fencedEpoch());
            e.lastGrantNanos = nowNanos;
            e.persisted = true;
        }
    }

    /** A request of {@code nodeId}, holding {@code heldEpoch} (0: none), received at {@code nowNanos}. */
    public Grant request(String nodeId, long heldEpoch, long nowNanos, Instant now) {
        Entry e = entries.computeIfAbsent(nodeId, Entry::new);
        boolean renew = e.state == NodeLeaseState.VALID && heldEpoch <= e.epoch;
        boolean newEpoch = !renew;
        if (newEpoch) {
            e.epoch = Math.max(e.epoch, heldEpoch) + 1;
            e.state = NodeLeaseState.VALID;
            e.persisted = false;
        }
        e.lastGrantNanos = nowNanos;
        e.lastRenewedAt = now;
        return new Grant(nodeId, e.epoch, !e.persisted, newEpoch);
    }

    /** The caller wrote {@code epoch} of {@code nodeId} to the database. */
    public void persisted(String nodeId, long epoch) {
        Entry e = entries.get(nodeId);
        if (e != null && e.epoch == epoch) {
            e.persisted = true;
        }
    }

    /**
     * Declares the lapse of every valid lease of a node accepted by {@code owned} whose last grant is at least
     * ttl x (1 + drift) before {@code nowNanos}; returns them (the caller persists and publishes each as lapsed).
     */
    public List<View> lapses(long nowNanos, Predicate<String> owned) {
        List<View> lapsed = new ArrayList<>();
        for (Entry e : entries.values()) {
            if (e.state == NodeLeaseState.VALID && owned.test(e.nodeId) && nowNanos - e.lastGrantNanos >= lapseAfterNanos) {
                e.state = NodeLeaseState.LAPSED;
                e.lapses++;
                lapsed.add(e.view());
            }
        }
        return lapsed;
    }

    /**
     * When the next lapse {@link #lapses} would declare falls due (a nanoTime value): the earliest last grant of a
     * valid lease of a node accepted by {@code owned}, plus ttl x (1 + drift); empty when none is valid.
     */
    public OptionalLong nextLapseNanos(Predicate<String> owned) {
        boolean any = false;
        long first = 0;
        for (Entry e : entries.values()) {
            if (e.state == NodeLeaseState.VALID && owned.test(e.nodeId)) {
                long due = e.lastGrantNanos + lapseAfterNanos;
                if (!any || due - first < 0) {
                    first = due;
                    any = true;
                }
            }
        }
        return any ? OptionalLong.of(first) : OptionalLong.empty();
    }

    /**
     * The worker reported it fenced itself at {@code epoch}: a valid lease of that epoch turns fenced (the next grant
     * is epoch + 1); returns whether anything changed.
     */
    public boolean fenced(String nodeId, long epoch) {
        Entry e = entries.get(nodeId);
        if (e == null || epoch != e.epoch || e.fencedEpoch >= epoch) {
            return false;
        }
        e.fencedEpoch = epoch;
        e.state = NodeLeaseState.FENCED;
        return true;
    }

    /**
     * Why a report of {@code nodeId} sent under {@code epoch} is stale, or empty: an epoch older than the node's
     * current one, e.g. "stale lease epoch 2 < 3 for node-1". A report without epoch is never stale.
     */
    public Optional<String> staleEpoch(String nodeId, Long epoch) {
        Entry e = entries.get(nodeId);
        if (epoch == null || e == null || epoch >= e.epoch) {
            return Optional.empty();
        }
        return Optional.of("stale lease epoch " + epoch + " < " + e.epoch + " for " + nodeId);
    }

    public Optional<View> get(String nodeId) {
        Entry e = entries.get(nodeId);
        return e == null ? Optional.empty() : Optional.of(e.view());
    }

    public List<View> all() {
        return entries.values().stream().map(Entry::view).toList();
    }

    public long lapseAfterNanos() {
        return lapseAfterNanos;
    }
}
