package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.mount.MountView;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.worker.lease.FencePlan;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The node side of one allocation's mount and unmount: the usage reference taken durably before anything else, the
 * controller steps when the command carries them ({@link ControllerSteps}), NodeStageVolume once per volume,
 * NodePublishVolume per allocation; the unmount's NodeUnpublishVolume and NodeUnstageVolume when nobody else uses the
 * volume; a failed mount rolled back with the opposite calls. Every state is recorded ({@link VolumeRecords}) before the
 * plugin call it announces.
 */
final class MountSteps {

    private static final Logger LOG = Logger.getLogger(MountSteps.class.getName());

    private final String nodeId;
    private final WorkerPaths paths;
    private final VolumeRecords records;
    private final PluginDirectory plugins;
    private final Supplier<MountView> mounts;
    private final SecretOpener secrets;
    private final ControllerSteps controllerSteps;
    private final NodeDirectories dirs;
    private final CommandAnswers answers;
    private final Clock clock;
    private volatile Predicate<List<String>> guardFed = required -> true;

    MountSteps(String nodeId, WorkerPaths paths, VolumeRecords records, PluginDirectory plugins,
               Supplier<MountView> mounts, SecretOpener secrets, ControllerSteps controllerSteps,
               NodeDirectories dirs, CommandAnswers answers, Clock clock) {
        this.nodeId = nodeId;
        this.paths = paths;
        this.records = records;
        this.plugins = plugins;
        this.mounts = mounts;
        this.secrets = secrets;
        this.controllerSteps = controllerSteps;
        this.dirs = dirs;
        this.answers = answers;
        this.clock = clock;
    }

    /** {@link VolumeOperations#feedGuardBeforeMountsWith}. */
    void feedGuardBeforeMountsWith(Predicate<List<String>> feed) {
        this.guardFed = feed;
    }

