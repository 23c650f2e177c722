package io.csiorchestrator.worker.lease;

import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeLease;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * The worker's lease, shared between the lease I/O and the command handler (thread-safe around a {@link LeaseKeeper}
 * on the monotonic clock). Before any plugin call, a command is checked ({@link #refusal}): one of an older lease
 * epoch than the worker's is refused ("stale lease epoch 2 < 3"), and a mount while the lease is not valid ("node-1
 * has no valid lease (epoch 3 lapsed)"); unmounts always run. A disabled gate (fencing off) refuses nothing and
 * stamps no epoch.
 */
public final class LeaseGate {

    /** mount-done error code of a command of an older lease epoch than the worker's. */
    public static final String STALE_LEASE_EPOCH = "STALE_LEASE_EPOCH";
    /** mount-done error code of a mount refused because the worker holds no valid lease. */
    public static final String NO_VALID_LEASE = "NO_VALID_LEASE";

    private final LeaseKeeper keeper;
    private final LongSupplier nanoTime;
    private final boolean enabled;
    /** An epoch that ended without this worker fencing it (a new one was granted first, e.g. after a freeze); 0: none. */
    private long overdueFence;
    private boolean overdueBegun;

    private LeaseGate(String nodeId, LongSupplier nanoTime, boolean enabled) {
        this.keeper = new LeaseKeeper(nodeId);
        this.nanoTime = nanoTime;
        this.enabled = enabled;
    }

    public static LeaseGate enabled(String nodeId, LongSupplier nanoTime) {
        return new LeaseGate(nodeId, nanoTime, true);
    }

    /** Fencing off: every command runs, no epoch on results. */
    public static LeaseGate disabled(String nodeId) {
        return new LeaseGate(nodeId, System::nanoTime, false);
    }

    public boolean isEnabled() {
        return enabled;
    }

    public synchronized void requestSent(String requestId) {
        keeper.requestSent(requestId, nanoTime.getAsLong());
    }

    public synchronized long heldEpochForRequest() {
        return keeper.heldEpochForRequest();
    }

    /**
     * Applies a record of node-leases. A new epoch granted while the previous one was never fenced (the worker was
     * frozen past its fence and the registry already ended it) leaves that epoch's fence overdue: the lease is not
     * valid until it is done ({@link #beginFence}, {@link #fenceDone}).
     */
    public synchronized LeaseKeeper.Change onLease(NodeLease lease) {
        long previous = keeper.epoch();
        boolean previousFenced = keeper.fencedEpoch() == previous;
        LeaseKeeper.Change change = keeper.onLease(lease, nanoTime.getAsLong());
        if (change == LeaseKeeper.Change.NEW_EPOCH && previous > 0 && !previousFenced && overdueFence == 0) {
            overdueFence = previous;
            overdueBegun = false;
        }
        return change;
    }

    public synchronized boolean valid() {
        return !enabled || (overdueFence == 0 && keeper.valid(nanoTime.getAsLong()));
    }

    /**
     * The epoch to fence now, or 0: an overdue fence of an ended epoch, or the held epoch once expiry - budget passed
     * without renewal or the registry ended it. Marks it begun (the next call returns 0 for it), so one fence runs per
     * epoch.
     */
    public synchronized long beginFence() {
        if (!enabled) {
            return 0;
        }
        if (overdueFence > 0 && !overdueBegun) {
            overdueBegun = true;
            return overdueFence;
        }
        if (keeper.fenceDue(nanoTime.getAsLong())) {
            keeper.fenced();
            return keeper.epoch();
        }
        return 0;
    }

    /** The fence of {@code epoch} is done (by the worker or, read from its marker, by the guard). */
    public synchronized void fenceDone(long epoch) {
        if (overdueFence == epoch) {
            overdueFence = 0;
        }
        keeper.restoreFenced(epoch);
    }

    /** A fence of {@code epoch} found in the crash-safe record at start (the epoch a previous process fenced). */
    public synchronized void restoreFenced(long epoch) {
        keeper.restoreFenced(epoch);
    }

    /** Nanoseconds until the local expiry of the held epoch (negative once past; meaningless without an epoch). */
    public synchronized long nanosUntilExpiry() {
        return keeper.expiryNanos() - nanoTime.getAsLong();
    }

    public synchronized long renewIntervalNanos(long defaultTtlNanos) {
        return keeper.renewIntervalNanos(defaultTtlNanos);
    }

    /** The epoch to stamp on events and results; null while fencing is off or no epoch was ever held. */
    public synchronized Long epochOrNull() {
        return enabled && keeper.epoch() > 0 ? keeper.epoch() : null;
    }

    /** Why the lease is not valid now, or null. */
    public synchronized String invalidReason() {
        if (enabled && overdueFence > 0) {
            return keeper.nodeId() + " has no valid lease (the fence of epoch " + overdueFence + " is not done yet)";
        }
        return enabled ? keeper.refusal(nanoTime.getAsLong()) : null;
    }

    /** The failed result refusing {@code command} before any plugin call, or empty if it may run. */
    public synchronized Optional<MountDone> refusal(NodeCommand command, Instant now) {
        if (!enabled) {
            return Optional.empty();
        }
        String stale = keeper.staleEpoch(command.leaseEpoch());
        if (stale != null) {
            return Optional.of(failed(command, STALE_LEASE_EPOCH, stale, now));
        }
        if (command.kind() == NodeCommandKind.MOUNT) {
            String noLease = overdueFence > 0 ? keeper.nodeId() + " has no valid lease (the fence of epoch "
                    + overdueFence + " is not done yet)" : keeper.refusal(nanoTime.getAsLong());
            if (noLease != null) {
                return Optional.of(failed(command, NO_VALID_LEASE, noLease, now));
            }
        }
        return Optional.empty();
    }

    private MountDone failed(NodeCommand command, String code, String message, Instant now) {
        return new MountDone(command.commandId(), command.nodeId(), command.kind(), command.namespace(),
                command.volumeId(), command.allocationId(), false, code, message, Map.of(), null, null, now)
                .withFencing(keeper.epoch() > 0 ? keeper.epoch() : null, command.claimGeneration());
    }
}
