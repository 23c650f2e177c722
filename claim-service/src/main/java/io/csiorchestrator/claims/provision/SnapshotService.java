package io.csiorchestrator.claims.provision;

import io.csiorchestrator.claims.ClaimService;
import io.csiorchestrator.claims.ClaimSettings;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.domain.ProvisionMachine;
import io.csiorchestrator.claims.domain.ProvisionMachine.Phase;
import io.csiorchestrator.claims.domain.ProvisionMachine.Snapshot;
import io.csiorchestrator.claims.domain.ProvisionMachine.Transition;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.SnapshotEntity;
import io.csiorchestrator.claims.store.SnapshotRows;
import io.csiorchestrator.claims.store.Transactions;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.ProvisionSpec;
import io.csiorchestrator.events.ProvisionedSnapshot;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * Snapshots through the services (issue 14 item 2): CSI CreateSnapshot / DeleteSnapshot through a healthy controller
 * instance's node worker, in the shape of {@link ProvisionService} and driven by the same pure {@link ProvisionMachine}
 * (CREATING -> CREATED -> DELETING -> DELETED; its Send(create-volume/delete-volume) is sent here as
 * create-snapshot/delete-snapshot, its Register marks the snapshot ready, its Deregister forgets the row). The row
 * and its command's outbox row are written in one transaction before the command leaves; a retry re-sends with the
 * same CSI name ({@code <namespace>.<id>}), which CSI makes idempotent. A snapshot not yet ready_to_use comes back as
 * SNAPSHOT_NOT_READY, retried with backoff: that is CSI's poll of CreateSnapshot. Each result (ready, failed, deleted,
 * delete failed) goes to volume-status through the outbox in the transaction that records it ({@link VolumeResults}).
 * Lock order: the source volume's row, then the snapshot's.
 */
@ApplicationScoped
public class SnapshotService {

    private static final Logger LOG = Logger.getLogger(SnapshotService.class);

    @Inject
    ClaimService claims;
    @Inject
    Outbox outbox;
    @Inject
    Plugins plugins;
    @Inject
    io.csiorchestrator.claims.Secrets secrets;
    @Inject
    ClaimSettings settings;
    @Inject
    ProvisionSettings provisionSettings;
    @Inject
    Transactions transactions;

    ProvisionMachine machine() {
        return new ProvisionMachine(provisionSettings.policy());
    }

    /** What a create or delete request found. */
    public sealed interface Outcome permits Started, Unchanged, Refused, Missing {
    }

    /** Recorded and its command written (or, for a failed create's delete, forgotten): the row after the request. */
    public record Started(SnapshotEntity snapshot) implements Outcome {
    }

    /** The same create was requested before (idempotent by name): the row as it is. */
    public record Unchanged(SnapshotEntity snapshot) implements Outcome {
    }

    /** Refused (409): why. */
    public record Refused(String reason) implements Outcome {
    }

    /** No such snapshot (404). */
    public record Missing() implements Outcome {
    }

    /** The snapshot {@code namespace/id}, or null. */
    public Uni<SnapshotEntity> find(String namespace, String id) {
        return transactions.reading(() -> SnapshotRows.find(VolumeEntity.key(namespace, id)));
    }

    /** Every snapshot of a namespace, by id. */
    public Uni<List<SnapshotEntity>> list(String namespace) {
        return transactions.reading(() -> SnapshotRows.list(namespace));
    }

    /**
     * A create request for snapshot {@code namespace/id} of the registered volume {@code namespace/sourceVolumeId}.
     * The same request again is Unchanged; another source for the same id, or an unregistered source, is refused.
     */
    public Uni<Outcome> create(String namespace, String id, String sourceVolumeId,
                                                Map<String, String> parameters, Tx tx) {
        return create(namespace, id, sourceVolumeId, parameters, Map.of(), tx);
    }

