package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.VolumeUsageFigures;
import io.csiorchestrator.worker.state.VolumeKey;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The last usage seen of each volume published on this node (NodeGetVolumeStats, issue 34), for the gauges, and the
 * decision of what to report to claim-service: the first observation of a volume (a consumer that missed one, or a
 * worker restart, converges), a figure that appeared or went away, a changed total (an expansion), and a used or
 * available figure that moved by at least {@link #STEP_PERCENT}% of the total (at least {@link #MIN_BYTES_STEP} bytes,
 * or {@link #BYTES_STEP_WITHOUT_TOTAL} when the plugin reports no total; inodes alike, at least
 * {@link #MIN_INODES_STEP}). Smaller moves are seen by the gauges only: a volume being written to would otherwise send
 * an event every poll. Pure: no plugin call, no event; the poller does both.
 */
public final class VolumeUsages {

    /** How far used or available must move, in percent of the total, to be reported. */
    public static final long STEP_PERCENT = 1;
    /** ... and at least this many bytes (4 KiB, a block), so that a tiny volume is not reported at every byte. */
    public static final long MIN_BYTES_STEP = 4096;
    /** How far the bytes must move when the plugin reports no total (1 MiB). */
    public static final long BYTES_STEP_WITHOUT_TOTAL = 1L << 20;
    /** ... and at least this many inodes (also when no total is reported). */
    public static final long MIN_INODES_STEP = 16;

    /** A usage seen: {@code pluginId} names the plugin for the gauges' tags. */
    public record Seen(VolumeKey key, String pluginId, VolumeUsageFigures usage) {
    }

    private final Map<VolumeKey, Seen> latest = new ConcurrentHashMap<>();
    private final Map<VolumeKey, VolumeUsageFigures> reported = new ConcurrentHashMap<>();

    /** Records what was seen now; returns it when it is to be reported. */
    public Optional<Seen> observe(VolumeKey key, String pluginId, VolumeUsageFigures seen) {
        Seen now = new Seen(key, pluginId, seen);
        latest.put(key, now);
        VolumeUsageFigures before = reported.get(key);
        if (before != null && !noticeable(before, seen)) {
            return Optional.empty();
        }
        reported.put(key, seen);
        return Optional.of(now);
    }

    /** Whether {@code now} differs from {@code before} enough to be reported (see the class comment). */
    static boolean noticeable(VolumeUsageFigures before, VolumeUsageFigures now) {
        if (!java.util.Objects.equals(before.bytesTotal(), now.bytesTotal())
                || !java.util.Objects.equals(before.inodesTotal(), now.inodesTotal())) {
            return true;
        }
        long bytesStep = now.bytesTotal() == null ? BYTES_STEP_WITHOUT_TOTAL : step(now.bytesTotal(), MIN_BYTES_STEP);
        long inodesStep = step(now.inodesTotal(), MIN_INODES_STEP);
        return moved(before.bytesUsed(), now.bytesUsed(), bytesStep)
                || moved(before.bytesAvailable(), now.bytesAvailable(), bytesStep)
                || moved(before.inodesUsed(), now.inodesUsed(), inodesStep)
                || moved(before.inodesFree(), now.inodesFree(), inodesStep);
    }

    private static long step(Long total, long minimum) {
        return Math.max(minimum, total == null ? 0 : total / 100 * STEP_PERCENT);
    }

    private static boolean moved(Long before, Long now, long step) {
        if (before == null || now == null) {
            return before != now;
        }
        return Math.abs(now - before) >= step;
    }

    /**
     * Forgets the volumes no longer published here (seen again later, they are reported again); whether any was
     * forgotten.
     */
    public boolean retainOnly(Set<VolumeKey> published) {
        reported.keySet().retainAll(published);
        return latest.keySet().retainAll(published);
    }

    /** The last usage seen of every volume published here, for the gauges. */
    public Map<VolumeKey, Seen> latest() {
        return Map.copyOf(latest);
    }
}
