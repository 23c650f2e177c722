package io.csiorchestrator.worker.lease;

import java.util.ArrayList;
import java.util.List;

/**
 * What a fence did, collected volume by volume: publications ({@code namespace/volumeId/allocationId}) unmounted,
 * lazily detached or failed, stagings ({@code namespace/volumeId}) that could not be unmounted, and why (for the
 * FENCED event's error text). Not thread-safe; one per fence.
 */
public final class FenceReport {

    public final List<String> unmounted = new ArrayList<>();
    public final List<String> lazilyDetached = new ArrayList<>();
    public final List<String> failed = new ArrayList<>();
    public final List<String> stagingFailed = new ArrayList<>();
    public final List<String> problems = new ArrayList<>();

    public FenceReport add(FenceReport other) {
        unmounted.addAll(other.unmounted);
        lazilyDetached.addAll(other.lazilyDetached);
        failed.addAll(other.failed);
        stagingFailed.addAll(other.stagingFailed);
        problems.addAll(other.problems);
        return this;
    }

    /**
     * The guard's part of a take-in: each publication ({@code namespace/volumeId/allocationId}) the guard's marker named
     * as unmounted or lazily detached when its records were read ({@code named}) that this report does not list yet is
     * added to the matching list. Such a publication was released meanwhile by an operation already in flight when
     * the take-in reached its volume (e.g. an unmount queued during a freeze, run right after SIGCONT): the guard had
     * still removed it, at the guard's time, and the FENCED report must say so. A publication the guard failed to
     * unmount is not added (the operation that released it did the unmount).
     */
    public FenceReport withGuardNamed(java.util.Map<String, Boolean> named) {
        named.forEach((id, lazy) -> {
            if (!unmounted.contains(id) && !lazilyDetached.contains(id) && !failed.contains(id)) {
                (lazy ? lazilyDetached : unmounted).add(id);
            }
        });
        return this;
    }
}
