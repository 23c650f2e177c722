package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.worker.mount.Convergence.Repair;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Restore and heal: brings a volume back to what its record says, after a worker restart ({@link #restore}), after its
 * node plugin restarted ({@link #heal}), or when the healer finds a staging or target damaged ({@link #healDamaged},
 * {@link MountCheck}); interrupted releases are finished first. Every outcome that did or tried something is a node
 * event.
 */
final class VolumeConvergence {

    private final String nodeId;
    private final WorkerPaths paths;
    private final VolumeRecords records;
    private final PluginDirectory plugins;
    private final Supplier<MountTable> mountTable;
    private final SecretOpener secrets;
    private final Consumer<NodeEvent> events;
    private final Clock clock;
    private final MountCheck mountCheck;
    private final NodeDirectories dirs;
    private final MountSteps mountSteps;
    private volatile java.util.function.BooleanSupplier leaseValid = () -> true;

    VolumeConvergence(String nodeId, WorkerPaths paths, VolumeRecords records, PluginDirectory plugins,
                      Supplier<MountTable> mountTable, SecretOpener secrets, Consumer<NodeEvent> events, Clock clock,
                      MountCheck mountCheck, NodeDirectories dirs, MountSteps mountSteps) {
        this.nodeId = nodeId;
        this.paths = paths;
        this.records = records;
        this.plugins = plugins;
        this.mountTable = mountTable;
        this.secrets = secrets;
        this.events = events;
        this.clock = clock;
        this.mountCheck = mountCheck;
        this.dirs = dirs;
        this.mountSteps = mountSteps;
    }

    /** {@link VolumeOperations#publishFencedOnlyWhile}. */
    void publishFencedOnlyWhile(java.util.function.BooleanSupplier valid) {
        this.leaseValid = valid;
    }

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
                        dirs.removeEmptyTarget(Path.of(usage.targetPath()), usage.allocationId());
                        record = records.save(records.get(key).withoutUsage(usage.allocationId()));
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
                        mountSteps.finishUnstageIfUnused(key, plugin, records::save);
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
                            records.save(records.get(key).withUsage(usage.withState(PublishState.PUBLISHING)));
                            plugin.unpublish(record.externalVolumeId(), paths.requireNoLinks(Path.of(usage.targetPath())));
                        }
                        record = records.save(records.get(key).withStage(StageState.STAGING));
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
                    record = records.save(record.withStage(StageState.STAGING));
                    plugin.stage(MountSteps.request(record, first, open(record, first.sealed()), staging,
                            Path.of(first.targetPath())));
                    record = records.save(records.get(key).withStage(StageState.STAGED));
                    staged++;
                } catch (PluginCallFailure f) {
                    errors.add("stage: " + f.getMessage());
                    return reported(record, new Convergence(key, staged, published, released, errors, repairs), cause);
                }
            } else if (plugin.requiresStaging() && record.stage() != StageState.STAGED) {
                record = records.save(record.withStage(StageState.STAGED));
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
                        records.save(records.get(key).withUsage(usage));
                        plugin.unpublish(record.externalVolumeId(), paths.requireNoLinks(target));
                    }
                    paths.ensureTargetParent(target);
                    paths.requireNoLinks(target);
                    plugin.publish(MountSteps.request(record, usage, open(record, usage.sealed()), staging, target));
                    record = records.save(records.get(key).withUsage(usage.withState(PublishState.PUBLISHED)));
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

    private boolean mayPublish(Usage usage) {
        return !usage.fencesOnLapse() || leaseValid.getAsBoolean();
    }

    private SecretPayload open(VolumeRecord record, SealedSecrets sealed) {
        return secrets.open(sealed, record.namespace(), record.volumeId());
    }
}