    /**
     * {@link #create(String, String, String, Map, Tx)} with CreateSnapshot's and DeleteSnapshot's {@code secrets}
     * (empty: none), sealed at once like a volume's, bound to the source volume the commands name (not compared on a
     * repeated request: sealed, they are not comparable).
     */
    public Uni<Outcome> create(String namespace, String id, String sourceVolumeId, Map<String, String> parameters,
                               Map<String, String> secretValues, Tx tx) {
        String key = VolumeEntity.key(namespace, id);
        String sourceKey = VolumeEntity.key(namespace, sourceVolumeId);
        return claims.inTransaction(tx, () -> claims.lockVolume(sourceKey).chain(volume ->
                SnapshotService.<Outcome>lockedRow(key, existing -> {
                    if (existing != null) {
                        boolean same = existing.sourceVolumeKey.equals(sourceKey)
                                && Json.map(existing.parametersJson).equals(parameters);
                        return Uni.createFrom().item(same ? new Unchanged(existing)
                                : new Refused("snapshot " + key + " exists already ("
                                + existing.phase.toLowerCase() + ") of another volume or with other parameters"));
                    }
                    if (volume == null || volume.deleting) {
                        return Uni.createFrom().<Outcome>item(new Refused(
                                "the source volume " + sourceKey + (volume == null ? " is not registered" : " is being deleted")));
                    }
                    Instant now = Instant.now();
                    SnapshotEntity s = new SnapshotEntity();
                    s.snapshotKey = key;
                    s.namespace = namespace;
                    s.snapshotId = id;
                    s.csiName = namespace + "." + id;
                    s.pluginId = volume.pluginId;
                    s.sourceVolumeKey = sourceKey;
                    s.sourceExternalId = volume.externalId;
                    s.parametersJson = Json.write(parameters);
                    s.secretKeysJson = Json.write(new java.util.TreeSet<>(secretValues.keySet()));
                    s.sealedJson = secretValues.isEmpty() ? null : secrets.sealToJson(
                            new io.csiorchestrator.events.SecretPayload(secretValues, List.of()), namespace, sourceVolumeId);
                    s.createdAt = now;
                    s.updatedAt = now;
                    Transition t = machine().create(false);
                    s.phase = t.next().phase().name();
                    s.attempt = t.next().attempt();
                    Object[] inserted = SnapshotRows.values(s);
                    return SnapshotRows.insert(s).chain(() -> apply(s, t, tx))
                            .call(() -> SnapshotRows.saveIfChanged(s, inserted)).map(x -> (Outcome) new Started(s));
                })));
    }

    /**
     * A delete request: refused while the snapshot is being created, or while a volume is being created from it
     * (a restore in flight); else DeleteSnapshot (or, for a failed create, the row dropped).
     */
    public Uni<Outcome> delete(String namespace, String id, Tx tx) {
        String key = VolumeEntity.key(namespace, id);
        return claims.inTransaction(tx, () -> sourceVolumeKey(key).chain(source -> source == null
                ? Uni.createFrom().<Outcome>item(new Missing())
                : claims.lockVolume(source).chain(volume ->
                        SnapshotService.<Outcome>lockedRow(key, s -> {
                            if (s == null) {
                                return Uni.createFrom().<Outcome>item(new Missing());
                            }
                            return restoresInFlight(s).chain(restores -> {
                                String refusal = deleteRefusal(s, restores);
                                if (refusal != null) {
                                    return Uni.createFrom().<Outcome>item(new Refused(refusal));
                                }
                                return apply(s, machine().delete(snapshot(s)), tx).map(x -> (Outcome) new Started(s));
                            });
                        }))));
    }

    /** Why a snapshot's delete is refused now, or null. */
    static String deleteRefusal(SnapshotEntity s, List<String> restores) {
        if (!restores.isEmpty()) {
            return "snapshot " + s.snapshotKey + " is being restored into " + String.join(", ", restores)
                    + "; delete it once they are created";
        }
        if (Phase.valueOf(s.phase) == Phase.CREATING) {
            return "snapshot " + s.snapshotKey + " is still being created (attempt " + s.attempt + ")";
        }
        return null;
    }

    /** The volumes being created from this snapshot now. */
    private static Uni<List<String>> restoresInFlight(SnapshotEntity s) {
        if (s.externalId == null) {
            return Uni.createFrom().item(List.of());
        }
        return SessionSql.select("SELECT volume_key FROM provisions WHERE plugin_id = $1 AND source_snapshot_id = $2"
                + " AND phase = 'CREATING' ORDER BY volume_key", s.pluginId, s.externalId)
                .map(rows -> rows.stream().map(r -> (String) r[0]).toList());
    }

