package io.csiorchestrator.cli;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The plan of an open-loop run: every operation with the time it is due, fixed before the first send.
 *
 * <p>{@code rate} is operations (claims and releases together) per second. Operations are dealt round robin
 * over the volumes at even spacing, 1/rate apart: operation k goes to volume {@code k % volumes}; a volume's
 * operations alternate claim for write, release of that claim, claim, release... So each volume is claimed
 * and then released {@code volumes / rate} seconds after its claim was due. With {@code hold} > 0 the release
 * is due exactly {@code hold} after its claim instead (claims stay on their round-robin slots), which must
 * be shorter than a volume's cycle ({@code 2 * volumes / rate}). Every claim of the plan has its release in
 * the plan, also when that falls after {@code duration}. Without a hold only {@link #volumesUsed} of the
 * volumes take part.
 */
final class LoadSchedule {

    enum Kind { CLAIM, RELEASE }

    /**
     * One operation: due {@code dueNanos} after the start, on volume index {@code volume}, the
     * {@code cycle}-th claim (or its release) of that volume.
     */
    record Op(long dueNanos, Kind kind, int volume, int cycle) {
    }

    private LoadSchedule() {
    }

    /**
     * How many of the volumes a run uses: all with {@code --hold}; without, at most rate x duration / 2, so each
     * used volume's claim is released within the duration (a volume's claim is released volumes / rate after
     * it; 100 volumes at 2/s would release the first claim 50 s after it, past a 20 s sweep step).
     */
    static int volumesUsed(double rate, int volumes, long holdNanos, long durationNanos) {
        if (holdNanos > 0) {
            return volumes;
        }
        return (int) Math.max(1, Math.min(volumes, (long) (rate * durationNanos / 1e9 / 2)));
    }

    static List<Op> plan(double rate, int allVolumes, long holdNanos, long durationNanos) {
        if (rate <= 0 || allVolumes <= 0 || durationNanos <= 0) {
            throw new IllegalArgumentException("rate, volumes and duration must be positive");
        }
        int volumes = volumesUsed(rate, allVolumes, holdNanos, durationNanos);
        long cycleNanos = (long) (2L * volumes * 1e9 / rate);
        if (holdNanos >= cycleNanos) {
            throw new Args.UsageException("--hold must be shorter than a volume's cycle, 2 x volumes / rate = "
                    + cycleNanos / 1_000_000 + " ms: more --volumes or a lower --rate");
        }
        List<Op> ops = new ArrayList<>();
        for (long k = 0; ; k++) {
            long due = (long) (k * 1e9 / rate);
            if (due >= durationNanos) {
                break;
            }
            int volume = (int) (k % volumes);
            long round = k / volumes;
            int cycle = (int) (round / 2);
            if (round % 2 == 0) {
                ops.add(new Op(due, Kind.CLAIM, volume, cycle));
                long releaseDue = holdNanos > 0 ? due + holdNanos : (long) ((k + volumes) * 1e9 / rate);
                ops.add(new Op(releaseDue, Kind.RELEASE, volume, cycle));
            }
        }
        ops.sort(Comparator.comparingLong(Op::dueNanos).thenComparing(Op::kind));
        return ops;
    }
}
