package io.csiorchestrator.worker.state;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;

/**
 * "Fenced at epoch E", the crash-safe part of a fence (issue 19), one file ({@code <root>/fence.json}) holding the
 * node's last fence. Written with phase {@link Phase#FENCING} BEFORE the first unmount and with {@link Phase#FENCED}
 * and what was done after the last; {@code reported} once the FENCED node event was acknowledged by Kafka;
 * {@code unfencedEpoch} once a new epoch was granted and UNFENCED sent. At start: the epoch is given to the lease
 * ({@code LeaseKeeper.restoreFenced}), a FENCING record runs the fence again, the fenced publications still in the
 * volume records are marked released (never published again), and a FENCED one not reported is reported.
 *
 * @param fencedBy       {@code worker} or {@code guard}
 * @param unmounted      publications ({@code namespace/volumeId/allocationId}) unmounted (by the plugin, or nothing
 *                       was mounted)
 * @param lazilyDetached publications detached with {@code umount2(MNT_DETACH)} (plugin missing or the path busy)
 * @param failed         publications that could not be unmounted at all
 * @param stagingFailed  volumes ({@code namespace/volumeId}) whose staging could not be unmounted
 * @param problems       why each failure (and each lazy detach) happened, for the event's error text
 * @param completedBeforeExpiry whether the fence ended before the lease's local expiry (null: unknown, e.g. a fence
 *                       finished at start)
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record FenceRecord(
        long epoch,
        String fencedBy,
        Phase phase,
        List<String> unmounted,
        List<String> lazilyDetached,
        List<String> failed,
        List<String> stagingFailed,
        List<String> problems,
        Boolean completedBeforeExpiry,
        boolean reported,
        Long unfencedEpoch,
        Instant startedAt,
        Instant completedAt) {

    public static final String BY_WORKER = "worker";
    public static final String BY_GUARD = "guard";

    /** Where the fence is. */
    public enum Phase {
        /** Written before the first unmount: a restart finishes the fence before it restores anything. */
        FENCING,
        /** Every unmount was tried; the lists say what happened. */
        FENCED
    }

    public FenceRecord {
        unmounted = unmounted == null ? List.of() : List.copyOf(unmounted);
        lazilyDetached = lazilyDetached == null ? List.of() : List.copyOf(lazilyDetached);
        failed = failed == null ? List.of() : List.copyOf(failed);
        stagingFailed = stagingFailed == null ? List.of() : List.copyOf(stagingFailed);
        problems = problems == null ? List.of() : List.copyOf(problems);
    }

    /** A fence of {@code epoch} about to unmount its first path. */
    public static FenceRecord started(long epoch, String fencedBy, Instant at) {
        return new FenceRecord(epoch, fencedBy, Phase.FENCING, null, null, null, null, null, null, false, null, at, null);
    }

    /** This fence done, with what it did. */
    public FenceRecord completed(List<String> unmounted, List<String> lazilyDetached, List<String> failed,
                                 List<String> stagingFailed, List<String> problems, Boolean beforeExpiry, Instant at) {
        return new FenceRecord(epoch, fencedBy, Phase.FENCED, unmounted, lazilyDetached, failed, stagingFailed, problems,
                beforeExpiry, false, null, startedAt, at);
    }

    public FenceRecord withReported() {
        return new FenceRecord(epoch, fencedBy, phase, unmounted, lazilyDetached, failed, stagingFailed, problems,
                completedBeforeExpiry, true, unfencedEpoch, startedAt, completedAt);
    }

    public FenceRecord withUnfenced(long newEpoch) {
        return new FenceRecord(epoch, fencedBy, phase, unmounted, lazilyDetached, failed, stagingFailed, problems,
                completedBeforeExpiry, reported, newEpoch, startedAt, completedAt);
    }

    /** Every publication the fence removed or tried to (unmounted, lazily detached, failed). */
    public List<String> publications() {
        List<String> all = new java.util.ArrayList<>(unmounted);
        all.addAll(lazilyDetached);
        all.addAll(failed);
        return all;
    }
}
