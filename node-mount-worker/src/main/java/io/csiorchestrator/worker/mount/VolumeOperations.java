package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.csi.mount.MountView;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.ProvisionedVolume;
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
import java.nio.file.Path;
import java.time.Clock;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
 * {@link #restore(VolumeKey)} converges. The parts: {@link VolumeRecords} (the records, saved or checkpointed),
 * {@link MountSteps} (mount and unmount), {@link ControllerSteps} (the controller publication inside them),
 * {@link NodeFence} (issue 19's fences), {@link VolumeConvergence} (restore and heal), {@link ProvisionOperations}
 * (create, delete, snapshot, expand); here: a command's dispatch, its answer written into the record, the controller
 * commands of their own and the node events of commands.
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
    private final PluginDirectory plugins;
    private final SecretOpener secrets;
    private final Consumer<NodeEvent> events;
    private final Clock clock;
    private final VolumeRecords records;
    private final CommandAnswers answers;
    private final ProvisionOperations provisioning;
    private final ControllerSteps controllerSteps;
    private final MountSteps mountSteps;
    private final NodeFence fences;
    private final VolumeConvergence convergence;

    public VolumeOperations(String nodeId, WorkerPaths paths, MountRecordStore store, PluginDirectory plugins,
                            Supplier<MountTable> mountTable, SecretOpener secrets, Consumer<NodeEvent> events,
                            Clock clock) {
        this(nodeId, paths, store, plugins, mountTable, secrets, events, clock, MountCheck.system());
    }

    public VolumeOperations(String nodeId, WorkerPaths paths, MountRecordStore store, PluginDirectory plugins,
                            Supplier<MountTable> mountTable, SecretOpener secrets, Consumer<NodeEvent> events,
                            Clock clock, MountCheck mountCheck) {
        this.nodeId = nodeId;
        this.paths = paths;
        this.plugins = plugins;
        this.secrets = secrets;
        this.events = events;
        this.clock = clock;
        this.records = new VolumeRecords(store);
        this.answers = new CommandAnswers(nodeId, clock);
        // A mount step's questions (is this path mounted, read-only?) as a statx each, not a read of the whole table;
        // a table given by a test (a parsed text, not this process's) is asked as it is
        Supplier<MountView> mountView = mountTable == MountTable.READ_SELF ? MountView.probing(mountTable) : mountTable::get;
        NodeDirectories dirs = new NodeDirectories(paths, mountView);
        this.provisioning = new ProvisionOperations(nodeId, plugins, secrets, clock);
        this.controllerSteps = new ControllerSteps(nodeId, plugins, secrets, records);
        this.mountSteps = new MountSteps(nodeId, paths, records, plugins, mountView, secrets, controllerSteps, dirs,
                answers, clock);
        this.fences = new NodeFence(paths, records, plugins, mountTable, dirs);
        this.convergence = new VolumeConvergence(nodeId, paths, records, plugins, mountTable, secrets, events, clock,
                mountCheck, dirs, mountSteps);
    }

    /**
     * With fencing on (issue 19): the restore and the healer publish (and stage for) a publication fenced on a lapse
     * only while {@code valid} says the node's lease is valid; without a lease it is left as it is until then.
     */
    public void publishFencedOnlyWhile(java.util.function.BooleanSupplier valid) {
        convergence.publishFencedOnlyWhile(valid);
    }

    /**
     * With the fence guard (issue 19): before a new publication fenced on a lapse is staged or published, the guard is
     * fed the paths of the records (which hold it from step 1 of {@link MountSteps#mount} on) through {@code feed}, which answers
     * whether the guard now has them. A mount made between two of the lease thread's feeds (every poll, up to 200 ms
     * apart) and a freeze right after it was not in the guard's list: the guard then fenced everything but it, and
     * node-2 was given the volume while node-1 still had it mounted (FencingIT, freeze-worker-node-1). A guard that
     * cannot be fed refuses the mount: when in doubt, nothing is mounted.
     */
    public void feedGuardBeforeMountsWith(java.util.function.Predicate<List<String>> feed) {
        mountSteps.feedGuardBeforeMountsWith(feed);
    }

    /** Loads every record from disk; returns the problems (unreadable records set aside). */
    public List<String> load() throws IOException {
        return records.load();
    }

    public Optional<VolumeRecord> record(VolumeKey key) {
        return records.record(key);
    }

    public Map<VolumeKey, VolumeRecord> records() {
        return records.all();
    }

    /** The volumes that hold something on this node (a usage, a staging) through {@code pluginId}. */
    public List<VolumeKey> volumesOf(String pluginId) {
        return records.volumesOf(pluginId);
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
                done = answers.failed(command, INVALID_COMMAND, "command for node '" + command.nodeId()
                        + "' reached the worker of node '" + nodeId + "'", null, null);
            } else if (existing != null && !existing.pluginId().equals(command.pluginId()) && !existing.idle()) {
                done = answers.failed(command, INVALID_COMMAND, "volume " + key + " is in use on node " + nodeId
                        + " through plugin '" + existing.pluginId() + "', not '" + command.pluginId() + "'", null, null);
            } else {
                done = switch (command.kind()) {
                    case MOUNT -> mountSteps.mount(command, key);
                    case UNMOUNT -> mountSteps.unmount(command, key);
                    case CONTROLLER_PUBLISH -> controllerPublish(command, key);
                    case CONTROLLER_UNPUBLISH -> controllerUnpublish(command, key);
                    case CREATE_VOLUME, DELETE_VOLUME, CREATE_SNAPSHOT, DELETE_SNAPSHOT, CONTROLLER_EXPAND, NODE_EXPAND, LIST_VOLUMES -> throw new IllegalStateException("answered above");
                };
            }
        } catch (IllegalArgumentException e) {
            done = answers.failed(command, INVALID_COMMAND, e.getMessage(), null, null);
        } catch (UnsafePathException e) {
            LOG.warning("node " + nodeId + " refused command " + command.commandId() + " for volume " + key
                    + ": " + e.getMessage());
            done = answers.failed(command, UNSAFE_PATH, e.getMessage(), null, null);
        } catch (IOException | UncheckedIOException e) {
            done = answers.failed(command, WORKER_IO_ERROR, "node " + nodeId + " could not update its local state for volume "
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
            return answers.failed(command, INVALID_COMMAND, "command for node '" + command.nodeId()
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
            return answers.failed(command, PLUGIN_NOT_FOUND, "CSI plugin '" + record.pluginId()
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
            return answers.failed(command, failure.code(), failure.getMessage(), null, null);
        } catch (UnsafePathException e) {
            return answers.failed(command, UNSAFE_PATH, e.getMessage(), null, null);
        } catch (IOException e) {
            return answers.failed(command, WORKER_IO_ERROR, "node " + nodeId + " could not check the target path of volume "
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
        boolean carriesState = records.unsaved(key);
        try {
            records.save(record.withResult(done));
            return done;
        } catch (IOException e) {
            if (!carriesState) {
                LOG.log(Level.WARNING, "could not record the result of command " + command.commandId()
                        + "; a redelivery runs it again (idempotently)", e);
                return done;
            }
            MountDone failure = answers.failed(command, WORKER_IO_ERROR, "node " + nodeId
                    + " could not update its local state for volume " + key + ": " + e.getMessage(), null, null);
            LOG.log(Level.WARNING, "could not record the state and result of command " + command.commandId(), e);
            return failure;
        }
    }

    private MountDone controllerPublish(NodeCommand command, VolumeKey key) throws IOException {
        Optional<ControllerVolumePlugin> found = plugins.controller(command.pluginId());
        if (found.isEmpty()) {
            return answers.failed(command, PLUGIN_NOT_FOUND, "CSI plugin '" + command.pluginId()
                    + "' has no healthy controller instance on node " + nodeId, null, null);
        }
        SecretPayload opened;
        try {
            opened = secrets.open(command.sealed(), key.namespace(), key.volumeId());
        } catch (RuntimeException e) {
            return answers.failed(command, SECRETS_UNREADABLE, e.getMessage(), null, null);
        }
        VolumeRequest request = new VolumeRequest(command.externalVolumeId(), command.accessMode(),
                command.attachmentMode(), command.fsType(), opened.mountFlags(), opened.secrets(),
                command.volumeContext(), Map.of(), command.readOnly(), null, null);
        try {
            Map<String, String> context = found.get().controllerPublish(request, command.externalNodeId());
            VolumeRecord record = recordFor(key, command);
            records.checkpoint(record.withControllerPublication(command.externalNodeId(), context));
            return new MountDone(command.commandId(), nodeId, command.kind(), key.namespace(), key.volumeId(),
                    command.allocationId(), true, null, null, context, null, null, clock.instant());
        } catch (PluginCallFailure failure) {
            return answers.failed(command, failure.code(), failure.getMessage(), null, null);
        }
    }

    private MountDone controllerUnpublish(NodeCommand command, VolumeKey key) throws IOException {
        Optional<ControllerVolumePlugin> found = plugins.controller(command.pluginId());
        if (found.isEmpty()) {
            return answers.failed(command, PLUGIN_NOT_FOUND, "CSI plugin '" + command.pluginId()
                    + "' has no healthy controller instance on node " + nodeId, null, null);
        }
        SecretPayload opened;
        try {
            opened = secrets.open(command.sealed(), key.namespace(), key.volumeId());
        } catch (RuntimeException e) {
            return answers.failed(command, SECRETS_UNREADABLE, e.getMessage(), null, null);
        }
        try {
            found.get().controllerUnpublish(command.externalVolumeId(), command.externalNodeId(), opened.secrets());
            VolumeRecord record = records.get(key);
            if (record != null) {
                records.checkpoint(record.withoutControllerPublication(command.externalNodeId()));
            }
            return answers.succeeded(command, null, null);
        } catch (PluginCallFailure failure) {
            return answers.failed(command, failure.code(), failure.getMessage(), null, null);
        }
    }

    // ------------------------------------------------------------------ fence (issue 19): NodeFence

    /** {@link NodeFence#fence}. */
    public io.csiorchestrator.worker.lease.FenceReport fence(VolumeKey key, LazyUnmount lazy) {
        return fences.fence(key, lazy);
    }

    /** {@link NodeFence#applyGuardFence}. */
    public io.csiorchestrator.worker.lease.FenceReport applyGuardFence(VolumeKey key, Map<String, FenceOutcome> byPath) {
        return fences.applyGuardFence(key, byPath);
    }

    /** {@link NodeFence#markFencedReleased}. */
    public int markFencedReleased(java.util.Collection<String> publications) throws IOException {
        return fences.markFencedReleased(publications);
    }

    // -------------------------------------------------------- restore and heal: VolumeConvergence

    /** {@link VolumeConvergence#restore}. */
    public Convergence restore(VolumeKey key) {
        return convergence.restore(key);
    }

    /** {@link VolumeConvergence#heal}. */
    public Convergence heal(VolumeKey key) {
        return convergence.heal(key);
    }

    /** {@link VolumeConvergence#healDamaged}. */
    public Convergence healDamaged(VolumeKey key) {
        return convergence.healDamaged(key);
    }

    /** {@link VolumeConvergence#damaged}. */
    List<Convergence.Repair> damaged(VolumeRecord record) {
        return convergence.damaged(record);
    }

    // ------------------------------------------------------------------ helpers

    private VolumeRecord recordFor(VolumeKey key, NodeCommand command) {
        VolumeRecord record = records.get(key);
        return record != null ? record : VolumeRecord.empty(key, command.pluginId(), command.externalVolumeId(),
                paths.stagingPath(key.namespace(), key.volumeId()).toString());
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