    /** A create-snapshot or delete-snapshot mount-done: matched by command id; a late or repeated answer changes nothing. */
    public Uni<Void> onDone(MountDone done, Tx tx) {
        return claims.inTransaction(tx, () -> SessionSql.select("SELECT snapshot_key FROM snapshots WHERE command_id = $1",
                        done.commandId())
                .chain(keys -> {
                    if (keys.isEmpty()) {
                        LOG.debugf("%s answer %s matches no pending snapshot command", done.kind().wire(), done.commandId());
                        return Uni.createFrom().voidItem();
                    }
                    return locked((String) keys.get(0)[0], s -> {
                        if (!done.commandId().equals(s.commandId)) {
                            return Uni.createFrom().voidItem();
                        }
                        s.commandId = null;
                        s.commandDeadline = null;
                        if (!done.succeeded()) {
                            return apply(s, machine().failed(snapshot(s), done.errorCode(), done.errorMessage()), tx);
                        }
                        if (done.kind() == NodeCommandKind.CREATE_SNAPSHOT) {
                            ProvisionedSnapshot answer = done.snapshot();
                            s.externalId = answer.externalSnapshotId();
                            s.sizeBytes = answer.sizeBytes();
                        }
                        return apply(s, machine().succeeded(snapshot(s)), tx);
                    });
                }));
    }

    /** The reconciler: a snapshot whose backoff is over sends its command again (the same CSI name). */
    public Uni<Void> retryDue(String key) {
        return claims.inTransaction(() -> locked(key, s -> {
            if (s.commandId != null || s.retryAt == null || s.retryAt.isAfter(Instant.now())) {
                return Uni.createFrom().voidItem();
            }
            return apply(s, machine().retryDue(snapshot(s)), null);
        }));
    }

    /** The reconciler: a command without an answer past {@code csi.claims.command-timeout} counts as DEADLINE_EXCEEDED. */
    public Uni<Void> commandTimedOut(String key) {
        return claims.inTransaction(() -> locked(key, s -> {
            if (s.commandId == null || s.commandDeadline == null || s.commandDeadline.isAfter(Instant.now())) {
                return Uni.createFrom().voidItem();
            }
            LOG.warnf("snapshot %s: %s command %s got no answer in %s", key, s.phase, s.commandId, settings.commandTimeout());
            s.commandId = null;
            s.commandDeadline = null;
            return apply(s, machine().timedOut(snapshot(s), settings.commandTimeout()), null);
        }));
    }

    /** Locks the source volume's row, then the snapshot's, and runs {@code work} on the snapshot (if still there). */
    private Uni<Void> locked(String key, Function<SnapshotEntity, Uni<Void>> work) {
        return sourceVolumeKey(key).chain(source -> source == null ? Uni.createFrom().voidItem()
                : claims.lockVolume(source).chain(v -> SnapshotService.<Void>lockedRow(key,
                        s -> s == null ? Uni.createFrom().voidItem() : work.apply(s))));
    }

    /**
     * Runs {@code work} on the snapshot {@code key} locked (SELECT ... FOR UPDATE; null when there is none), then
     * writes the row if {@code work} changed it, in the same transaction (a row {@code work} deleted stays deleted).
     */
    private static <T> Uni<T> lockedRow(String key, Function<SnapshotEntity, Uni<T>> work) {
        return SnapshotRows.lock(key).chain(s -> {
            if (s == null) {
                return work.apply(null);
            }
            Object[] stored = SnapshotRows.values(s);
            return work.apply(s).call(() -> SnapshotRows.saveIfChanged(s, stored));
        });
    }

    /** The snapshot's source volume key, or null: read unlocked, to lock that volume's row before the snapshot's. */
    private static Uni<String> sourceVolumeKey(String key) {
        return SessionSql.select("SELECT source_volume_key FROM snapshots WHERE snapshot_key = $1", key)
                .map(rows -> rows.isEmpty() ? null : (String) rows.get(0)[0]);
    }

