package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.ProvisionedVolume;
import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.UnsafePathException;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The node side of CSI for the volumes of this node: mount (stage once per volume, publish per
 * allocation), unmount (unpublish, unstage when the last user is gone), controller publish and
 * unpublish, restore after a restart, heal after a plugin restart and heal of stale mounts (not
 * mounted any more, or corrupted: {@link MountCheck}). Every state change is
 * written to the {@link MountRecordStore} BEFORE the plugin call it announces (the usage
 * reference is taken before staging), so a crash at any point leaves a record from which
 * {@link #restore(VolumeKey)} converges.
 *
 * <p>Not thread-safe per volume: callers run at most one operation per volume at a time
 * ({@link VolumeSerializer}); different volumes may run concurrently.
 */
public final class VolumeOperations {

    public static final String PLUGIN_NOT_FOUND = "PLUGIN_NOT_FOUND";
    public static final String INVALID_COMMAND = "INVALID_COMMAND";
    public static final String SECRETS_UNREADABLE = "SECRETS_UNREADABLE";
    public static final String WORKER_IO_ERROR = "WORKER_IO_ERROR";
    /** A staging or target path with a planted symbolic link ({@link UnsafePathException}); never retried. */
    public static final String UNSAFE_PATH = "UNSAFE_PATH";

    private static final Logger LOG = Logger.getLogger(VolumeOperations.class.getName());

    private final String nodeId;
    private final WorkerPaths paths;
    private final MountRecordStore store;
    private final PluginDirectory plugins;
    private final Supplier<MountTable> mountTable;
    private final SecretOpener secrets;
    private final Consumer<NodeEvent> events;
    private final Clock clock;
    private final MountCheck mountCheck;
    private final Map<VolumeKey, VolumeRecord> records = new ConcurrentHashMap<>();
    /** Volumes whose record in {@link #records} has a {@link #checkpoint} not yet written. */
    private final java.util.Set<VolumeKey> unsaved = ConcurrentHashMap.newKeySet();
    private volatile java.util.function.BooleanSupplier leaseValid = () -> true;
    private volatile java.util.function.BooleanSupplier guardFed = () -> true;
    private final ProvisionOperations provisioning;
    private final ControllerSteps controllerSteps;

    public VolumeOperations(String nodeId, WorkerPaths paths, MountRecordStore store, PluginDirectory plugins,
                            Supplier<MountTable> mountTable, SecretOpener secrets, Consumer<NodeEvent> events,
                            Clock clock) {
        this(nodeId, paths, store, plugins, mountTable, secrets, events, clock, MountCheck.system());
    }

    public VolumeOperations(String nodeId, WorkerPaths paths, MountRecordStore store, PluginDirectory plugins,
                            Supplier<MountTable> mountTable, SecretOpener secrets, Consumer<NodeEvent> events,
                            Clock clock, MountCheck mountCheck) {
        this.mountCheck = mountCheck;
        this.nodeId = nodeId;
        this.paths = paths;
        this.store = store;
        this.plugins = plugins;
        this.mountTable = mountTable;
        this.secrets = secrets;
        this.events = events;
        this.clock = clock;
        this.provisioning = new ProvisionOperations(nodeId, plugins, secrets, clock);
        this.controllerSteps = new ControllerSteps(nodeId, plugins, secrets, new ControllerSteps.Records() {
            @Override
            public VolumeRecord get(VolumeKey key) {
                return records.get(key);
            }

            @Override
            public VolumeRecord save(VolumeRecord record) throws IOException {
                return VolumeOperations.this.save(record);
            }

            @Override
            public VolumeRecord checkpoint(VolumeRecord record) {
                return VolumeOperations.this.checkpoint(record);
            }
        });
    }

    /**
     * With fencing on (issue 19): the restore and the healer publish (and stage for) a publication fenced on a lapse
     * only while {@code valid} says the node's lease is valid; without a lease it is left as it is until then.
     */
    public void publishFencedOnlyWhile(java.util.function.BooleanSupplier valid) {
        this.leaseValid = valid;
    }

    /**
     * With the fence guard (issue 19): before a new publication fenced on a lapse is staged or published, the guard is
     * fed the paths of the records (which hold it from step 1 of {@link #mount} on) through {@code feed}, which answers
     * whether the guard now has them. A mount made between two of the lease thread's feeds (every poll, up to 200 ms
     * apart) and a freeze right after it was not in the guard's list: the guard then fenced everything but it, and
     * node-2 was given the volume while node-1 still had it mounted (FencingIT, freeze-worker-node-1). A guard that
     * cannot be fed refuses the mount: when in doubt, nothing is mounted.
     */
    public void feedGuardBeforeMountsWith(java.util.function.BooleanSupplier feed) {
        this.guardFed = feed;
    }

    private boolean mayPublish(Usage usage) {
        return !usage.fencesOnLapse() || leaseValid.getAsBoolean();
    }

    /** Loads every record from disk; returns the problems (unreadable records set aside). */
    public List<String> load() throws IOException {
        MountRecordStore.Loaded loaded = store.loadAll();
        records.clear();
        records.putAll(loaded.records());
        return loaded.problems();
    }

    public Optional<VolumeRecord> record(VolumeKey key) {
        return Optional.ofNullable(records.get(key));
    }

    public Map<VolumeKey, VolumeRecord> records() {
        return Map.copyOf(records);
    }

    /** The volumes that hold something on this node (a usage, a staging) through {@code pluginId}. */
    public List<VolumeKey> volumesOf(String pluginId) {
        List<VolumeKey> keys = new ArrayList<>();
        records.forEach((key, record) -> {
            if (record.pluginId().equals(pluginId) && (!record.usages().isEmpty() || record.stage() != StageState.UNSTAGED)) {
                keys.add(key);
            }
        });
        return keys;
    }

    // ------------------------------------------------------------------ commands

    /**
     * Runs one command and returns its answer. A command id answered before is answered again
     * from the record, without a plugin call.
     */
    public MountDone execute(NodeCommand command) {
        if (command.kind().provisioning()) {
            // create-volume, delete-volume (issue 14): controller calls that leave no node state
            return provisioning.execute(command);
        }
        if (command.kind() == NodeCommandKind.NODE_EXPAND) {
            return nodeExpand(command);
        }
        VolumeKey key = new VolumeKey(command.namespace(), command.volumeId());
        VolumeRecord existing = records.get(key);
        if (existing != null) {
            Optional<MountDone> recorded = existing.resultFor(command.commandId());
            if (recorded.isPresent()) {
                LOG.fine(() -> "command " + command.commandId() + " was answered before; answering from the record");
                return recorded.get();
            }
        }
        MountDone done;
        try {
            if (!nodeId.equals(command.nodeId())) {
                done = failed(command, INVALID_COMMAND, "command for node '" + command.nodeId()
                        + "' reached the worker of node '" + nodeId + "'", null, null);
            } else if (existing != null && !existing.pluginId().equals(command.pluginId()) && !existing.idle()) {
                done = failed(command, INVALID_COMMAND, "volume " + key + " is in use on node " + nodeId
                        + " through plugin '" + existing.pluginId() + "', not '" + command.pluginId() + "'", null, null);
            } else {
                done = switch (command.kind()) {
                    case MOUNT -> mount(command, key);
                    case UNMOUNT -> unmount(command, key);
                    case CONTROLLER_PUBLISH -> controllerPublish(command, key);
                    case CONTROLLER_UNPUBLISH -> controllerUnpublish(command, key);
                    case CREATE_VOLUME, DELETE_VOLUME, CREATE_SNAPSHOT, DELETE_SNAPSHOT, CONTROLLER_EXPAND, NODE_EXPAND, LIST_VOLUMES -> throw new IllegalStateException("answered above");
                };
            }
        } catch (IllegalArgumentException e) {
            done = failed(command, INVALID_COMMAND, e.getMessage(), null, null);
        } catch (UnsafePathException e) {
            LOG.warning("node " + nodeId + " refused command " + command.commandId() + " for volume " + key
                    + ": " + e.getMessage());
            done = failed(command, UNSAFE_PATH, e.getMessage(), null, null);
        } catch (IOException | UncheckedIOException e) {
            done = failed(command, WORKER_IO_ERROR, "node " + nodeId + " could not update its local state for volume "
                    + key + ": " + e.getMessage(), null, null);
        }
        done = remember(key, command, done);
        emitCommandEvent(command, done);
        return done;
    }

    /**
     * node-expand-volume (issue 14 item 3): CSI NodeExpandVolume at one target path where the volume is published on
     * this node (and its staging path when staged): the node expands a volume once, whichever path it is given. No
     * node state changes and none is recorded: the call is idempotent, so a redelivery simply calls it again. A
     * volume no longer published here has nothing mounted to expand: done, without a call. FAILED_PRECONDITION comes
     * back as it is, never retried (CSI).
     */
    private MountDone nodeExpand(NodeCommand command) {
        if (!nodeId.equals(command.nodeId())) {
            return failed(command, INVALID_COMMAND, "command for node '" + command.nodeId()
                    + "' reached the worker of node '" + nodeId + "'", null, null);
        }
        VolumeKey key = new VolumeKey(command.namespace(), command.volumeId());
        VolumeRecord record = records.get(key);
        Optional<Usage> published = record == null ? Optional.empty() : record.usages().values().stream()
                .filter(u -> u.state() == PublishState.PUBLISHED).min(Comparator.comparing(Usage::allocationId));
        if (published.isEmpty()) {
            LOG.info(() -> "volume " + key + " is not published on node " + nodeId + "; nothing to expand here");
            return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                    null, true, null, null, Map.of(), null, null, clock.instant());
        }
        Optional<NodeVolumePlugin> plugin = plugins.node(record.pluginId());
        if (plugin.isEmpty()) {
            return failed(command, PLUGIN_NOT_FOUND, "CSI plugin '" + record.pluginId()
                    + "' is not running or not healthy on node " + nodeId, null, null);
        }
        try {
            Path target = paths.requireNoLinks(Path.of(published.get().targetPath()));
            Path staging = record.stage() == StageState.STAGED ? Path.of(record.stagingPath()) : null;
            long required = command.provision().capacityMinBytes();
            long limit = command.provision().capacityMaxBytes() == null ? 0 : command.provision().capacityMaxBytes();
            long capacity = plugin.get().nodeExpand(record.externalVolumeId(), target, staging, required, limit);
            return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                    null, true, null, null, Map.of(), target.toString(), null, clock.instant(), null, null,
                    ProvisionedVolume.expanded(record.externalVolumeId(), capacity, false));
        } catch (PluginCallFailure failure) {
            return failed(command, failure.code(), failure.getMessage(), null, null);
        } catch (UnsafePathException e) {
            return failed(command, UNSAFE_PATH, e.getMessage(), null, null);
        } catch (IOException e) {
            return failed(command, WORKER_IO_ERROR, "node " + nodeId + " could not check the target path of volume "
                    + key + ": " + e.getMessage(), null, null);
        }
    }

    /**
     * Writes the command's result into the volume's record, together with the state the command checkpointed (one
     * atomic, durable write: the state after the last plugin call and the answer are on disk at once, before the
     * answer is sent). If that write fails while it carried checkpointed state, the answer becomes the failure
     * {@code WORKER_IO_ERROR} (as when a write inside the command failed: the record on disk still says the operation
     * is in progress, which a restart or the next command finishes); a failed write of the result alone only means a
     * redelivery runs the command again (idempotently).
     */
    private MountDone remember(VolumeKey key, NodeCommand command, MountDone done) {
        VolumeRecord record = records.get(key);
        if (record == null) {
            record = VolumeRecord.empty(key, command.pluginId(), command.externalVolumeId(),
                    paths.stagingPath(key.namespace(), key.volumeId()).toString());
        }
        boolean carriesState = unsaved.contains(key);
        try {
            save(record.withResult(done));
            return done;
        } catch (IOException e) {
            if (!carriesState) {
                LOG.log(Level.WARNING, "could not record the result of command " + command.commandId()
                        + "; a redelivery runs it again (idempotently)", e);
                return done;
            }
            MountDone failure = failed(command, WORKER_IO_ERROR, "node " + nodeId
                    + " could not update its local state for volume " + key + ": " + e.getMessage(), null, null);
            LOG.log(Level.WARNING, "could not record the state and result of command " + command.commandId(), e);
            return failure;
        }
    }

    private MountDone mount(NodeCommand command, VolumeKey key) throws IOException {
        String alloc = command.allocationId();
        Path staging = paths.stagingPath(key.namespace(), key.volumeId());
        Path target = paths.targetPath(alloc, key.namespace(), key.volumeId());
        Optional<NodeVolumePlugin> found = plugins.node(command.pluginId());
        if (found.isEmpty()) {
            return failed(command, PLUGIN_NOT_FOUND, "CSI plugin '" + command.pluginId()
                    + "' has no healthy node instance on node " + nodeId, null, null);
        }
        NodeVolumePlugin plugin = found.get();
        SecretPayload opened;
        try {
            opened = secrets.open(command.sealed(), key.namespace(), key.volumeId());
        } catch (RuntimeException e) {
            return failed(command, SECRETS_UNREADABLE, e.getMessage(), null, null);
        }

        VolumeRecord record = records.get(key);
        if (record == null || record.idle()) {
            record = (record == null ? VolumeRecord.empty(key, command.pluginId(), command.externalVolumeId(), staging.toString())
                    : record.withPlugin(command.pluginId(), command.externalVolumeId()));
        }
        Optional<Usage> previous = record.usage(alloc);
        if (previous.isPresent() && previous.get().readOnly() != command.readOnly()
                && previous.get().state() == PublishState.PUBLISHED) {
            return failed(command, "ALREADY_EXISTS", "volume " + key + " is already published for allocation " + alloc
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
        save(record);
        // 1b. a new publication fenced on a lapse: in the guard's list before anything is mounted
        if (usage.fencesOnLapse() && usage.state() != PublishState.PUBLISHED && !guardFed.getAsBoolean()) {
            rollBackMount(key, plugin, alloc, target, false);
            return failed(command, "FENCE_GUARD_UNFED", "volume " + key + " is not mounted for allocation " + alloc
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
                return failed(command, failure.code(), failure.getMessage(), null, null);
            }
        }

        VolumeRequest request = request(record, usage, opened, staging, target);
        boolean publishAttempted = false;
        try {
            // 2. directories: the staging path and the target's parent, 0700; a staging path the volume is mounted
            //    on already (another allocation's) is the volume's root: never chmod it (EROFS when read-only)
            //    (one read of the mount table for steps 2 to 4 while nothing is mounted in between: each read parses
            //    the whole of /proc/self/mountinfo)
            MountTable table = mountTable.get();
            if (staged && !table.isMountPoint(staging)) {
                paths.ensureDirectory(staging);
            }
            paths.ensureTargetParent(target);
            // 3. stage once per volume on this node
            if (staged && record.stage() != StageState.STAGED) {
                if (!table.isMountPoint(staging)) {
                    paths.requireNoLinks(staging);
                    plugin.stage(request);
                    table = mountTable.get(); // staged now: read again
                }
                record = checkpoint(records.get(key).withStage(StageState.STAGED));
            }
            // 4. publish for this allocation, unless it is already mounted the same way
            Optional<MountInfo> mounted = table.mountAt(target);
            if (mounted.isEmpty() || mounted.get().readOnly() != command.readOnly()) {
                paths.requireNoLinks(target);
                publishAttempted = true;
                plugin.publish(request);
            }
            checkpoint(records.get(key).withUsage(usage.withState(PublishState.PUBLISHED)));
            if (command.controllerSteps()) {
                // the publish context of the controller publication, as a controller-publish command answers it
                return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(),
                        command.volumeId(), command.allocationId(), true, null, null, usage.publishContext(),
                        target.toString(), staged ? staging.toString() : null, clock.instant());
            }
            return succeeded(command, target.toString(), staged ? staging.toString() : null);
        } catch (PluginCallFailure failure) {
            rollBackMount(key, plugin, alloc, target, publishAttempted || failure.uncertain());
            return failed(command, failure.code(), failure.getMessage(), null, null);
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
        record = save(record.withUsage(usage.withState(PublishState.UNPUBLISHING)));
        try {
            if (unpublishNeeded) {
                plugin.unpublish(record.externalVolumeId(), paths.requireNoLinks(target));
            }
            removeEmptyTarget(target, alloc);
            record = checkpoint(record.withoutUsage(alloc));
            if (neverStaged && record.usages().isEmpty() && record.stage() == StageState.STAGING) {
                record = checkpoint(record.withStage(StageState.UNSTAGED));
                removeEmptyDirectory(Path.of(record.stagingPath()));
                removeEmptyDirectory(Path.of(record.stagingPath()).getParent());
            }
            finishUnstageIfUnused(key, plugin, this::checkpoint);
        } catch (PluginCallFailure cleanup) {
            LOG.warning("rolling back the failed mount of " + key + " for allocation " + alloc
                    + " is incomplete (" + cleanup.getMessage() + "); the next unmount or restart finishes it");
        }
    }

    private MountDone unmount(NodeCommand command, VolumeKey key) throws IOException {
        String alloc = command.allocationId();
        Path target = paths.targetPath(alloc, key.namespace(), key.volumeId());
        VolumeRecord record = records.get(key);
        boolean inUse = record != null && record.usage(alloc).isPresent();
        boolean leftoverStaging = record != null && record.unstageAllowed();
        if (!inUse && !leftoverStaging && !mountTable.get().isMountPoint(target)) {
            removeEmptyTarget(target, alloc);
            return afterNodeUnmount(command, key);
        }
        String pluginId = record != null ? record.pluginId() : command.pluginId();
        Optional<NodeVolumePlugin> found = plugins.node(pluginId);
        if (found.isEmpty()) {
            return failed(command, PLUGIN_NOT_FOUND, "CSI plugin '" + pluginId
                    + "' has no healthy node instance on node " + nodeId + "; volume " + key
                    + " stays published for allocation " + alloc + " until it is back", null, null);
        }
        NodeVolumePlugin plugin = found.get();
        paths.requireNoLinks(target);
        try {
            if (record != null && inUse) {
                record = save(record.withUsage(record.usage(alloc).get().withState(PublishState.UNPUBLISHING)));
            }
            String externalVolumeId = record != null ? record.externalVolumeId() : command.externalVolumeId();
            plugin.unpublish(externalVolumeId, target);
            removeEmptyTarget(target, alloc);
            if (record != null) {
                checkpoint(records.get(key).withoutUsage(alloc));
                finishUnstageIfUnused(key, plugin, this::checkpoint);
            }
            return afterNodeUnmount(command, key);
        } catch (PluginCallFailure failure) {
            return failed(command, failure.code(), failure.getMessage(), null, null);
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
                return failed(command, failure.code(), failure.getMessage(), null, null);
            }
        }
        return succeeded(command, null, null);
    }

    /**
     * Unstages the volume when nobody on this node uses it any more: UNSTAGING is written before the call (durably,
     * with whatever was checkpointed before it), UNSTAGED after it through {@code end}: {@link #checkpoint} inside a
     * command (its result's write makes it durable), {@link #save} elsewhere.
     */
    private void finishUnstageIfUnused(VolumeKey key, NodeVolumePlugin plugin, Persist end) throws IOException {
        VolumeRecord record = records.get(key);
        if (!record.unstageAllowed()) {
            return;
        }
        Path staging = paths.requireNoLinks(Path.of(record.stagingPath()));
        record = save(record.withStage(StageState.UNSTAGING));
        if (plugin.requiresStaging() || mountTable.get().isMountPoint(staging)) {
            plugin.unstage(record.externalVolumeId(), paths.requireNoLinks(staging));
        }
        end.persist(records.get(key).withStage(StageState.UNSTAGED));
        removeEmptyDirectory(staging);
        removeEmptyDirectory(staging.getParent());
    }

    private MountDone controllerPublish(NodeCommand command, VolumeKey key) throws IOException {
        Optional<ControllerVolumePlugin> found = plugins.controller(command.pluginId());
        if (found.isEmpty()) {
            return failed(command, PLUGIN_NOT_FOUND, "CSI plugin '" + command.pluginId()
                    + "' has no healthy controller instance on node " + nodeId, null, null);
        }
        SecretPayload opened;
        try {
            opened = secrets.open(command.sealed(), key.namespace(), key.volumeId());
        } catch (RuntimeException e) {
            return failed(command, SECRETS_UNREADABLE, e.getMessage(), null, null);
        }
        VolumeRequest request = new VolumeRequest(command.externalVolumeId(), command.accessMode(),
                command.attachmentMode(), command.fsType(), opened.mountFlags(), opened.secrets(),
                command.volumeContext(), Map.of(), command.readOnly(), null, null);
        try {
            Map<String, String> context = found.get().controllerPublish(request, command.externalNodeId());
            VolumeRecord record = recordFor(key, command);
            checkpoint(record.withControllerPublication(command.externalNodeId(), context));
            return new MountDone(command.commandId(), nodeId, command.kind(), key.namespace(), key.volumeId(),
                    command.allocationId(), true, null, null, context, null, null, clock.instant());
        } catch (PluginCallFailure failure) {
            return failed(command, failure.code(), failure.getMessage(), null, null);
        }
    }

    private MountDone controllerUnpublish(NodeCommand command, VolumeKey key) throws IOException {
        Optional<ControllerVolumePlugin> found = plugins.controller(command.pluginId());
        if (found.isEmpty()) {
            return failed(command, PLUGIN_NOT_FOUND, "CSI plugin '" + command.pluginId()
                    + "' has no healthy controller instance on node " + nodeId, null, null);
        }
        SecretPayload opened;
        try {
            opened = secrets.open(command.sealed(), key.namespace(), key.volumeId());
        } catch (RuntimeException e) {
            return failed(command, SECRETS_UNREADABLE, e.getMessage(), null, null);
        }
        try {
            found.get().controllerUnpublish(command.externalVolumeId(), command.externalNodeId(), opened.secrets());
            VolumeRecord record = records.get(key);
            if (record != null) {
                checkpoint(record.withoutControllerPublication(command.externalNodeId()));
            }
            return succeeded(command, null, null);
        } catch (PluginCallFailure failure) {
            return failed(command, failure.code(), failure.getMessage(), null, null);
        }
    }

    // ------------------------------------------------------------------ fence (issue 19)

    /** How a fence left one path. */
    public enum FenceOutcome {
        /** Unmounted through the plugin, or nothing was mounted there. */
        UNMOUNTED,
        /** Detached with umount2(MNT_DETACH): the plugin was not there or could not unmount it (busy). */
        LAZY,
        /** Still mounted. */
        FAILED
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
                    save(records.get(key).withUsage(usage.withState(PublishState.UNPUBLISHING)));
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
                    removeEmptyTarget(target, t.allocationId());
                    save(records.get(key).withoutUsage(t.allocationId()));
                }
            }
            record = records.get(key);
            if (volume.stagingPath() != null && record.unstageAllowed()) {
                Path staging = Path.of(record.stagingPath());
                save(record.withStage(StageState.UNSTAGING));
                boolean stages = plugin.map(NodeVolumePlugin::requiresStaging).orElse(false);
                String id = key.namespace() + "/" + key.volumeId();
                FenceOutcome outcome = unmountForFence(staging, stages ? plugin : Optional.empty(),
                        p -> p.unstage(externalId, staging), lazy, id + " staging", report.problems);
                if (outcome == FenceOutcome.FAILED) {
                    report.stagingFailed.add(id);
                } else {
                    save(records.get(key).withStage(StageState.UNSTAGED));
                    removeEmptyDirectory(staging);
                    removeEmptyDirectory(staging.getParent());
                }
            }
        } catch (IOException | RuntimeException e) {
            report.problems.add(key + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
            LOG.log(Level.WARNING, "fence of volume " + key + " could not update its record", e);
        }
        return report;
    }

    /** A plugin call after the guard's unmount, best effort: a failure is noted in {@code problems}. */
    private static void tellPlugin(Optional<NodeVolumePlugin> plugin, java.util.function.Consumer<NodeVolumePlugin> call,
                                   String what, List<String> problems) {
        if (plugin.isEmpty()) {
            return;
        }
        try {
            call.accept(plugin.get());
        } catch (RuntimeException f) { // PluginCallFailure included
            problems.add(what + ": the plugin could not be told of the guard's unmount: " + f.getMessage());
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
        // The guard unmounted behind the plugin's back: the plugin, when it is there, is told too (NodeUnpublish /
        // NodeUnstage of a path no longer mounted), so its own state does not keep the publication (a later
        // NodeUnstage of the volume was refused "still published on the node" for ever). Best effort: a failure is a
        // problem in the report, the guard's unmount stands.
        Optional<NodeVolumePlugin> plugin = plugins.node(record.pluginId());
        String externalId = record.externalVolumeId();
        try {
            for (Usage usage : List.copyOf(record.users())) {
                FenceOutcome outcome = byPath.get(usage.targetPath());
                if (outcome == null) {
                    continue;
                }
                String id = key.namespace() + "/" + key.volumeId() + "/" + usage.allocationId();
                if (outcome == FenceOutcome.FAILED) {
                    report.failed.add(id);
                    save(records.get(key).withUsage(usage.withState(PublishState.UNPUBLISHING)));
                } else {
                    (outcome == FenceOutcome.LAZY ? report.lazilyDetached : report.unmounted).add(id);
                    Path target = Path.of(usage.targetPath());
                    tellPlugin(plugin, p -> p.unpublish(externalId, target), id, report.problems);
                    removeEmptyTarget(target, usage.allocationId());
                    save(records.get(key).withoutUsage(usage.allocationId()));
                }
            }
            record = records.get(key);
            FenceOutcome staging = byPath.get(record.stagingPath());
            if (staging != null && record.unstageAllowed()) {
                if (staging == FenceOutcome.FAILED) {
                    report.stagingFailed.add(key.namespace() + "/" + key.volumeId());
                    save(record.withStage(StageState.UNSTAGING));
                } else {
                    if (plugin.map(NodeVolumePlugin::requiresStaging).orElse(false)) {
                        Path stagingPath = Path.of(record.stagingPath());
                        tellPlugin(plugin, p -> p.unstage(externalId, stagingPath),
                                key.namespace() + "/" + key.volumeId() + " staging", report.problems);
                    }
                    save(records.get(key).withStage(StageState.UNSTAGED));
                    removeEmptyDirectory(Path.of(record.stagingPath()));
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
                save(record.withUsage(usage.get().withState(PublishState.UNPUBLISHING)));
                marked++;
            }
        }
        return marked;
    }

    // -------------------------------------------------------- restore and heal

    /** Why a volume is converged: the event's message says it. */
    private enum Cause {
        RESTORE("Restore volume after worker restart"),
        PLUGIN_RESTART("Heal volume after plugin restart"),
        STALE_MOUNT("Heal stale mount");

        final String message;

        Cause(String message) {
            this.message = message;
        }
    }

    /**
     * One damaged path that a convergence found where the record says mounted, and unmounted
     * (when corrupted) and mounted again.
     *
     * @param path         {@code staging} or {@code target}
     * @param allocationId the target's allocation; null for the staging
     */
    public record Repair(String path, String allocationId, MountCheck.Result found) {
        public MountDamage damage() {
            return found.damage();
        }

        String detailKey() {
            return allocationId == null ? path : path + "/" + allocationId;
        }
    }

    /** What restore or heal did for one volume. */
    public record Convergence(VolumeKey key, int staged, int published, int released, List<String> errors,
                              List<Repair> repairs) {
        public Convergence {
            errors = List.copyOf(errors);
            repairs = List.copyOf(repairs);
        }

        public boolean nothingToDo() {
            return staged == 0 && published == 0 && released == 0 && errors.isEmpty() && repairs.isEmpty();
        }
    }

    /**
     * Brings one volume back to what its record says after a restart: an intact mount costs no
     * plugin call; a lost staging is staged again, a lost publication published again, a corrupted
     * one unmounted (through the plugin) and mounted again; an interrupted unmount is finished.
     */
    public Convergence restore(VolumeKey key) {
        return converge(key, Cause.RESTORE);
    }

    /**
     * After the volume's node plugin restarted: stage again when its staging is gone, then publish
     * every target again (the plugin repairs or confirms it).
     */
    public Convergence heal(VolumeKey key) {
        return converge(key, Cause.PLUGIN_RESTART);
    }

    /**
     * The periodic check of the healer: when a staging or target the record says is mounted
     * ({@code STAGED}; a usage not being released) is no longer a mount point or is corrupted
     * ({@link MountCheck}), and the volume's plugin is healthy, converges the volume (a corrupted
     * mount is unpublished/unstaged first, then staged and published again). A usage being
     * released ({@code UNPUBLISHING}) is never checked nor published again. Costs no plugin call
     * when nothing is damaged; does nothing (and reports nothing) while the plugin is not healthy:
     * its return heals the volume.
     */
    public Convergence healDamaged(VolumeKey key) {
        VolumeRecord record = records.get(key);
        Convergence none = new Convergence(key, 0, 0, 0, List.of(), List.of());
        if (record == null || damaged(record).isEmpty() || plugins.node(record.pluginId()).isEmpty()) {
            return none;
        }
        return converge(key, Cause.STALE_MOUNT);
    }

    /** The paths of {@code record} that it says are mounted and that are not, or are corrupted. */
    List<Repair> damaged(VolumeRecord record) {
        MountTable table = mountTable.get();
        List<Repair> found = new ArrayList<>();
        List<Usage> wanted = record.users().stream().filter(u -> u.state() != PublishState.UNPUBLISHING)
                .filter(this::mayPublish).toList();
        if (wanted.isEmpty()) {
            return found;
        }
        if (record.stage() == StageState.STAGED) {
            MountCheck.Result staging = mountCheck.check(Path.of(record.stagingPath()), table);
            if (staging.damage() != MountDamage.NONE) {
                found.add(new Repair("staging", null, staging));
            }
        }
        for (Usage usage : wanted) {
            MountCheck.Result target = mountCheck.check(Path.of(usage.targetPath()), table);
            if (target.damage() != MountDamage.NONE) {
                found.add(new Repair("target", usage.allocationId(), target));
            }
        }
        return found;
    }

    private Convergence converge(VolumeKey key, Cause cause) {
        VolumeRecord record = records.get(key);
        List<String> errors = new ArrayList<>();
        List<Repair> repairs = new ArrayList<>();
        int staged = 0;
        int published = 0;
        int released = 0;
        if (record == null) {
            return new Convergence(key, 0, 0, 0, errors, repairs);
        }
        Optional<NodeVolumePlugin> found = plugins.node(record.pluginId());
        if (found.isEmpty()) {
            if (!record.usages().isEmpty() || record.stage() != StageState.UNSTAGED) {
                errors.add("CSI plugin '" + record.pluginId() + "' has no healthy node instance on node " + nodeId);
            }
            return new Convergence(key, 0, 0, 0, errors, repairs);
        }
        NodeVolumePlugin plugin = found.get();
        try {
            // finish interrupted releases first
            for (Usage usage : List.copyOf(record.users())) {
                if (usage.state() == PublishState.UNPUBLISHING) {
                    try {
                        plugin.unpublish(record.externalVolumeId(), paths.requireNoLinks(Path.of(usage.targetPath())));
                        removeEmptyTarget(Path.of(usage.targetPath()), usage.allocationId());
                        record = save(records.get(key).withoutUsage(usage.allocationId()));
                        released++;
                    } catch (PluginCallFailure f) {
                        errors.add("unpublish for allocation " + usage.allocationId() + ": " + f.getMessage());
                    }
                }
            }
            record = records.get(key);
            if (record.usages().isEmpty()) {
                if (record.stage() != StageState.UNSTAGED) {
                    try {
                        finishUnstageIfUnused(key, plugin, this::save);
                        released++;
                    } catch (PluginCallFailure f) {
                        errors.add("unstage: " + f.getMessage());
                    }
                }
                return reported(record, new Convergence(key, staged, published, released, errors, repairs), cause);
            }
            // a usage still UNPUBLISHING (its release failed above) is left for a later restore, heal
            // or unmount to finish: publishing it again would undo a release the record announced
            // a publication fenced on a lapse is not published again while the lease is not valid (a restore
            // before the first grant, a heal after a freeze): that is what the fence takes away
            List<Usage> wanted = record.users().stream().filter(u -> u.state() != PublishState.UNPUBLISHING)
                    .filter(this::mayPublish).toList();
            if (wanted.isEmpty()) {
                return reported(record, new Convergence(key, staged, published, released, errors, repairs), cause);
            }
            MountTable table = mountTable.get();
            Path staging = Path.of(record.stagingPath());
            if (plugin.requiresStaging()) {
                MountCheck.Result stagingFound = mountCheck.check(staging, table);
                if (stagingFound.damage() == MountDamage.CORRUPTED) {
                    // unmount first (kubelet, ceph-csi): every target is a bind mount of the staging,
                    // so all are unpublished, then the staging unstaged, each step recorded before
                    try {
                        for (Usage usage : wanted) {
                            save(records.get(key).withUsage(usage.withState(PublishState.PUBLISHING)));
                            plugin.unpublish(record.externalVolumeId(), paths.requireNoLinks(Path.of(usage.targetPath())));
                        }
                        record = save(records.get(key).withStage(StageState.STAGING));
                        plugin.unstage(record.externalVolumeId(), paths.requireNoLinks(staging));
                    } catch (PluginCallFailure f) {
                        errors.add("unmount of the corrupted staging: " + f.getMessage());
                        return reported(records.get(key),
                                new Convergence(key, staged, published, released, errors, repairs), cause);
                    }
                    repairs.add(new Repair("staging", null, stagingFound));
                    record = records.get(key);
                    wanted = record.users().stream().filter(u -> u.state() != PublishState.UNPUBLISHING)
                            .filter(this::mayPublish).toList();
                    if (wanted.isEmpty()) {
                        return reported(record, new Convergence(key, staged, published, released, errors, repairs),
                                cause);
                    }
                    table = mountTable.get();
                } else if (stagingFound.damage() == MountDamage.NOT_MOUNTED && record.stage() == StageState.STAGED) {
                    repairs.add(new Repair("staging", null, stagingFound));
                }
            }
            Usage first = wanted.get(0);
            if (plugin.requiresStaging() && !table.isMountPoint(staging)) {
                try {
                    paths.ensureDirectory(staging);
                    record = save(record.withStage(StageState.STAGING));
                    plugin.stage(request(record, first, open(record, first.sealed()), staging,
                            Path.of(first.targetPath())));
                    record = save(records.get(key).withStage(StageState.STAGED));
                    staged++;
                } catch (PluginCallFailure f) {
                    errors.add("stage: " + f.getMessage());
                    return reported(record, new Convergence(key, staged, published, released, errors, repairs), cause);
                }
            } else if (plugin.requiresStaging() && record.stage() != StageState.STAGED) {
                record = save(record.withStage(StageState.STAGED));
            }
            table = mountTable.get();
            boolean heal = cause != Cause.RESTORE;
            for (Usage usage : wanted) {
                Path target = Path.of(usage.targetPath());
                MountCheck.Result targetFound = mountCheck.check(target, table);
                boolean intact = targetFound.damage() == MountDamage.NONE && usage.state() == PublishState.PUBLISHED;
                if (intact && !(heal && staged > 0)) {
                    continue;
                }
                // damage where the record says mounted (a target this pass unpublished itself is no damage)
                if (targetFound.damage() == MountDamage.CORRUPTED || (targetFound.damage() != MountDamage.NONE
                        && usage.state() == PublishState.PUBLISHED)) {
                    repairs.add(new Repair("target", usage.allocationId(), targetFound));
                }
                try {
                    if (targetFound.damage() == MountDamage.CORRUPTED) {
                        // unmount first, through the plugin that made the mount; recorded as uncertain before
                        usage = usage.withState(PublishState.PUBLISHING);
                        save(records.get(key).withUsage(usage));
                        plugin.unpublish(record.externalVolumeId(), paths.requireNoLinks(target));
                    }
                    paths.ensureTargetParent(target);
                    paths.requireNoLinks(target);
                    plugin.publish(request(record, usage, open(record, usage.sealed()), staging, target));
                    record = save(records.get(key).withUsage(usage.withState(PublishState.PUBLISHED)));
                    published++;
                } catch (PluginCallFailure f) {
                    errors.add("publish for allocation " + usage.allocationId() + ": " + f.getMessage());
                }
            }
        } catch (IOException | RuntimeException e) {
            errors.add(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        return reported(record, new Convergence(key, staged, published, released, errors, repairs), cause);
    }

    /** Every outcome that did or tried something is a node event (RESTORE or HEAL). */
    private Convergence reported(VolumeRecord record, Convergence result, Cause cause) {
        if (!result.nothingToDo()) {
            emitConvergence(record, result, cause);
        }
        return result;
    }

    private void emitConvergence(VolumeRecord record, Convergence result, Cause cause) {
        Map<String, String> details = new LinkedHashMap<>();
        details.put("staged", Integer.toString(result.staged()));
        details.put("published", Integer.toString(result.published()));
        details.put("released", Integer.toString(result.released()));
        // what was found damaged, e.g. "target/alloc-1" -> "corrupted (ENOTCONN)" (bounded: the event's 64 details)
        result.repairs().stream().limit(60).forEach(r -> details.put(r.detailKey(), r.found().describe()));
        boolean ok = result.errors().isEmpty();
        events.accept(new NodeEvent(nodeId, null, cause == Cause.RESTORE ? NodeEventKind.RESTORE : NodeEventKind.HEAL,
                cause.message, record.pluginId(), record.namespace(), record.volumeId(), null, ok,
                ok ? null : String.join("; ", result.errors()), details, clock.instant()));
    }

    // ------------------------------------------------------------------ helpers

    private SecretPayload open(VolumeRecord record, SealedSecrets sealed) {
        return secrets.open(sealed, record.namespace(), record.volumeId());
    }

    private VolumeRecord recordFor(VolumeKey key, NodeCommand command) {
        VolumeRecord record = records.get(key);
        return record != null ? record : VolumeRecord.empty(key, command.pluginId(), command.externalVolumeId(),
                paths.stagingPath(key.namespace(), key.volumeId()).toString());
    }

    private static VolumeRequest request(VolumeRecord record, Usage usage, SecretPayload opened, Path staging, Path target) {
        return new VolumeRequest(record.externalVolumeId(), usage.accessMode(), usage.attachmentMode(), usage.fsType(),
                opened.mountFlags(), opened.secrets(), usage.volumeContext(), usage.publishContext(), usage.readOnly(),
                staging, target);
    }

    private VolumeRecord save(VolumeRecord record) throws IOException {
        store.save(record);
        records.put(record.key(), record);
        unsaved.remove(record.key());
        return record;
    }

    /**
     * A state reached after a plugin call, kept in memory only: the next {@link #save} of the volume (at the latest
     * {@link #remember}'s write of the command's result, before the answer is sent) writes it with what follows.
     * Only for states whose loss at a crash is safe: the record on disk then still says the step is in progress
     * (STAGING, PUBLISHING, UNPUBLISHING, UNSTAGING, or no controller publication yet), and the restart's convergence
     * repeats the idempotent call. Saves two fsyncs a checkpoint (the file and its directory).
     */
    private VolumeRecord checkpoint(VolumeRecord record) {
        records.put(record.key(), record);
        unsaved.add(record.key());
        return record;
    }

    /** How a state is kept: {@link #save} or {@link #checkpoint}. */
    @FunctionalInterface
    private interface Persist {
        VolumeRecord persist(VolumeRecord record) throws IOException;
    }

    /** Removes the target directory (and the allocation's empty parents); never a mounted or non-empty one. */
    private void removeEmptyTarget(Path target, String alloc) throws IOException {
        if (mountTable.get().isMountPoint(target)) {
            return;
        }
        removeEmptyDirectory(target);
        removeEmptyDirectory(target.getParent());
        removeEmptyDirectory(paths.allocationDir(alloc));
    }

    private void removeEmptyDirectory(Path dir) throws IOException {
        if (!paths.isUnderRoot(dir) || mountTable.get().isMountPoint(dir)) {
            return;
        }
        try {
            Files.deleteIfExists(dir);
        } catch (DirectoryNotEmptyException e) {
            LOG.fine(() -> dir + " is not empty; kept");
        }
    }

    private MountDone succeeded(NodeCommand command, String hostPath, String stagingPath) {
        return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                command.allocationId(), true, null, null, Map.of(), hostPath, stagingPath, clock.instant());
    }

    private MountDone failed(NodeCommand command, String code, String message, String hostPath, String stagingPath) {
        String text = message == null || message.isBlank() ? code : message;
        return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                command.allocationId(), false, code, text, Map.of(), hostPath, stagingPath, clock.instant());
    }

    private void emitCommandEvent(NodeCommand command, MountDone done) {
        NodeEventKind kind = switch (command.kind()) {
            case MOUNT -> NodeEventKind.MOUNT;
            case UNMOUNT -> NodeEventKind.UNMOUNT;
            case CONTROLLER_PUBLISH -> NodeEventKind.CONTROLLER_PUBLISH;
            case CONTROLLER_UNPUBLISH -> NodeEventKind.CONTROLLER_UNPUBLISH;
            case CREATE_VOLUME, DELETE_VOLUME, CREATE_SNAPSHOT, DELETE_SNAPSHOT, CONTROLLER_EXPAND, NODE_EXPAND, LIST_VOLUMES -> throw new IllegalStateException("no node event of " + command.kind());
        };
        String message = switch (command.kind()) {
            case MOUNT -> "Mount volume";
            case UNMOUNT -> "Unmount volume";
            case CONTROLLER_PUBLISH -> "Controller publish volume";
            case CONTROLLER_UNPUBLISH -> "Controller unpublish volume";
            case CREATE_VOLUME, DELETE_VOLUME, CREATE_SNAPSHOT, DELETE_SNAPSHOT, CONTROLLER_EXPAND, NODE_EXPAND, LIST_VOLUMES -> throw new IllegalStateException("no node event of " + command.kind());
        };
        Map<String, String> details = new LinkedHashMap<>();
        details.put("commandId", command.commandId());
        if (done.hostPath() != null) {
            details.put("hostPath", done.hostPath());
        }
        if (!done.succeeded()) {
            details.put("errorCode", done.errorCode());
        }
        events.accept(new NodeEvent(nodeId, null, kind, message, command.pluginId(), command.namespace(),
                command.volumeId(), command.allocationId(), done.succeeded(), done.succeeded() ? null : done.errorMessage(),
                details, clock.instant()));
    }
}
