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
}