    private Uni<Void> apply(SnapshotEntity s, Transition t, Tx tx) {
        Instant now = Instant.now();
        Snapshot next = t.next();
        if (!next.phase().name().equals(s.phase) || next.attempt() != s.attempt) {
            LOG.infof("snapshot %s: %s -> %s (attempt %d)", s.snapshotKey, s.phase, next.phase(), next.attempt());
        }
        s.phase = next.phase().name();
        s.attempt = next.attempt();
        s.updatedAt = now;
        Uni<Void> chain = Uni.createFrom().voidItem();
        for (ProvisionMachine.Effect effect : t.effects()) {
            if (effect instanceof ProvisionMachine.Send send) {
                NodeCommandKind kind = send.kind() == NodeCommandKind.CREATE_VOLUME ? NodeCommandKind.CREATE_SNAPSHOT
                        : NodeCommandKind.DELETE_SNAPSHOT;
                chain = chain.chain(() -> send(s, kind, tx));
            } else if (effect instanceof ProvisionMachine.RetryLater r) {
                s.commandId = null;
                s.commandDeadline = null;
                s.retryAt = now.plus(r.delay());
                s.lastError = r.lastError().replace("CreateVolume", "CreateSnapshot").replace("DeleteVolume", "DeleteSnapshot");
                LOG.infof("snapshot %s: %s; retrying in %s", s.snapshotKey, s.lastError, r.delay());
            } else if (effect instanceof ProvisionMachine.Register) {
                s.retryAt = null;
                s.lastError = null;
            } else if (effect instanceof ProvisionMachine.Deregister) {
                chain = chain.chain(() -> SnapshotRows.delete(s.snapshotKey));
            } else if (effect instanceof ProvisionMachine.Report report) {
                String reason = switch (report.phase()) {
                    case CREATED -> "created by the plugin, ready to use";
                    case DELETED -> report.reason().replace(" and deregistered", "").replace("CreateVolume", "CreateSnapshot");
                    default -> report.reason().replace("CreateVolume", "CreateSnapshot").replace("DeleteVolume", "DeleteSnapshot");
                };
                // the result for schedulers (volume-status, keyed by the source volume), committed with its phase
                chain = chain.chain(() -> outbox.add(VolumeResults.of(s, report.phase(), reason), tx));
                if (report.phase() == Phase.CREATE_FAILED || report.phase() == Phase.DELETE_FAILED) {
                    s.lastError = reason;
                    s.retryAt = null;
                    LOG.warnf("snapshot %s: %s", s.snapshotKey, reason);
                } else {
                    LOG.infof("snapshot %s: %s", s.snapshotKey, report.phase());
                }
            }
        }
        return chain;
    }

    /** Writes the command of the current attempt to the outbox, to a healthy controller instance's node. */
    private Uni<Void> send(SnapshotEntity s, NodeCommandKind kind, Tx tx) {
        return plugins.facts(s.pluginId).chain(plugin -> {
            String target = pickController(plugin, s.commandNodeId);
            if (target == null) {
                return apply(s, machine().noController(snapshot(s), s.pluginId), tx);
            }
            Instant now = Instant.now();
            String volumeId = s.sourceVolumeKey.substring(s.sourceVolumeKey.indexOf('/') + 1);
            // Secrets re-sealed for the target node only (issue 20 item 4); without a sealing key for it, wait for one.
            io.csiorchestrator.events.SealedSecrets sealedForTarget;
            try {
                sealedForTarget = secrets.forNode(s.sealedJson, target, s.namespace, volumeId);
            } catch (IllegalStateException | io.csiorchestrator.events.SecretSealer.SecretUnsealException e) {
                s.commandId = null;
                s.retryAt = now.plus(provisionSettings.baseBackoff());
                s.lastError = e.getMessage();
                LOG.warnf("snapshot %s: %s", s.snapshotKey, s.lastError);
                return Uni.createFrom().voidItem();
            }
            s.commandId = s.namespace + ".snapshot." + s.snapshotId + "." + kind.wire() + "." + s.attempt + "."
                    + UUID.randomUUID().toString().substring(0, 8);
            s.commandNodeId = target;
            s.commandDeadline = now.plus(settings.commandTimeout());
            s.retryAt = null;
            boolean create = kind == NodeCommandKind.CREATE_SNAPSHOT;
            NodeCommand command = new NodeCommand(s.commandId, target, kind, s.namespace, volumeId, s.pluginId,
                    s.sourceExternalId, null, null, null, false, null, null, Map.of(), Map.of(), sealedForTarget, now)
                    .withProvision(new ProvisionSpec(s.csiName, null, null, create ? Json.map(s.parametersJson) : Map.of(),
                            Map.of(), create ? null : s.externalId, null));
            return outbox.add(command, tx);
        });
    }

    private static String pickController(PluginFacts plugin, String previous) {
        if (previous != null && plugin.healthyControllerNodes().contains(previous)) {
            return previous;
        }
        return plugin.healthyControllerNodes().isEmpty() ? null : plugin.healthyControllerNodes().get(0);
    }

    static Snapshot snapshot(SnapshotEntity s) {
        return new Snapshot(Phase.valueOf(s.phase), s.attempt, false);
    }
}