    MountDone mount(NodeCommand command, VolumeKey key) throws IOException {
        String alloc = command.allocationId();
        Path staging = paths.stagingPath(key.namespace(), key.volumeId());
        Path target = paths.targetPath(alloc, key.namespace(), key.volumeId());
        Optional<NodeVolumePlugin> found = plugins.node(command.pluginId());
        if (found.isEmpty()) {
            return answers.failed(command, VolumeOperations.PLUGIN_NOT_FOUND, "CSI plugin '" + command.pluginId()
                    + "' has no healthy node instance on node " + nodeId, null, null);
        }
        NodeVolumePlugin plugin = found.get();
        SecretPayload opened;
        try {
            opened = secrets.open(command.sealed(), key.namespace(), key.volumeId());
        } catch (RuntimeException e) {
            return answers.failed(command, VolumeOperations.SECRETS_UNREADABLE, e.getMessage(), null, null);
        }

        VolumeRecord record = records.get(key);
        if (record == null || record.idle()) {
            record = (record == null ? VolumeRecord.empty(key, command.pluginId(), command.externalVolumeId(), staging.toString())
                    : record.withPlugin(command.pluginId(), command.externalVolumeId()));
        }
        Optional<Usage> previous = record.usage(alloc);
        if (previous.isPresent() && previous.get().readOnly() != command.readOnly()
                && previous.get().state() == PublishState.PUBLISHED) {
            return answers.failed(command, "ALREADY_EXISTS", "volume " + key + " is already published for allocation " + alloc
                    + " on node " + nodeId + " with read-only=" + previous.get().readOnly()
                    + "; unmount it before mounting it with read-only=" + command.readOnly(), null, null);
        }
        // 0. a planted link in the staging or target path: refused before anything is recorded, created or mounted
        boolean staged = plugin.requiresStaging();
        if (staged) {
            paths.requireNoLinks(staging);
        }
        paths.requireNoLinks(target);
        StageState stageBefore = record.stage();
        // nothing of the volume in use or staged here: a publication the record still names may have been ended
        // elsewhere (a controller-unpublish sent to another node's controller after a fence), so it is made again
        boolean unusedBefore = record.usages().isEmpty() && stageBefore == StageState.UNSTAGED;
        // 1. take the usage reference before anything else, durably
        Usage usage = new Usage(alloc, target.toString(), command.readOnly(), command.accessMode(),
                command.attachmentMode(), command.fsType(), command.volumeContext(),
                ControllerSteps.publishContext(record, command), command.sealed(), previous.map(Usage::state).filter(s -> s == PublishState.PUBLISHED)
                .orElse(PublishState.PUBLISHING), command.commandId(), command.fenceOnLapse());
        record = record.withUsage(usage);
        if (staged && record.stage() != StageState.STAGED) {
            record = record.withStage(StageState.STAGING);
        }
        records.save(record);
        // 1b. a new publication fenced on a lapse: in the guard's list before anything is mounted
        if (usage.fencesOnLapse() && usage.state() != PublishState.PUBLISHED
                && !guardFed.test(FencePlan.of(List.of(record)).paths())) {
            rollBackMount(key, plugin, alloc, target, false);
            return answers.failed(command, "FENCE_GUARD_UNFED", "volume " + key + " is not mounted for allocation " + alloc
                    + " on node " + nodeId + ": the fence guard could not be given its path before the mount (a"
                    + " mount it does not know would outlive a freeze of this worker); see the worker's log", null, null);
        }
        // 1c. with the controller steps (issue 36): the controller publication, recorded durably, before staging
        if (command.controllerSteps()) {
            try {
                usage = controllerSteps.publish(command, key, usage, opened, unusedBefore);
                record = records.get(key);
            } catch (PluginCallFailure failure) {
                rollBackMount(key, plugin, alloc, target, false, stageBefore == StageState.UNSTAGED);
                return answers.failed(command, failure.code(), failure.getMessage(), null, null);
            }
        }

        VolumeRequest request = request(record, usage, opened, staging, target);
        boolean publishAttempted = false;
        try {
            // 2. directories: the staging path and the target's parent, 0700; a staging path the volume is mounted
            //    on already (another allocation's) is the volume's root: never chmod it (EROFS when read-only)
            //    (each question is a statx of that path, MountView.probing; reading /proc/self/mountinfo, whose
            //    cost grows with every mount on the machine, was a tenth of the worker's CPU under load)
            MountView table = mounts.get();
            if (staged && !table.isMountPoint(staging)) {
                paths.ensureDirectory(staging);
            }
            paths.ensureTargetParent(target);
            // 3. stage once per volume on this node
            if (staged && record.stage() != StageState.STAGED) {
                if (!table.isMountPoint(staging)) {
                    paths.requireNoLinks(staging);
                    plugin.stage(request);
                    table = mounts.get(); // staged now: read again
                }
                record = records.checkpoint(records.get(key).withStage(StageState.STAGED));
            }
            // 4. publish for this allocation, unless it is already mounted the same way
            Optional<Boolean> mountedReadOnly = table.readOnlyAt(target);
            if (mountedReadOnly.isEmpty() || mountedReadOnly.get() != command.readOnly()) {
                paths.requireNoLinks(target);
                publishAttempted = true;
                plugin.publish(request);
            }
            records.checkpoint(records.get(key).withUsage(usage.withState(PublishState.PUBLISHED)));
            if (command.controllerSteps()) {
                // the publish context of the controller publication, as a controller-publish command answers it
                return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(),
                        command.volumeId(), command.allocationId(), true, null, null, usage.publishContext(),
                        target.toString(), staged ? staging.toString() : null, clock.instant());
            }
            return answers.succeeded(command, target.toString(), staged ? staging.toString() : null);
        } catch (PluginCallFailure failure) {
            rollBackMount(key, plugin, alloc, target, publishAttempted || failure.uncertain());
            return answers.failed(command, failure.code(), failure.getMessage(), null, null);
        }
    }

    /**
     * Cancels a failed mount with the opposite calls (the only way to cancel in CSI): unpublish
     * the target, drop the usage, and unstage when nobody else uses the volume. When a cleanup
     * call fails, the state stays "in progress" in the record, to be finished by the next unmount
     * or restore. A controller publication the mount made stays (the unmount with the controller steps ends it,
     * after NodeUnstageVolume, as CSI orders).
     */
    private void rollBackMount(VolumeKey key, NodeVolumePlugin plugin, String alloc, Path target,
                               boolean unpublishNeeded) throws IOException {
        rollBackMount(key, plugin, alloc, target, unpublishNeeded, false);
    }

    /**
     * {@link #rollBackMount}; {@code neverStaged}: the mount made no NodeStageVolume and found the volume
     * {@code UNSTAGED} (its step 1 wrote {@code STAGING}), so with no other user it goes back to {@code UNSTAGED}
     * without a NodeUnstageVolume.
     */
    private void rollBackMount(VolumeKey key, NodeVolumePlugin plugin, String alloc, Path target,
                               boolean unpublishNeeded, boolean neverStaged) throws IOException {
        VolumeRecord record = records.get(key);
        Usage usage = record.usage(alloc).orElse(null);
        if (usage == null) {
            return;
        }
        record = records.save(record.withUsage(usage.withState(PublishState.UNPUBLISHING)));
        try {
            if (unpublishNeeded) {
                plugin.unpublish(record.externalVolumeId(), paths.requireNoLinks(target));
            }
            dirs.removeEmptyTarget(target, alloc);
            record = records.checkpoint(record.withoutUsage(alloc));
            if (neverStaged && record.usages().isEmpty() && record.stage() == StageState.STAGING) {
                record = records.checkpoint(record.withStage(StageState.UNSTAGED));
                dirs.removeEmptyStaging(Path.of(record.stagingPath()));
            }
            finishUnstageIfUnused(key, plugin, records::checkpoint);
        } catch (PluginCallFailure cleanup) {
            LOG.warning("rolling back the failed mount of " + key + " for allocation " + alloc
                    + " is incomplete (" + cleanup.getMessage() + "); the next unmount or restart finishes it");
        }
    }

    MountDone unmount(NodeCommand command, VolumeKey key) throws IOException {
        String alloc = command.allocationId();
        Path target = paths.targetPath(alloc, key.namespace(), key.volumeId());
        VolumeRecord record = records.get(key);
        boolean inUse = record != null && record.usage(alloc).isPresent();
        boolean leftoverStaging = record != null && record.unstageAllowed();
        if (!inUse && !leftoverStaging && !mounts.get().isMountPoint(target)) {
            dirs.removeEmptyTarget(target, alloc);
            return afterNodeUnmount(command, key);
        }
        String pluginId = record != null ? record.pluginId() : command.pluginId();
        Optional<NodeVolumePlugin> found = plugins.node(pluginId);
        if (found.isEmpty()) {
            return answers.failed(command, VolumeOperations.PLUGIN_NOT_FOUND, "CSI plugin '" + pluginId
                    + "' has no healthy node instance on node " + nodeId + "; volume " + key
                    + " stays published for allocation " + alloc + " until it is back", null, null);
        }
        NodeVolumePlugin plugin = found.get();
        paths.requireNoLinks(target);
        try {
            if (record != null && inUse) {
                record = records.save(record.withUsage(record.usage(alloc).get().withState(PublishState.UNPUBLISHING)));
            }
            String externalVolumeId = record != null ? record.externalVolumeId() : command.externalVolumeId();
            plugin.unpublish(externalVolumeId, target);
            dirs.removeEmptyTarget(target, alloc);
            if (record != null) {
                records.checkpoint(records.get(key).withoutUsage(alloc));
                finishUnstageIfUnused(key, plugin, records::checkpoint);
            }
            return afterNodeUnmount(command, key);
        } catch (PluginCallFailure failure) {
            return answers.failed(command, failure.code(), failure.getMessage(), null, null);
        }
    }

    /**
     * The answer of an unmount whose node steps are done (and checkpointed): with the controller steps (issue 36),
     * ControllerUnpublishVolume first when no allocation here uses the volume any more ({@link ControllerSteps}); its
     * failure is the answer, and a re-sent unmount finds the node steps done and calls only it again.
     */
    private MountDone afterNodeUnmount(NodeCommand command, VolumeKey key) {
        if (command.controllerSteps()) {
            try {
                controllerSteps.unpublishIfUnused(command, key);
            } catch (PluginCallFailure failure) {
                return answers.failed(command, failure.code(), failure.getMessage(), null, null);
            }
        }
        return answers.succeeded(command, null, null);
    }

    /**
     * Unstages the volume when nobody on this node uses it any more: UNSTAGING is written before the call (durably,
     * with whatever was checkpointed before it), UNSTAGED after it through {@code end}: {@link #checkpoint} inside a
     * command (its result's write makes it durable), {@link #save} elsewhere.
     */
    void finishUnstageIfUnused(VolumeKey key, NodeVolumePlugin plugin, Persist end) throws IOException {
        VolumeRecord record = records.get(key);
        if (!record.unstageAllowed()) {
            return;
        }
        Path staging = paths.requireNoLinks(Path.of(record.stagingPath()));
        record = records.save(record.withStage(StageState.UNSTAGING));
        if (plugin.requiresStaging() || mounts.get().isMountPoint(staging)) {
            plugin.unstage(record.externalVolumeId(), paths.requireNoLinks(staging));
        }
        end.persist(records.get(key).withStage(StageState.UNSTAGED));
        dirs.removeEmptyStaging(staging);
    }

    static VolumeRequest request(VolumeRecord record, Usage usage, SecretPayload opened, Path staging, Path target) {
        return new VolumeRequest(record.externalVolumeId(), usage.accessMode(), usage.attachmentMode(), usage.fsType(),
                opened.mountFlags(), opened.secrets(), usage.volumeContext(), usage.publishContext(), usage.readOnly(),
                staging, target);
    }

    /** How a state is kept: {@link #save} or {@link #checkpoint}. */
    @FunctionalInterface
    interface Persist {
        VolumeRecord persist(VolumeRecord record) throws IOException;
    }
}
