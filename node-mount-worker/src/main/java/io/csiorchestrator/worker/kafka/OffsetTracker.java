package io.csiorchestrator.worker.kafka;

import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * Offsets of one partition whose records complete out of order (different volumes run
 * concurrently): the committable offset is the one after the longest completed prefix, so a
 * crash never skips a command that had not been answered. Thread-safe.
 */
public final class OffsetTracker {

    private final TreeMap<Long, Boolean> pending = new TreeMap<>();
    private long highestSeen = -1;
    private long lastCommittable = -1;

    public synchronized void started(long offset) {
        pending.put(offset, Boolean.FALSE);
        highestSeen = Math.max(highestSeen, offset);
    }

    public synchronized void completed(long offset) {
        if (pending.containsKey(offset)) {
            pending.put(offset, Boolean.TRUE);
        }
    }

    /** The offset to commit (next to read) when it moved since the last call, else empty. */
    public synchronized OptionalLong committable() {
        while (!pending.isEmpty() && pending.firstEntry().getValue()) {
            pending.pollFirstEntry();
        }
        long next = pending.isEmpty() ? highestSeen + 1 : pending.firstKey();
        if (next > lastCommittable && highestSeen >= 0) {
            lastCommittable = next;
            return OptionalLong.of(next);
        }
        return OptionalLong.empty();
    }

    /** Whether a record of the partition was taken yet. */
    public synchronized boolean seenAny() {
        return highestSeen >= 0;
    }

    public synchronized int inFlight() {
        return (int) pending.values().stream().filter(done -> !done).count();
    }
}
