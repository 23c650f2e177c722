package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The fences of this node's volumes (issue 19): the worker's own (NodePublish undone through the plugin, else a lazy
 * detach) and the fence guard's, read from its marker; and at start, the publications a recorded fence removed. Each
 * publication is recorded as being released before it is touched, so it is never published again.
 */
final class NodeFence {

    private static final Logger LOG = Logger.getLogger(NodeFence.class.getName());

    private final WorkerPaths paths;
    private final VolumeRecords records;
    private final PluginDirectory plugins;
    private final Supplier<MountTable> mountTable;
    private final NodeDirectories dirs;

    NodeFence(WorkerPaths paths, VolumeRecords records, PluginDirectory plugins, Supplier<MountTable> mountTable,
              NodeDirectories dirs) {
        this.paths = paths;
        this.records = records;
        this.plugins = plugins;
        this.mountTable = mountTable;
        this.dirs = dirs;
    }

    /**
     * Fences one volume (on its volume thread): every publication of it that the record says is fenced on a lapse is
     * first recorded as being released ({@code UNPUBLISHING}: a restart never publishes it again), then unpublished
     * through its plugin (NodeUnpublishVolume), or lazily detached when the plugin is not there or fails (busy); an
     * unmounted one leaves the record. The staging follows (NodeUnstageVolume, else lazy) when no other publication
     * keeps it. Publications not fenced are left alone. Works from the record as it is now (a publication released
     * meanwhile is not fenced twice).
     */
    public io.csiorchestrator.worker.lease.FenceReport fence(VolumeKey key, LazyUnmount lazy) {
        io.csiorchestrator.worker.lease.FenceReport report = new io.csiorchestrator.worker.lease.FenceReport();
        VolumeRecord record = records.get(key);
        if (record == null) {
            return report;
        }
        List<io.csiorchestrator.worker.lease.FencePlan.Volume> planned =
                io.csiorchestrator.worker.lease.FencePlan.of(List.of(record)).volumes();
        if (planned.isEmpty()) {
            return report;
        }
        io.csiorchestrator.worker.lease.FencePlan.Volume volume = planned.get(0);
        Optional<NodeVolumePlugin> plugin = plugins.node(record.pluginId());
        String externalId = record.externalVolumeId();
        try {
            for (io.csiorchestrator.worker.lease.FencePlan.Target t : volume.targets()) {
                Usage usage = records.get(key).usage(t.allocationId()).orElseThrow();
                if (usage.state() != PublishState.UNPUBLISHING) {
                    records.save(records.get(key).withUsage(usage.withState(PublishState.UNPUBLISHING)));
                }
            }
            for (io.csiorchestrator.worker.lease.FencePlan.Target t : volume.targets()) {
                String id = key.namespace() + "/" + key.volumeId() + "/" + t.allocationId();
                Path target = Path.of(t.path());
                FenceOutcome outcome = unmountForFence(target, plugin, p -> p.unpublish(externalId, target), lazy,
                        id, report.problems);
                switch (outcome) {
                    case UNMOUNTED -> report.unmounted.add(id);
                    case LAZY -> report.lazilyDetached.add(id);
                    case FAILED -> report.failed.add(id);
                }
                if (outcome != FenceOutcome.FAILED) {
                    dirs.removeEmptyTarget(target, t.allocationId());
                    records.save(records.get(key).withoutUsage(t.allocationId()));
                }
            }
            record = records.get(key);
            if (volume.stagingPath() != null && record.unstageAllowed()) {
                Path staging = Path.of(record.stagingPath());
                records.save(record.withStage(StageState.UNSTAGING));
                boolean stages = plugin.map(NodeVolumePlugin::requiresStaging).orElse(false);
                String id = key.namespace() + "/" + key.volumeId();
                FenceOutcome outcome = unmountForFence(staging, stages ? plugin : Optional.empty(),
                        p -> p.unstage(externalId, staging), lazy, id + " staging", report.problems);
                if (outcome == FenceOutcome.FAILED) {
                    report.stagingFailed.add(id);
                } else {
                    records.save(records.get(key).withStage(StageState.UNSTAGED));
                    dirs.removeEmptyStaging(staging);
                }
            }
        } catch (IOException | RuntimeException e) {
            report.problems.add(key + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
            LOG.log(Level.WARNING, "fence of volume " + key + " could not update its record", e);
        }
        return report;
    }

    /**
     * A plugin call after the guard's unmount: whether the plugin was told. Not told when it is not there (a marker
     * taken in at start, before the plugins are connected) or the call failed (noted in {@code problems}).
     */
    private static boolean tellPlugin(Optional<NodeVolumePlugin> plugin, java.util.function.Consumer<NodeVolumePlugin> call,
                                      String what, List<String> problems) {
        if (plugin.isEmpty()) {
            return false;
        }
        try {
            call.accept(plugin.get());
            return true;
        } catch (RuntimeException f) { // PluginCallFailure included
            problems.add(what + ": the plugin could not be told of the guard's unmount (told later): " + f.getMessage());
            return false;
        }
    }

    /**
     * Unmounts {@code path} for a fence: through the plugin when it is there, else (or when it failed, or the path is
     * still mounted after it) lazily; a path with nothing mounted counts as unmounted. A path refused by
     * {@link WorkerPaths#requireNoLinks} is never touched (failed).
     */
    private FenceOutcome unmountForFence(Path path, Optional<NodeVolumePlugin> plugin,
                                         java.util.function.Consumer<NodeVolumePlugin> call, LazyUnmount lazy,
                                         String what, List<String> problems) {
        try {
            paths.requireNoLinks(path);
        } catch (IOException e) {
            problems.add(what + ": " + e.getMessage());
            return FenceOutcome.FAILED;
        }
        if (plugin.isPresent()) {
            try {
                call.accept(plugin.get());
                if (!mountTable.get().isMountPoint(path)) {
                    return FenceOutcome.UNMOUNTED;
                }
                problems.add(what + ": still mounted after the plugin's call");
            } catch (PluginCallFailure f) {
                problems.add(what + ": " + f.getMessage());
            }
        } else if (mountTable.get().isMountPoint(path)) {
            problems.add(what + ": no healthy node plugin to unmount it");
        }
        if (!mountTable.get().isMountPoint(path)) {
            return FenceOutcome.UNMOUNTED;
        }
        Optional<String> error = lazy.detach(path);
        if (error.isPresent()) {
            problems.add(what + ": " + error.get());
            return FenceOutcome.FAILED;
        }
        return FenceOutcome.LAZY;
    }

    /**
     * The guard's fence of this volume (its marker, read by the worker): each target or staging path it names as
     * unmounted or lazily detached leaves the record (the publication, or the staging when no publication is left);
     * a failed one is recorded as being released ({@code UNPUBLISHING}/{@code UNSTAGING}), so it is never published
     * again and a restore finishes it. Returns the publications ({@code namespace/volumeId/allocationId}) per outcome.
     */
    public io.csiorchestrator.worker.lease.FenceReport applyGuardFence(VolumeKey key, Map<String, FenceOutcome> byPath) {
        io.csiorchestrator.worker.lease.FenceReport report = new io.csiorchestrator.worker.lease.FenceReport();
        VolumeRecord record = records.get(key);
        if (record == null) {
            return report;
        }
        // The guard unmounted behind the plugin's back: the plugin is told too (NodeUnpublish / NodeUnstage of a path
        // no longer mounted), so its own state does not keep the publication (a later NodeUnstage of the volume was
        // refused "still published on the node" for ever). When it cannot be told now (not connected yet at start,
        // or the call failed), the publication stays in the record as being released (UNPUBLISHING, never published
        // again) and the staging as being unstaged: the restore or the healer tells the plugin once it is there
        // (VolumeConvergence finishes interrupted releases first). The guard's unmount stands either way.
        Optional<NodeVolumePlugin> plugin = plugins.node(record.pluginId());
        String externalId = record.externalVolumeId();
        try {
            java.util.Set<String> owed = new java.util.HashSet<>(); // unmounted, the plugin not told yet
            for (Usage usage : List.copyOf(record.users())) {
                FenceOutcome outcome = byPath.get(usage.targetPath());
                if (outcome == null) {
                    continue;
                }
                String id = key.namespace() + "/" + key.volumeId() + "/" + usage.allocationId();
                if (outcome == FenceOutcome.FAILED) {
                    report.failed.add(id);
                    records.save(records.get(key).withUsage(usage.withState(PublishState.UNPUBLISHING)));
                } else {
                    (outcome == FenceOutcome.LAZY ? report.lazilyDetached : report.unmounted).add(id);
                    Path target = Path.of(usage.targetPath());
                    if (tellPlugin(plugin, p -> p.unpublish(externalId, target), id, report.problems)) {
                        dirs.removeEmptyTarget(target, usage.allocationId());
                        records.save(records.get(key).withoutUsage(usage.allocationId()));
                    } else {
                        owed.add(usage.allocationId());
                        records.save(records.get(key).withUsage(usage.withState(PublishState.UNPUBLISHING)));
                    }
                }
            }
            record = records.get(key);
            FenceOutcome staging = byPath.get(record.stagingPath());
            // the staging unmounted by the guard, used by no publication but those it unmounted
            if (staging != null && record.stage() != StageState.UNSTAGED && owed.containsAll(record.usages().keySet())) {
                if (staging == FenceOutcome.FAILED) {
                    report.stagingFailed.add(key.namespace() + "/" + key.volumeId());
                    records.save(record.withStage(StageState.UNSTAGING));
                } else {
                    Path stagingPath = Path.of(record.stagingPath());
                    boolean told = owed.isEmpty() && plugin.isPresent() && (!plugin.get().requiresStaging()
                            || tellPlugin(plugin, p -> p.unstage(externalId, stagingPath),
                                    key.namespace() + "/" + key.volumeId() + " staging", report.problems));
                    if (told) {
                        records.save(records.get(key).withStage(StageState.UNSTAGED));
                        dirs.removeEmptyDirectory(stagingPath);
                    } else {
                        // not mounted any more (a new publication stages it again), its NodeUnstage owed
                        records.save(records.get(key).withStage(StageState.UNSTAGING));
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            report.problems.add(key + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
            LOG.log(Level.WARNING, "the guard's fence of volume " + key + " could not update its record", e);
        }
        return report;
    }

    /**
     * At start, before the restore: every publication a recorded fence removed ({@code namespace/volumeId/allocationId})
     * that the volume records still hold as published (a crash between the fence and its record update) is recorded
     * as being released, so the restore finishes its release instead of publishing it again. Returns how many.
     */
    public int markFencedReleased(java.util.Collection<String> publications) throws IOException {
        int marked = 0;
        for (String id : publications) {
            String[] parts = id.split("/");
            if (parts.length != 3) {
                continue;
            }
            VolumeRecord record = records.get(new VolumeKey(parts[0], parts[1]));
            Optional<Usage> usage = record == null ? Optional.empty() : record.usage(parts[2]);
            if (usage.isPresent() && usage.get().state() != PublishState.UNPUBLISHING) {
                records.save(record.withUsage(usage.get().withState(PublishState.UNPUBLISHING)));
                marked++;
            }
        }
        return marked;
    }
}
