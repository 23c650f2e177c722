package io.csiorchestrator.claims.provision;

import io.csiorchestrator.claims.ClaimService;
import io.csiorchestrator.claims.ClaimSettings;
import io.csiorchestrator.claims.Secrets;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.claims.domain.ClaimMachine;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.domain.ProvisionMachine;
import io.csiorchestrator.claims.domain.ProvisionMachine.Phase;
import io.csiorchestrator.claims.domain.ProvisionMachine.Snapshot;
import io.csiorchestrator.claims.domain.ProvisionMachine.Transition;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.ClaimStore;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.ProvisionEntity;
import io.csiorchestrator.claims.store.ProvisionRows;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.SnapshotRows;
import io.csiorchestrator.claims.store.Transactions;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.claims.store.VolumeRows;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.ProvisionSpec;
import io.csiorchestrator.events.ProvisionedVolume;
import io.csiorchestrator.events.VolumeExpansionMode;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * Carries out {@link ProvisionMachine} transitions against PostgreSQL (issue 14): one transaction per input (a create
 * or delete request, a create-volume / delete-volume mount-done, a due retry, a command timeout). The provision row
 * and the outbox row of its command are written together, before the command leaves; the volume is registered in
 * the transaction that records the plugin's answer and deregistered in the one that records the delete; each result
 * (created, create failed, deleted, delete failed, expanded, expand failed) goes to volume-status through the outbox
 * in that same transaction ({@link VolumeResults}). A claim that becomes ready on a node behind the volume's node
 * expansion gets NodeExpandVolume there ({@link #claimReady}, in the claim's transaction). Lock order
 * as in {@link ClaimService}: the volume row first (when there is one), then the provision row.
 */
@ApplicationScoped
public class ProvisionService {

    private static final Logger LOG = Logger.getLogger(ProvisionService.class);

    @Inject
    ClaimService claims;
    @Inject
    Outbox outbox;
    @Inject
    Plugins plugins;
    @Inject
    Secrets secrets;
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
    public sealed interface Outcome permits Started, Unchanged, Refused, Missing, Invalid {
    }

    /** Refused as a bad request (400): the field and value at fault, and why. */
    public record Invalid(String field, String value, String reason) implements Outcome {
    }

    /** Created a provision (or a delete of one): its row after the request. */
    public record Started(ProvisionEntity provision) implements Outcome {
    }

    /** The same create was requested before (idempotent by name): the row as it is. */
    public record Unchanged(ProvisionEntity provision) implements Outcome {
    }

    /** Refused (409): why. */
    public record Refused(String reason) implements Outcome {
    }

    /** No such provision (404). */
    public record Missing() implements Outcome {
    }

    /** The provision of a volume, or null. */
    public Uni<ProvisionEntity> find(String namespace, String id) {
        return transactions.reading(() -> ProvisionRows.find(VolumeEntity.key(namespace, id)));
    }

    /**
     * A create request: {@code request} is the provision row to be (phase and command unset). The same request
     * again is {@link Unchanged}; another request for the same volume, or a volume registered by hand, is refused.
     */
    public Uni<Outcome> create(ProvisionEntity request, Tx tx) {
        return create(request, null, tx);
    }

    /**
     * {@link #create(ProvisionEntity, Tx)} of a clone: {@code sourceVolumeId} (nullable) names a registered volume of
     * the same namespace whose plugin id is the clone's content source (CSI CLONE_VOLUME).
     */
    public Uni<Outcome> create(ProvisionEntity request, String sourceVolumeId, Tx tx) {
        return create(request, sourceVolumeId, null, tx);
    }

    /**
     * {@link #create(ProvisionEntity, String, Tx)} or a restore: {@code sourceSnapshotId} (nullable) names a snapshot
     * of the same namespace and plugin, created through the services and ready (its plugin id becomes the content
     * source). While this create is in progress, the snapshot's delete is refused ({@link SnapshotService}).
     */
    public Uni<Outcome> create(ProvisionEntity request, String sourceVolumeId, String sourceSnapshotId, Tx tx) {
        if (sourceSnapshotId != null) {
            String snapKey = VolumeEntity.key(request.namespace, sourceSnapshotId);
            return transactions.reading(() -> SnapshotRows.find(snapKey)).chain(snap -> {
                if (snap == null || !snap.pluginId.equals(request.pluginId) || !Phase.CREATED.name().equals(snap.phase)) {
                    return Uni.createFrom().<Outcome>item(new Refused("the source snapshot " + snapKey + (snap == null
                            ? " does not exist" : !snap.pluginId.equals(request.pluginId) ? " is of plugin " + snap.pluginId
                            : " is not ready (" + snap.phase.toLowerCase() + ")")));
                }
                request.sourceSnapshotId = snap.externalId;
                return createResolved(request, tx);
            });
        }
        if (sourceVolumeId == null) {
            return createResolved(request, tx);
        }
        String sourceKey = VolumeEntity.key(request.namespace, sourceVolumeId);
        return transactions.reading(() -> VolumeRows.find(sourceKey)).chain(source -> {
            if (source == null || !source.pluginId.equals(request.pluginId)) {
                return Uni.createFrom().<Outcome>item(new Refused("the source volume " + sourceKey + " is not registered"
                        + (source == null ? "" : " with plugin " + request.pluginId)));
            }
            request.sourceVolumeId = source.externalId;
            return createResolved(request, tx);
        });
    }

    private Uni<Outcome> createResolved(ProvisionEntity request, Tx tx) {
        return claims.inTransaction(tx, () -> claims.lockVolume(request.volumeKey).chain(volume ->
                ProvisionService.<Outcome>locked(request.volumeKey, existing -> {
                    if (existing != null) {
                        return Uni.createFrom().item(sameRequest(existing, request) ? new Unchanged(existing)
                                : new Refused("volume " + request.volumeKey + " is already provisioned (" + existing.phase.toLowerCase()
                                + ") with another spec; delete it first"));
                    }
                    if (volume != null) {
                        return Uni.createFrom().<Outcome>item(new Refused("volume " + request.volumeKey
                                + " is already registered (not created through the services)"));
                    }
                    Instant now = Instant.now();
                    request.createdAt = now;
                    request.updatedAt = now;
                    Transition t = machine().create(request.sourceSnapshotId != null || request.sourceVolumeId != null);
                    request.phase = t.next().phase().name();
                    request.attempt = t.next().attempt();
                    Object[] inserted = ProvisionRows.values(request);
                    return ProvisionRows.insert(request).chain(() -> apply(request, null, t, tx))
                            .call(() -> ProvisionRows.saveIfChanged(request, inserted)).map(x -> (Outcome) new Started(request));
                })));
    }

    /** A delete request: refused while the volume is claimed or being created; else DeleteVolume (or the record dropped). */
    public Uni<Outcome> delete(String namespace, String id, Tx tx) {
        String key = VolumeEntity.key(namespace, id);
        return claims.inTransaction(tx, () -> claims.lockVolume(key).chain(volume ->
                ProvisionService.<Outcome>locked(key, p -> {
                    if (p == null) {
                        return Uni.createFrom().<Outcome>item(new Missing());
                    }
                    return ClaimService.activeClaims(key).chain(active -> {
                        String refusal = ProvisionMachine.deleteRefusal(snapshot(p), key,
                                active.stream().map(c -> c.allocationId).toList());
                        if (refusal != null) {
                            return Uni.createFrom().<Outcome>item(new Refused(refusal));
                        }
                        if (volume != null) {
                            volume.deleting = true; // new claims are rejected from now on
                            volume.updatedAt = Instant.now();
                        }
                        return apply(p, volume, machine().delete(snapshot(p)), tx).map(x -> (Outcome) new Started(p));
                    });
                })));
    }

    /**
     * An expansion request (issue 14 item 3) to {@code bytes}: refused (400) for a capacity below the volume's or a
     * plugin without EXPAND_VOLUME, refused (409) while a create, delete or another expansion is in progress;
     * {@link Unchanged} when the volume already has that capacity; refused (409) when the plugin expands offline only
     * (VolumeExpansion OFFLINE in its plugin-status) and the volume has claims; else EXPANDING with
     * ControllerExpandVolume to a healthy controller instance's node, in the transaction that records the request.
     */
    public Uni<Outcome> expand(String namespace, String id, long bytes, Tx tx) {
        String key = VolumeEntity.key(namespace, id);
        return claims.inTransaction(tx, () -> claims.lockVolume(key).chain(volume ->
                ProvisionService.<Outcome>locked(key, p -> {
                    if (p == null) {
                        return Uni.createFrom().<Outcome>item(new Missing());
                    }
                    return plugins.status(p.pluginId).chain(status -> {
                        boolean expands = status != null && Boolean.TRUE.equals(status.controllerExpansion());
                        Snapshot s = snapshot(p);
                        ProvisionMachine.ExpandRefusal refusal = ProvisionMachine.expandRefusal(s, key, p.pluginId,
                                expands, p.capacityBytes, bytes);
                        if (refusal != null) {
                            return Uni.createFrom().<Outcome>item(refusal.conflict() ? new Refused(refusal.reason())
                                    : new Invalid(refusal.field(), refusal.value(), refusal.reason()));
                        }
                        if (ProvisionMachine.alreadyExpanded(s, p.capacityBytes, bytes)) {
                            return Uni.createFrom().<Outcome>item(new Unchanged(p));
                        }
                        boolean offlineOnly = status != null && status.volumeExpansion() == VolumeExpansionMode.OFFLINE;
                        return ClaimService.activeClaims(key).chain(active -> {
                            ProvisionMachine.ExpandRefusal offline = ProvisionMachine.offlineRefusal(key, p.pluginId,
                                    offlineOnly, active.stream().map(c -> c.allocationId + " on node " + c.nodeId).toList());
                            if (offline != null) {
                                return Uni.createFrom().<Outcome>item(new Refused(offline.reason()));
                            }
                            p.expandToBytes = bytes;
                            p.lastError = null;
                            return apply(p, volume, machine().expand(s), tx).map(x -> (Outcome) new Started(p));
                        });
                    });
                })));
    }

    /** A create-volume or delete-volume mount-done: matched by command id; a late or repeated answer changes nothing. */
    public Uni<Void> onDone(MountDone done, Tx tx) {
        return claims.inTransaction(tx, () -> SessionSql.select("SELECT volume_key FROM provisions WHERE command_id = $1",
                        done.commandId())
                .chain(keys -> {
                    if (keys.isEmpty()) {
                        LOG.debugf("%s answer %s matches no pending provision command", done.kind().wire(), done.commandId());
                        return Uni.createFrom().voidItem();
                    }
                    String key = (String) keys.get(0)[0];
                    return claims.lockVolume(key).chain(volume -> ProvisionService.<Void>locked(key, p -> {
                                if (p == null || !done.commandId().equals(p.commandId)) {
                                    return Uni.createFrom().voidItem();
                                }
                                p.commandId = null;
                                p.commandDeadline = null;
                                if (!done.succeeded()) {
                                    return apply(p, volume, machine().failed(snapshot(p), done.errorCode(), done.errorMessage()), tx);
                                }
                                if (done.kind() == NodeCommandKind.CONTROLLER_EXPAND) {
                                    ProvisionedVolume v = done.provisioned();
                                    long reported = v == null || v.capacityBytes() == null ? 0 : v.capacityBytes();
                                    p.capacityBytes = reported > 0 ? reported : p.expandToBytes;
                                    boolean nodesToo = v != null && v.requiresNodeExpansion();
                                    // every node where the volume is published must reach the new capacity: those
                                    // with a ready claim now; a claim that becomes ready later is expanded then
                                    p.nodeExpandBytes = nodesToo ? p.capacityBytes : null;
                                    return ClaimService.activeClaims(key).chain(active -> apply(p, volume,
                                            machine().controllerExpanded(snapshot(p), nodesToo, nodesBehind(p, active)), tx));
                                }
                                if (done.kind() == NodeCommandKind.NODE_EXPAND && done.provisioned() != null) {
                                    // the worker called NodeExpandVolume (it answers without provisioned when the
                                    // volume was not published there: nothing was expanded on that node)
                                    Long reported = done.provisioned().capacityBytes();
                                    long reached = reported != null && reported > 0 ? reported
                                            : p.nodeExpandBytes != null ? p.nodeExpandBytes : 0;
                                    java.util.TreeMap<String, Long> sizes = Json.longs(p.nodeSizesJson);
                                    sizes.merge(done.nodeId(), reached, Math::max);
                                    p.nodeSizesJson = Json.write(sizes);
                                }
                                if (done.kind() == NodeCommandKind.CREATE_VOLUME) {
                                    ProvisionedVolume v = done.provisioned();
                                    p.externalId = v.externalVolumeId();
                                    p.capacityBytes = v.capacityBytes();
                                    p.contextJson = Json.write(v.volumeContext());
                                    p.accessibleTopologyJson = Json.write(v.accessibleTopology());
                                }
                                return apply(p, volume, machine().succeeded(snapshot(p)), tx);
                            }));
                }));
    }

    /** The reconciler: a provision whose backoff is over sends its command again (the same CSI name). */
    public Uni<Void> retryDue(String volumeKey) {
        return claims.inTransaction(() -> claims.lockVolume(volumeKey).chain(volume -> ProvisionService.<Void>locked(
                volumeKey, p -> {
                    if (p == null || p.commandId != null || p.retryAt == null || p.retryAt.isAfter(Instant.now())) {
                        return Uni.createFrom().voidItem();
                    }
                    return apply(p, volume, machine().retryDue(snapshot(p)), null);
                })));
    }

    /**
     * Resize on mount (issue 14): a claim of volume {@code volume} became ready on {@code nodeId}, in the claim's
     * transaction (the volume row locked). When the volume was created through the services, the plugin asked nodes
     * to expand it (its last ControllerExpandVolume answered node_expansion_required) and this node's NodeExpandVolume
     * has not reached that capacity, the node is expanded too ({@link ProvisionMachine#claimReady}).
     */
    public Uni<Void> claimReady(VolumeEntity volume, String nodeId, Tx tx) {
        if (volume == null || nodeId == null) {
            return Uni.createFrom().voidItem();
        }
        // A plain read of the two columns first: the volume row is locked, and every writer of a provision locks it
        // first, so these are the values until the commit. The whole provision is read, locked, only when this node
        // owes a NodeExpandVolume (issue 36: most volumes have no provision row, most ready claims owe nothing).
        return SessionSql.select("SELECT node_expand_bytes, node_sizes_json FROM provisions WHERE volume_key = $1",
                volume.volumeKey).chain(rows -> rows.isEmpty()
                        || !nodeBehind((Long) rows.get(0)[0], (String) rows.get(0)[1], nodeId)
                        ? Uni.createFrom().voidItem()
                        : expandOnReady(volume, nodeId, tx));
    }

    private Uni<Void> expandOnReady(VolumeEntity volume, String nodeId, Tx tx) {
        return ProvisionService.<Void>locked(volume.volumeKey, p -> {
            if (p == null || !nodeBehind(p, nodeId)) {
                return Uni.createFrom().voidItem();
            }
            Transition t = machine().claimReady(snapshot(p), nodeId);
            if (t.next().equals(snapshot(p))) {
                return Uni.createFrom().voidItem();
            }
            LOG.infof("provision %s: a claim became ready on node %s, whose node expansion is behind %d bytes: %s",
                    p.volumeKey, nodeId, p.nodeExpandBytes, t.effects().isEmpty() ? "queued after the nodes in progress"
                            : "NodeExpandVolume there (resize on mount)");
            return apply(p, volume, t, tx);
        });
    }

    /** Whether {@code node} owes a NodeExpandVolume: the plugin asked nodes to expand and this one is behind. */
    static boolean nodeBehind(ProvisionEntity p, String node) {
        return nodeBehind(p.nodeExpandBytes, p.nodeSizesJson, node);
    }

    private static boolean nodeBehind(Long nodeExpandBytes, String nodeSizesJson, String node) {
        return nodeExpandBytes != null && Json.longs(nodeSizesJson).getOrDefault(node, 0L) < nodeExpandBytes;
    }

    /** The nodes of the ready claims among {@code active} that owe a NodeExpandVolume. */
    static List<String> nodesBehind(ProvisionEntity p, List<ClaimEntity> active) {
        return active.stream().filter(c -> c.phase == ClaimMachine.Phase.READY).map(c -> c.nodeId)
                .filter(Objects::nonNull).distinct().filter(n -> nodeBehind(p, n)).toList();
    }

    /** The reconciler: a command without an answer past {@code csi.claims.command-timeout} counts as DEADLINE_EXCEEDED. */
    public Uni<Void> commandTimedOut(String volumeKey) {
        return claims.inTransaction(() -> claims.lockVolume(volumeKey).chain(volume -> ProvisionService.<Void>locked(
                volumeKey, p -> {
                    if (p == null || p.commandId == null || p.commandDeadline == null || p.commandDeadline.isAfter(Instant.now())) {
                        return Uni.createFrom().voidItem();
                    }
                    LOG.warnf("provision %s: %s command %s got no answer in %s", volumeKey, p.phase, p.commandId,
                            settings.commandTimeout());
                    p.commandId = null;
                    p.commandDeadline = null;
                    return apply(p, volume, machine().timedOut(snapshot(p), settings.commandTimeout()), null);
                })));
    }

    /**
     * Runs {@code work} on the provision of {@code key} locked (SELECT ... FOR UPDATE; null when there is none), then
     * writes the row if {@code work} changed it, in the same transaction: every change a step makes to the provision
     * (its transition's, its effects') is written there, once, before the next step of the transaction reads it.
     */
    private static <T> Uni<T> locked(String key, Function<ProvisionEntity, Uni<T>> work) {
        return ProvisionRows.lock(key).chain(p -> {
            if (p == null) {
                return work.apply(null);
            }
            Object[] stored = ProvisionRows.values(p);
            return work.apply(p).call(() -> ProvisionRows.saveIfChanged(p, stored));
        });
    }

    // ------------------------------------------------------------------ effects

    private Uni<Void> apply(ProvisionEntity p, VolumeEntity volume, Transition t, Tx tx) {
        Instant now = Instant.now();
        Snapshot s = t.next();
        if (!s.phase().name().equals(p.phase) || s.attempt() != p.attempt) {
            LOG.infof("provision %s: %s -> %s (attempt %d)", p.volumeKey, p.phase, s.phase(), s.attempt());
        }
        p.phase = s.phase().name();
        p.attempt = s.attempt();
        p.expandNodesJson = Json.write(s.expandNodes());
        p.nodeExpandOnMount = s.onMount();
        p.updatedAt = now;
        Uni<Void> chain = Uni.createFrom().voidItem();
        for (ProvisionMachine.Effect effect : t.effects()) {
            if (effect instanceof ProvisionMachine.Send send) {
                chain = chain.chain(() -> send(p, volume, send.kind(), tx));
            } else if (effect instanceof ProvisionMachine.RetryLater r) {
                p.commandId = null;
                p.commandDeadline = null;
                p.retryAt = now.plus(r.delay());
                p.lastError = r.lastError();
                LOG.infof("provision %s: %s; retrying in %s", p.volumeKey, r.lastError(), r.delay());
            } else if (effect instanceof ProvisionMachine.Register) {
                p.retryAt = null;
                p.lastError = null;
                chain = chain.chain(() -> register(p, volume));
            } else if (effect instanceof ProvisionMachine.Deregister) {
                chain = chain.chain(() -> deregister(p, volume));
            } else if (effect instanceof ProvisionMachine.Report report) {
                // the result for schedulers (volume-status), committed with the phase it reports: a create's or
                // delete's, or an expansion's end (expanded, expand-failed)
                chain = chain.chain(() -> outbox.add(report.expansion()
                        ? VolumeResults.expansion(p, report.phase(), report.reason())
                        : VolumeResults.of(p, report.phase(), report.reason()), tx));
                if (report.phase() == Phase.CREATED && report.expansion()) {
                    p.retryAt = null;
                    p.lastError = null;
                    LOG.infof("provision %s: %s (%d bytes)", p.volumeKey, report.reason(), p.capacityBytes);
                } else if (report.phase() == Phase.CREATE_FAILED || report.phase() == Phase.DELETE_FAILED
                        || report.phase() == Phase.EXPAND_FAILED) {
                    p.lastError = report.reason();
                    p.retryAt = null;
                    LOG.warnf("provision %s: %s", p.volumeKey, report.reason());
                    if (report.phase() == Phase.DELETE_FAILED && volume != null) {
                        volume.deleting = false; // the volume stays usable; the operator may delete again
                    }
                } else {
                    LOG.infof("provision %s: %s", p.volumeKey, report.reason());
                }
            }
        }
        return chain;
    }

    /**
     * Writes the command of the current attempt to the outbox: to a healthy controller instance's node, or, for a
     * node-expand-volume, to the node whose turn it is.
     */
    private Uni<Void> send(ProvisionEntity p, VolumeEntity volume, NodeCommandKind kind, Tx tx) {
        return plugins.facts(p.pluginId).chain(plugin -> {
            String target = kind == NodeCommandKind.NODE_EXPAND ? snapshot(p).expandNode() : pickController(plugin, p.commandNodeId);
            if (target == null) {
                return apply(p, volume, machine().noController(snapshot(p), p.pluginId), tx);
            }
            Instant now = Instant.now();
            // Secrets re-sealed for the target node only (issue 20 item 4); without a sealing key for it, wait for one.
            io.csiorchestrator.events.SealedSecrets sealedForTarget;
            try {
                sealedForTarget = secrets.forNode(p.sealedJson, target, p.namespace, p.volumeId);
            } catch (IllegalStateException | io.csiorchestrator.events.SecretSealer.SecretUnsealException e) {
                p.commandId = null;
                p.retryAt = now.plus(provisionSettings.baseBackoff());
                p.lastError = e.getMessage();
                LOG.warnf("provision %s: %s", p.volumeKey, p.lastError);
                return Uni.createFrom().voidItem();
            }
            p.commandId = p.namespace + "." + p.volumeId + "." + kind.wire() + "." + p.attempt + "."
                    + UUID.randomUUID().toString().substring(0, 8);
            p.commandNodeId = target;
            p.commandDeadline = now.plus(settings.commandTimeout());
            p.retryAt = null;
            boolean create = kind == NodeCommandKind.CREATE_VOLUME;
            NodeCommand command = new NodeCommand(p.commandId, target, kind, p.namespace, p.volumeId, p.pluginId,
                    create ? null : p.externalId, null,
                    create ? AccessMode.fromWire(p.accessMode) : null, create ? AttachmentMode.fromWire(p.attachmentMode) : null,
                    false, create ? p.fsType : null, null, Map.of(), Map.of(), sealedForTarget, now);
            if (kind.expanding()) {
                // the new capacity, no limit: the volume's create-time capacityMax does not bound an expansion; a
                // node expands to the capacity the controller reported when it asked for node expansion
                long bytes = kind == NodeCommandKind.NODE_EXPAND && p.nodeExpandBytes != null ? p.nodeExpandBytes
                        : p.expandToBytes != null ? p.expandToBytes : p.capacityBytes;
                command = command.withProvision(new ProvisionSpec(p.csiName, bytes, null, Map.of(), Map.of(),
                        null, null));
            } else if (create) {
                command = command.withProvision(new ProvisionSpec(p.csiName, p.capacityMinBytes, p.capacityMaxBytes,
                        Json.map(p.parametersJson), Json.map(p.topologyJson), p.sourceSnapshotId, p.sourceVolumeId));
            }
            return outbox.add(command, tx);
        });
    }

    private static String pickController(PluginFacts plugin, String previous) {
        if (previous != null && plugin.healthyControllerNodes().contains(previous)) {
            return previous;
        }
        return plugin.healthyControllerNodes().isEmpty() ? null : plugin.healthyControllerNodes().get(0);
    }

    /** The created volume becomes a registered one, claimable like any other. */
    private Uni<Void> register(ProvisionEntity p, VolumeEntity existing) {
        if (existing != null) {
            LOG.warnf("provision %s: a volume with this key was registered meanwhile; not replaced", p.volumeKey);
            return Uni.createFrom().voidItem();
        }
        Instant now = Instant.now();
        VolumeEntity v = new VolumeEntity();
        v.volumeKey = p.volumeKey;
        v.namespace = p.namespace;
        v.id = p.volumeId;
        v.name = p.name;
        v.externalId = p.externalId;
        v.pluginId = p.pluginId;
        v.accessMode = p.accessMode;
        v.attachmentMode = p.attachmentMode;
        v.failover = p.failover;
        v.fsType = p.fsType;
        v.mountFlagCount = p.mountFlagCount;
        v.parametersJson = p.parametersJson;
        v.contextJson = p.contextJson == null ? "{}" : p.contextJson;
        v.topologyJson = Json.write(Topologies.claimable(Json.map(p.topologyJson), Topologies.read(p.accessibleTopologyJson)));
        v.secretKeysJson = p.secretKeysJson;
        v.sealedJson = p.sealedJson;
        v.createdAt = now;
        v.updatedAt = now;
        ClaimStore.current().insert(v);
        return Uni.createFrom().voidItem();
    }

    /**
     * The deleted volume is deregistered (with its past claims) and its provision forgotten: its row deleted now (the
     * write of the step's changes, {@link #locked}, then finds no row).
     */
    private Uni<Void> deregister(ProvisionEntity p, VolumeEntity volume) {
        Uni<Void> volumeGone = volume == null ? Uni.createFrom().voidItem()
                : ClaimStore.current().deleteVolume(volume);
        return volumeGone.chain(() -> ProvisionRows.delete(p.volumeKey));
    }

    static Snapshot snapshot(ProvisionEntity p) {
        return new Snapshot(Phase.valueOf(p.phase), p.attempt, p.sourceSnapshotId != null || p.sourceVolumeId != null,
                Json.list(p.expandNodesJson), p.nodeExpandOnMount);
    }

    /** Whether {@code b} asks for what {@code a} was created with (the secrets aside: sealed, not comparable). */
    static boolean sameRequest(ProvisionEntity a, ProvisionEntity b) {
        return Objects.equals(a.pluginId, b.pluginId) && Objects.equals(a.accessMode, b.accessMode)
                && Objects.equals(a.attachmentMode, b.attachmentMode) && Objects.equals(a.capacityMinBytes, b.capacityMinBytes)
                && Objects.equals(a.capacityMaxBytes, b.capacityMaxBytes) && Objects.equals(a.sourceSnapshotId, b.sourceSnapshotId)
                && Objects.equals(a.sourceVolumeId, b.sourceVolumeId)
                && Json.map(a.parametersJson).equals(Json.map(b.parametersJson))
                && Json.map(a.topologyJson).equals(Json.map(b.topologyJson));
    }

    /** Topology helpers: what the registered volume's single topology map is. */
    static final class Topologies {
        private Topologies() {
        }

        static List<Map<String, String>> read(String json) {
            if (json == null || json.isBlank()) {
                return List.of();
            }
            try {
                return io.csiorchestrator.events.EventCodec.mapper().readValue(json,
                        new com.fasterxml.jackson.core.type.TypeReference<List<Map<String, String>>>() { });
            } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
                throw new IllegalStateException("stored accessible topology is unreadable", e);
            }
        }

        /**
         * The requested segment when one was asked for; else the plugin's one accessible segment; else none (several
         * segments: accessible from any of them, which the single map of a registration cannot say).
         */
        static Map<String, String> claimable(Map<String, String> requested, List<Map<String, String>> accessible) {
            if (!requested.isEmpty()) {
                return requested;
            }
            return accessible.size() == 1 ? accessible.get(0) : Map.of();
        }
    }
}
