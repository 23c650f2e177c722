package io.csiorchestrator.worker.lease;

import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.worker.mount.FenceOutcome;
import io.csiorchestrator.worker.mount.LazyUnmount;
import io.csiorchestrator.worker.mount.VolumeOperations;
import io.csiorchestrator.worker.mount.VolumeSerializer;
import io.csiorchestrator.worker.state.FenceRecord;
import io.csiorchestrator.worker.state.FenceRecordStore;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * The worker's self-fence (issue 19 item 2). The lease thread calls {@link #tick} after every poll (at a lease record,
 * at the moment the held epoch's fence falls due, and at least every second: LeaseClient.IDLE_WAKE); while the lease
 * is not valid, a tick queues one check on the fence thread (never on the lease thread):
 * <ol>
 *   <li>the guard's marker ({@link FenceMarker}) if there is one: the guard fenced while this worker was frozen; its
 *       publications leave the records, the fence is recorded and reported FENCED by {@code guard}, the marker
 *       removed;</li>
 *   <li>the fence, when due ({@link LeaseGate#beginFence}: expiry - budget passed without renewal, the registry ended
 *       the epoch, or an ended epoch was never fenced): "fenced at epoch E" is written ({@link FenceRecord},
 *       {@code FENCING}) BEFORE the first unmount; every volume of the {@link FencePlan} is fenced on its own volume
 *       thread ({@link VolumeOperations#fence}: NodeUnpublish + NodeUnstage through the plugin, lazily detached when
 *       the plugin is not there or the path is busy); a volume whose thread is held up (a hung call) past the
 *       lease's expiry is detached lazily from here; then the record is completed and FENCED sent through the
 *       spool (delivered when Kafka is back), {@code reported} once Kafka acknowledged it.</li>
 * </ol>
 * A new epoch after a fence sends UNFENCED ({@link #onNewEpoch}). {@link #atStart} (before the restore) does the
 * same from the crash-safe record, so a restarted worker never mounts a fenced publication again.
 */
public final class SelfFence implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(SelfFence.class);
    /** The least time given to a volume's own thread before its paths are detached lazily from the fence thread. */
    private static final long MIN_WAIT_NANOS = 1_000_000_000L;

    private final String nodeId;
    private final LeaseGate gate;
    private final VolumeOperations operations;
    private final VolumeSerializer serializer;
    private final FenceRecordStore store;
    private final Path markerFile;
    private final LazyUnmount lazy;
    private final Function<NodeEvent, CompletableFuture<Void>> send;
    private final Clock clock;
    private final ExecutorService executor;
    private final AtomicBoolean checkQueued = new AtomicBoolean();
    private final Object recordLock = new Object();

    public SelfFence(String nodeId, LeaseGate gate, VolumeOperations operations, VolumeSerializer serializer,
                     FenceRecordStore store, Path markerFile, LazyUnmount lazy,
                     Function<NodeEvent, CompletableFuture<Void>> send, Clock clock) {
        this.nodeId = nodeId;
        this.gate = gate;
        this.operations = operations;
        this.serializer = serializer;
        this.store = store;
        this.markerFile = markerFile;
        this.lazy = lazy;
        this.send = send;
        this.clock = clock;
        this.executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "csi-fence");
            t.setDaemon(true);
            return t;
        });
    }

    // ------------------------------------------------------------------ start

    /**
     * At start, before the restore and before any command (nothing else touches the records yet): the guard's marker
     * is taken in, a fence the previous process did not finish ({@code FENCING}) is done again (without plugins yet:
     * lazily), the fenced publications still in the volume records are recorded as being released (the restore then
     * finishes their release, never publishes them), the lease learns the fenced epoch, and a fence not yet
     * acknowledged by Kafka is reported again (consumers take a FENCED report idempotently). Returns problems to report.
     */
    public List<String> atStart() {
        List<String> problems = new ArrayList<>();
        try {
            // reported just now (its acknowledgement may still be on its way): not a second time below
            boolean reported = Files.exists(markerFile) && takeInMarker(false);
            Optional<FenceRecord> recorded = store.load();
            if (recorded.isPresent() && recorded.get().phase() == FenceRecord.Phase.FENCING) {
                LOG.warnf("the fence of epoch %d was not finished before the worker stopped: fencing again",
                        recorded.get().epoch());
                fence(recorded.get().epoch(), false);
                recorded = store.load();
                reported = true;
            }
            if (recorded.isPresent()) {
                FenceRecord r = recorded.get();
                gate.restoreFenced(r.epoch());
                if (r.unfencedEpoch() == null) {
                    int marked = operations.markFencedReleased(r.publications());
                    if (marked > 0) {
                        LOG.warnf("%d publication(s) fenced at epoch %d were still recorded as mounted: released, never"
                                + " published again", marked, r.epoch());
                    }
                }
                if (r.phase() == FenceRecord.Phase.FENCED && !r.reported() && !reported) {
                    report(r);
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.error("fence record at start", e);
            problems.add("fence record: " + e.getMessage());
        }
        return problems;
    }

    // ------------------------------------------------------------------ the lease thread's tick

    /**
     * Called by the lease thread after every poll. Costs nothing while the lease is valid; otherwise queues one check
     * (marker, due fence) on the fence thread unless one is queued already.
     */
    public void tick() {
        if (!gate.isEnabled() || gate.valid()) {
            return;
        }
        queueCheck();
    }

    /**
     * Called when the guard's supervisor finds its marker ({@code FenceGuard.onMarker}): queues the check even while
     * the lease is valid, since the guard may have fenced an epoch that this worker renewed after a freeze; taking the
     * marker in ends that epoch here too ({@code LeaseGate.fenceDone}).
     */
    public void markerFound() {
        if (gate.isEnabled()) {
            queueCheck();
        }
    }

    private void queueCheck() {
        if (checkQueued.compareAndSet(false, true)) {
            try {
                executor.execute(() -> {
                    checkQueued.set(false);
                    check();
                });
            } catch (java.util.concurrent.RejectedExecutionException e) {
                checkQueued.set(false);
            }
        }
    }

    private void check() {
        try {
            if (Files.exists(markerFile)) {
                takeInMarker(true);
            }
            long epoch = gate.beginFence();
            if (epoch > 0) {
                fence(epoch, true);
            }
        } catch (IOException | RuntimeException e) {
            // the fence record says FENCING when this happened after it was written: the next start fences again
            LOG.error("self-fence check failed", e);
        }
    }

    /** On the lease thread: a new epoch was granted. After a fence, UNFENCED is sent (once per fence). */
    public void onNewEpoch(long epoch) {
        try {
            executor.execute(() -> unfence(epoch));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("fence thread stopped; UNFENCED not sent");
        }
    }

    private void unfence(long epoch) {
        try {
            synchronized (recordLock) {
                Optional<FenceRecord> recorded = store.load();
                if (recorded.isEmpty() || recorded.get().unfencedEpoch() != null || recorded.get().epoch() >= epoch
                        || recorded.get().phase() != FenceRecord.Phase.FENCED) {
                    return;
                }
                FenceRecord r = recorded.get();
                store.save(r.withUnfenced(epoch));
                LOG.infof("node %s unfenced: lease epoch %d granted after the fence of epoch %d", nodeId, epoch, r.epoch());
                Map<String, String> details = new LinkedHashMap<>();
                details.put("epoch", Long.toString(epoch));
                details.put("fencedEpoch", Long.toString(r.epoch()));
                send.apply(new NodeEvent(nodeId, null, NodeEventKind.UNFENCED, "Unfenced: lease epoch " + epoch
                        + " granted after the fence of epoch " + r.epoch(), null, null, null, null, true, null, details,
                        clock.instant()));
            }
        } catch (IOException | RuntimeException e) {
            LOG.error("could not record or report the unfence", e);
        }
    }

    // ------------------------------------------------------------------ the fence

    /**
     * Fences {@code epoch}: FENCING written first, every volume of the plan fenced (twice over the plan: a mount that
     * raced the lease check is caught by the second pass), FENCED written with what was done, then reported.
     *
     * @param running true once the worker runs (each volume on its own thread, bounded by the lease's expiry); false
     *                at start (directly: nothing else runs yet)
     */
    private void fence(long epoch, boolean running) throws IOException {
        FenceRecord started;
        synchronized (recordLock) {
            Optional<FenceRecord> previous = store.load();
            started = previous.filter(p -> p.epoch() == epoch && p.phase() == FenceRecord.Phase.FENCING)
                    .orElse(FenceRecord.started(epoch, FenceRecord.BY_WORKER, clock.instant()));
            store.save(started);
        }
        LOG.warnf("node %s fences itself: lease epoch %d %s", nodeId, epoch,
                running ? "not renewed in time" : "(a fence not finished before the worker stopped)");
        FenceReport report = new FenceReport();
        Set<VolumeKey> done = new HashSet<>();
        for (int pass = 0; pass < 2; pass++) {
            List<FencePlan.Volume> todo = FencePlan.of(operations.records().values()).volumes().stream()
                    .filter(v -> !done.contains(v.key())).toList();
            if (todo.isEmpty()) {
                break;
            }
            if (!running) {
                todo.forEach(v -> report.add(operations.fence(v.key(), lazy)));
            } else {
                Map<FencePlan.Volume, CompletableFuture<FenceReport>> pending = new LinkedHashMap<>();
                todo.forEach(v -> pending.put(v, serializer.submit(v.key(), () -> operations.fence(v.key(), lazy))));
                long deadline = System.nanoTime() + Math.max(MIN_WAIT_NANOS, gate.nanosUntilExpiry());
                pending.forEach((v, future) -> report.add(await(v, future, deadline)));
            }
            todo.forEach(v -> done.add(v.key()));
        }
        // known only for the held epoch (an overdue fence of an older one happened after its expiry, or it was ended)
        Boolean beforeExpiry = running && Long.valueOf(epoch).equals(gate.epochOrNull()) ? gate.nanosUntilExpiry() > 0
                : null;
        FenceRecord completed = started.completed(report.unmounted, report.lazilyDetached, report.failed,
                report.stagingFailed, report.problems, beforeExpiry, clock.instant());
        synchronized (recordLock) {
            store.save(completed);
        }
        gate.fenceDone(epoch);
        LOG.warnf("node %s fenced at epoch %d: unmounted %s, lazily detached %s, failed %s%s", nodeId, epoch,
                report.unmounted, report.lazilyDetached, report.failed,
                report.stagingFailed.isEmpty() ? "" : ", stagings not unmounted " + report.stagingFailed);
        report(completed);
        unfenceIfNewer(epoch);
    }

    /** A newer epoch granted while the fence of {@code fenced} ran (an overdue fence): UNFENCED now. */
    private void unfenceIfNewer(long fenced) {
        Long current = gate.epochOrNull();
        if (current != null && current > fenced) {
            unfence(current);
        }
    }

    /**
     * The volume's fence on its own thread, waited for until {@code deadline}; past it (its thread held up by a hung
     * call) its planned paths are detached lazily from here (its record is updated when its thread gets to it).
     */
    private FenceReport await(FencePlan.Volume v, CompletableFuture<FenceReport> future, long deadline) {
        try {
            return future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            LOG.warnf("fence of volume %s still waits for its volume thread: detaching its paths lazily", v.key());
            return detachDirectly(v);
        } catch (ExecutionException e) {
            FenceReport failed = detachDirectly(v);
            failed.problems.add(v.key() + ": " + e.getCause());
            return failed;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return detachDirectly(v);
        }
    }

    private FenceReport detachDirectly(FencePlan.Volume v) {
        FenceReport report = new FenceReport();
        for (FencePlan.Target t : v.targets()) {
            String id = v.key().namespace() + "/" + v.key().volumeId() + "/" + t.allocationId();
            Optional<String> error = lazy.detach(Path.of(t.path()));
            if (error.isEmpty()) {
                report.lazilyDetached.add(id);
            } else if (!io.csiorchestrator.csi.mount.MountTable.readSelf().isMountPoint(Path.of(t.path()))) {
                report.unmounted.add(id);
            } else {
                report.failed.add(id);
                report.problems.add(id + ": " + error.get());
            }
        }
        if (v.stagingPath() != null) {
            Optional<String> error = lazy.detach(Path.of(v.stagingPath()));
            if (error.isPresent() && io.csiorchestrator.csi.mount.MountTable.readSelf().isMountPoint(Path.of(v.stagingPath()))) {
                report.stagingFailed.add(v.key().namespace() + "/" + v.key().volumeId());
                report.problems.add(v.key() + " staging: " + error.get());
            }
        }
        return report;
    }

    // ------------------------------------------------------------------ the guard's marker

    /**
     * Takes in the guard's marker: its paths are matched to the records' publications and stagings, which leave the
     * records ({@link VolumeOperations#applyGuardFence}); the fence is recorded (by {@code guard}) and reported, the
     * lease learns the epoch was fenced, and the marker is removed. A marker that cannot be read is set aside as
     * {@code .unreadable} (logged). A marker that names no mount of the records is recorded and reported all the same
     * (the epoch is fenced either way); one whose epoch is recorded already (taken in before a crash) is only removed.
     * Returns whether a FENCED was sent.
     */
    private boolean takeInMarker(boolean running) throws IOException {
        FenceMarker marker;
        try {
            marker = FenceMarker.parse(Files.readString(markerFile));
        } catch (IllegalArgumentException | IOException e) {
            Path aside = markerFile.resolveSibling(markerFile.getFileName() + ".unreadable");
            Files.move(markerFile, aside, StandardCopyOption.REPLACE_EXISTING);
            LOG.errorf("the fence guard's marker %s could not be read (%s); kept as %s", markerFile, e.getMessage(), aside);
            return false;
        }
        Map<String, FenceOutcome> byPath = new LinkedHashMap<>();
        marker.unmounted().forEach(p -> byPath.put(p, FenceOutcome.UNMOUNTED));
        marker.lazy().forEach(p -> byPath.put(p, FenceOutcome.LAZY));
        marker.failed().forEach(p -> byPath.put(p, FenceOutcome.FAILED));
        List<VolumeKey> affected = new ArrayList<>();
        // the publications the guard removed, as the records stand now (true: lazily)
        Map<String, Boolean> guardRemoved = new LinkedHashMap<>();
        for (VolumeRecord record : operations.records().values()) {
            boolean named = byPath.containsKey(record.stagingPath());
            for (Usage u : record.users()) {
                FenceOutcome outcome = byPath.get(u.targetPath());
                named |= outcome != null;
                if (outcome != null && outcome != FenceOutcome.FAILED) {
                    guardRemoved.put(record.key().namespace() + "/" + record.key().volumeId() + "/" + u.allocationId(),
                            outcome == FenceOutcome.LAZY);
                }
            }
            if (named) {
                affected.add(record.key());
            }
        }
        LOG.warnf("node %s: the fence guard fenced at epoch %d (marker %s: %d unmounted, %d lazy, %d failed)", nodeId,
                marker.epoch(), markerFile, marker.unmounted().size(), marker.lazy().size(), marker.failed().size());
        FenceReport report = new FenceReport();
        Optional<FenceRecord> known = store.load();
        boolean takenInBefore = known.isPresent() && known.get().epoch() >= marker.epoch();
        // A marker naming nothing of the records is still a fence of its epoch (the guard found the lease expired,
        // e.g. the worker was stopped with no mount): it is recorded and reported, so the registry ends that epoch and
        // grants the next; only a marker already taken in before a crash (its epoch recorded) is just removed.
        if (!affected.isEmpty() || !takenInBefore) {
            synchronized (recordLock) {
                store.save(FenceRecord.started(marker.epoch(), FenceRecord.BY_GUARD, clock.instant()));
            }
            for (VolumeKey key : affected) {
                report.add(running ? join(serializer.submit(key, () -> operations.applyGuardFence(key, byPath)))
                        : operations.applyGuardFence(key, byPath));
            }
            report.withGuardNamed(guardRemoved);
            // the guard's own time of its unmounts (the marker's 'at'), not this takeover's after the freeze
            java.time.Instant fencedAt = marker.fencedAt() != null ? marker.fencedAt() : clock.instant();
            FenceRecord completed = FenceRecord.started(marker.epoch(), FenceRecord.BY_GUARD, fencedAt)
                    .completed(report.unmounted, report.lazilyDetached, report.failed, report.stagingFailed,
                            report.problems, null, fencedAt);
            synchronized (recordLock) {
                store.save(completed);
            }
            gate.fenceDone(marker.epoch());
            Files.deleteIfExists(markerFile);
            report(completed);
            unfenceIfNewer(marker.epoch());
            return true;
        }
        gate.fenceDone(marker.epoch());
        Files.deleteIfExists(markerFile);
        return false;
    }

    private static FenceReport join(CompletableFuture<FenceReport> future) {
        try {
            return future.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while taking in the guard's fence", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("taking in the guard's fence failed", e.getCause());
        }
    }

    // ------------------------------------------------------------------ the report

    /**
     * Sends FENCED for {@code fence} (through the spool: delivered when Kafka is back, also after a restart) and marks
     * the record reported once Kafka acknowledged it.
     */
    private void report(FenceRecord fence) {
        Map<String, String> details = new LinkedHashMap<>();
        details.put("epoch", Long.toString(fence.epoch()));
        details.put("fencedBy", fence.fencedBy());
        details.put("unmounted", String.join(",", fence.unmounted()));
        details.put("lazilyDetached", String.join(",", fence.lazilyDetached()));
        details.put("failed", String.join(",", fence.failed()));
        if (!fence.stagingFailed().isEmpty()) {
            details.put("stagingFailed", String.join(",", fence.stagingFailed()));
        }
        if (fence.completedBeforeExpiry() != null) {
            details.put("completedBeforeExpiry", fence.completedBeforeExpiry().toString());
        }
        boolean ok = fence.failed().isEmpty() && fence.stagingFailed().isEmpty();
        String error = ok ? null : String.join("; ", fence.problems());
        if (error != null && error.length() > 8000) {
            error = error.substring(0, 8000);
        }
        NodeEvent event = new NodeEvent(nodeId, null, NodeEventKind.FENCED, "Fenced at lease epoch " + fence.epoch()
                + (FenceRecord.BY_GUARD.equals(fence.fencedBy()) ? " by the fence guard" : " by the worker"),
                null, null, null, null, ok, error, details, fence.completedAt() == null ? clock.instant() : fence.completedAt());
        send.apply(event).whenComplete((acked, failure) -> {
            if (failure != null) {
                return; // still in the spool, or reported again at the next start
            }
            synchronized (recordLock) {
                try {
                    Optional<FenceRecord> now = store.load();
                    if (now.isPresent() && now.get().epoch() == fence.epoch()
                            && now.get().fencedBy().equals(fence.fencedBy()) && !now.get().reported()) {
                        store.save(now.get().withReported());
                    }
                } catch (IOException e) {
                    LOG.warn("could not mark the fence reported; it is reported again at the next start", e);
                }
            }
        });
    }

    @Override
    public void close() {
        executor.shutdown();
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
