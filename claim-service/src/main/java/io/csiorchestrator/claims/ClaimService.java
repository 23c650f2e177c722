package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimMachine.Snapshot;
import io.csiorchestrator.claims.domain.ClaimMachine.Transition;
import io.csiorchestrator.claims.domain.ClaimRules;
import io.csiorchestrator.claims.domain.ClaimRules.HeldClaim;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.domain.ClaimRules.VolumeFacts;
import io.csiorchestrator.claims.domain.Failover;
import io.csiorchestrator.claims.domain.LeaseBook;
import io.csiorchestrator.claims.domain.StorageFence;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.claims.outbox.OutboxRelay;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.VolumeConditionEntity;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.MountOptions;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;
import io.csiorchestrator.events.Violations;
import io.quarkus.hibernate.reactive.panache.Panache;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.persistence.LockModeType;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * Carries out claim decisions and claim state transitions against PostgreSQL. Each public method is
 * one transaction: the volume row is locked first (SELECT ... FOR UPDATE), so claim-requested
 * (partitioned by volume) and mount-done (partitioned by node) updates of one volume are
 * serialised; the claim's new checkpoint and the events it causes (claim-status, node-commands)
 * are written to the outbox in the same transaction; the relay publishes them after the commit. The
 * {@code *Step} methods are the same work inside the caller's transaction: {@code messaging.RecordBatches}
 * runs a poll's steps in one ({@link #inOneTransaction}), their volumes locked up front in key order
 * ({@link #lockVolumes}, {@link #lockVolumesOfCommands}).
 */
@ApplicationScoped
public class ClaimService {

    private static final Logger LOG = Logger.getLogger(ClaimService.class);

    @Inject
    ReconcileSchedule reconcileSchedule;
    @Inject
    Outbox outbox;
    @Inject
    OutboxRelay relay;
    @Inject
    Plugins plugins;
    @Inject
    Secrets secrets;
    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;
    @Inject
    Fencing fencing;
    /** The placement topic (issue 34): told after commit when a claim on a node begins or ends, or a plugin changes. */
    @Inject
    io.csiorchestrator.claims.placement.PlacementPublisher placement;
    /** Resize on mount (issue 14): looked up lazily, the provisions depend on this service too. */
    @Inject
    jakarta.enterprise.inject.Instance<io.csiorchestrator.claims.provision.ProvisionService> provisions;

    ClaimMachine machine() {
        return new ClaimMachine(settings.policy());
    }

    /** Runs {@code work} in a transaction without a traced cause and signals the relay once it committed. */
    public <T> Uni<T> inTransaction(Supplier<Uni<T>> work) {
        return inTransaction(Tx.untraced(), work);
    }

    /**
     * Runs {@code work} in a transaction caused by {@code tx}'s input; once it committed, signals the relay
     * and records the transaction's observations (latency timers, decision counters).
     */
    public <T> Uni<T> inTransaction(Tx tx, Supplier<Uni<T>> work) {
        return Panache.withTransaction(work).invoke(() -> {
            relay.signal();
            tx.committed();
        }).onFailure().invoke(tx::rolledBack);
    }

    /**
     * Runs {@code work} (the steps of several inputs, {@code txs} theirs) in one transaction; once it committed, signals
     * the relay once and records every input's observations; when it fails, none of them (a retry records them anew).
     */
    public Uni<Void> inOneTransaction(List<Tx> txs, Supplier<Uni<Void>> work) {
        return Panache.withTransaction(work).invoke(() -> {
            relay.signal();
            txs.forEach(Tx::committed);
        }).onFailure().invoke(() -> txs.forEach(Tx::rolledBack));
    }

    /** Runs {@code observation} when the claim's transaction commits (at once when the claim has none). */
    private static void observe(ClaimEntity claim, Runnable observation) {
        if (claim.tx != null) {
            claim.tx.afterCommit(observation);
        } else {
            observation.run();
        }
    }

    public Uni<VolumeEntity> lockVolume(String volumeKey) {
        return VolumeEntity.<VolumeEntity>findById(volumeKey, LockModeType.PESSIMISTIC_WRITE);
    }

    /**
     * Locks the volumes of {@code volumeKeys} in key order, in one statement: the transaction of a batch takes every lock
     * it needs up front and in the same order as any other batch, so two batches never deadlock on each other.
     */
    public static Uni<Void> lockVolumes(java.util.Collection<String> volumeKeys) {
        if (volumeKeys.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        return VolumeEntity.<VolumeEntity>find("volumeKey in ?1 order by volumeKey", new java.util.TreeSet<>(volumeKeys))
                .withLock(LockModeType.PESSIMISTIC_WRITE).list().replaceWithVoid();
    }

    /** {@link #lockVolumes} for the volumes of the claims waiting for {@code commandIds}' answers. */
    public static Uni<Void> lockVolumesOfCommands(java.util.Collection<String> commandIds) {
        if (commandIds.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        return VolumeEntity.<VolumeEntity>find("volumeKey in (select c.volumeKey from ClaimEntity c where c.commandId in ?1)"
                        + " order by volumeKey", new java.util.TreeSet<>(commandIds))
                .withLock(LockModeType.PESSIMISTIC_WRITE).list().replaceWithVoid();
    }

    public static Uni<List<ClaimEntity>> activeClaims(String volumeKey) {
        return ClaimEntity.<ClaimEntity>list("volumeKey = ?1 and past = false order by createdAt", volumeKey);
    }

    // ---------------------------------------------------------------- claim-requested

    /**
     * A claim-requested record. {@code requestedAt}: the event's time (CloudEvents ce_time, else the
     * record's timestamp), the start of the claim and release latencies; {@code tx}: its trace context.
     */
    public Uni<Void> onClaimRequested(ClaimRequested request, Instant requestedAt, Tx tx) {
        return inTransaction(tx, () -> claimRequestedStep(request, requestedAt, tx));
    }

    /**
     * The {@code rejected} answer to a claim request a known scheduler signed but that was refused (issue 33 item 4,
     * messaging.RefusedClaimRequests), once per record: its {@code ce_id} is remembered (hashed, with the handled
     * request ids and purged with them) so a copy of the record gets no second answer. The request id is not taken:
     * the request sent again correctly (a new ce_id, a fresh ce_time) is handled as new.
     */
    public Uni<Void> answerRefused(ClaimStatus answer, String ceId, Tx tx) {
        String marker = "refused ce_id sha256:" + sha256(ceId);
        return inTransaction(tx, () -> Panache.getSession()
                .chain(s -> s.createNativeQuery("INSERT INTO handled_requests (request_id, handled_at) VALUES (:id, :now)"
                                + " ON CONFLICT DO NOTHING")
                        .setParameter("id", marker).setParameter("now", Instant.now()).executeUpdate())
                .chain(inserted -> {
                    if (inserted == 0) {
                        LOG.debugf("refused claim-requested %s was answered before; not again", answer.requestId());
                        return Uni.createFrom().voidItem();
                    }
                    LOG.infof("claim request %s refused: %s", answer.requestId(), answer.reason());
                    tx.afterCommit(() -> metrics.decision("rejected", "refused"));
                    return outbox.add(answer, tx);
                }));
    }

    private static String sha256(String text) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@link #onClaimRequested}'s work inside the caller's transaction (one record of a batch). */
    public Uni<Void> claimRequestedStep(ClaimRequested request, Instant requestedAt, Tx tx) {
        return Panache.getSession()
                .chain(s -> s.createNativeQuery("INSERT INTO handled_requests (request_id, handled_at) VALUES (:id, :now)"
                                + " ON CONFLICT DO NOTHING")
                        .setParameter("id", request.requestId()).setParameter("now", Instant.now()).executeUpdate())
                .chain(inserted -> {
                    if (inserted == 0) {
                        LOG.debugf("claim-requested %s was handled before; not answered again", request.requestId());
                        return Uni.createFrom().voidItem();
                    }
                    return handle(request, requestedAt, tx);
                });
    }

    private Uni<Void> handle(ClaimRequested request, Instant requestedAt, Tx tx) {
        String key = VolumeEntity.key(request.namespace(), request.volumeId());
        return lockVolume(key).chain(volume -> {
            if (volume == null) {
                if (request.mode() != ClaimMode.RELEASE) {
                    rejected(request, requestedAt, tx, "volume-not-registered");
                }
                return outbox.add(status(request, ClaimState.REJECTED, "volume " + key + ": " + request.mode().wire()
                        + " claim by allocation " + request.allocationId() + " rejected: the volume is not registered", null), tx);
            }
            return activeClaims(key).chain(claims -> request.mode() == ClaimMode.RELEASE
                    ? release(request, requestedAt, tx, volume, claims)
                    : claim(request, requestedAt, tx, volume, claims));
        });
    }

    /** Counts a rejected claim (decision and latency) once its answer committed. */
    private void rejected(ClaimRequested request, Instant requestedAt, Tx tx, String code) {
        String mode = request.mode().wire();
        tx.afterCommit(() -> {
            metrics.decision("rejected", code);
            metrics.claimLatency(mode, "rejected", requestedAt);
        });
    }

    private Uni<Void> release(ClaimRequested request, Instant requestedAt, Tx tx, VolumeEntity volume, List<ClaimEntity> claims) {
        ClaimEntity claim = claims.stream().filter(c -> c.allocationId.equals(request.allocationId())).findFirst().orElse(null);
        if (claim == null) {
            return outbox.add(status(request, ClaimState.RELEASED, "allocation " + request.allocationId()
                    + " holds no claim on volume " + volume.volumeKey + " (nothing to release)", null), tx);
        }
        claim.tx = tx;
        if (claim.releaseRequestId == null) {
            // The first release request is the one the teardown's RELEASED answers; a later one does not take it over.
            claim.releaseRequestId = request.requestId();
        }
        // A claim mounting with a host path was answered ready before (anti-entropy mounts it again).
        Transition t = machine().release(snapshot(claim), claim.hostPath != null);
        if (t.effects().isEmpty()) {
            // Already tearing down (a release, a rollback or a forced delete): answered, not started twice.
            return outbox.add(status(request, ClaimState.RELEASING, "the claim of allocation " + request.allocationId()
                    + " on volume " + volume.volumeKey + " is already being released (" + claim.phase.toLowerCase() + ")", null), tx);
        }
        if (claim.releaseRequestedAt == null) {
            claim.releaseRequestedAt = requestedAt;
        }
        return apply(volume, claim, t);
    }

    private Uni<Void> claim(ClaimRequested request, Instant requestedAt, Tx tx, VolumeEntity volume, List<ClaimEntity> claims) {
        VolumeFacts facts = facts(volume, claims);
        return plugins.facts(volume.pluginId)
                .chain(known -> plugins.withVolumesHeld(known, facts, volume.volumeKey, request.nodeId()))
                .chain(plugin -> {
            RequestedFlags flags = requestedFlags(request);
            var decision = ClaimRules.decide(facts, plugin, new ClaimRules.Request(request.allocationId(), request.nodeId(),
                    request.mode(), request.accessMode(), request.attachmentMode(), request.mountSupport(),
                    !request.mountOptions().isEmpty() || request.sealedMountFlags() != null, flags.problem()),
                    new ClaimRules.PluginGrace(Instant.now(), settings.pluginGrace()));
            if (decision instanceof ClaimRules.Reject reject) {
                LOG.infof("claim rejected: %s", reject.reason());
                rejected(request, requestedAt, tx, reject.code());
                return outbox.add(status(request, ClaimState.REJECTED, reject.reason(), null), tx);
            }
            if (decision instanceof ClaimRules.AlreadyHeld) {
                ClaimEntity held = claims.stream().filter(c -> c.allocationId.equals(request.allocationId())).findFirst().orElseThrow();
                boolean ready = Phase.READY.name().equals(held.phase);
                tx.afterCommit(() -> metrics.decision("accepted", "already-held"));
                return outbox.add(status(request, ready ? ClaimState.READY : ClaimState.ACCEPTED,
                        "allocation " + request.allocationId() + " already holds this claim", ready ? held.hostPath : null), tx);
            }
            if (decision instanceof ClaimRules.WaitForRelease pending) {
                return pend(request, requestedAt, tx, volume, claims, plugin, flags, pending);
            }
            ClaimRules.WaitForPlugin wait = decision instanceof ClaimRules.WaitForPlugin w ? w : null;
            if (wait != null) {
                LOG.infof("claim waits: %s", wait.reason());
                tx.afterCommit(() -> metrics.decision("waiting", "plugin-away"));
            } else {
                LOG.infof("claim accepted: %s", ((ClaimRules.Accept) decision).reason());
                tx.afterCommit(() -> metrics.decision("accepted", "new-claim"));
            }
            ClaimEntity claim = newClaim(request, flags.flags(), volume, plugin);
            if (request.mode() == ClaimMode.WRITE) {
                // The fencing token of this write claim: the volume's write generation, bumped per grant.
                volume.writeGeneration++;
                claim.claimGeneration = volume.writeGeneration;
            }
            claim.requestedAt = requestedAt;
            claim.tx = tx;
            if (claims.isEmpty()) {
                volume.claimedAccessMode = request.accessMode().wire();
            }
            volume.updatedAt = Instant.now();
            Snapshot fresh = Snapshot.fresh(claim.controllerRequired, useControllerOnClaimingNode(claim, plugin));
            return applyToNew(volume, claim, wait == null ? machine().start(fresh)
                    : machine().waitForPlugin(fresh, wait.since(), wait.until(), wait.reason(), true));
        });
    }

    /**
     * The claim conflicts only with a claim being released (issue 19: e.g. the previous writer's release waiting for its
     * node's lease to lapse): it is stored pending (RELEASE_WAIT, claim-status PENDING with what it waits for), woken
     * when that release ends ({@link #wakePending}), rejected past {@code csi.claims.pending-timeout}.
     */
    private Uni<Void> pend(ClaimRequested request, Instant requestedAt, Tx tx, VolumeEntity volume, List<ClaimEntity> claims,
                           PluginFacts plugin, RequestedFlags flags, ClaimRules.WaitForRelease pending) {
        ClaimEntity blocker = claims.stream().filter(c -> c.allocationId.equals(pending.blocker().allocationId()))
                .findFirst().orElseThrow();
        String reason = releaseWaitText(volume, blocker) + " (" + pending.reason() + ")";
        LOG.infof("claim pending: %s", reason);
        tx.afterCommit(() -> metrics.decision("waiting", "release-pending"));
        ClaimEntity claim = newClaim(request, flags.flags(), volume, plugin);
        if (request.mode() == ClaimMode.WRITE) {
            volume.writeGeneration++;
            claim.claimGeneration = volume.writeGeneration;
        }
        claim.requestedAt = requestedAt;
        claim.tx = tx;
        volume.updatedAt = Instant.now();
        return applyToNew(volume, claim, machine().waitForRelease(
                Snapshot.fresh(claim.controllerRequired), Instant.now().plus(settings.pendingTimeout()), reason));
    }

    /**
     * The first transition of a new claim, then its row: inserted once with the state and command the transition gave
     * it (persisted first, Hibernate inserts the fields as they were at persist and updates them at the flush). Nothing
     * in {@link #apply} reads the claim's own row before the claim ends, and a first transition never ends it (a nested
     * one, e.g. a command that cannot be written, may: then the row is inserted ended, or not at all when its volume
     * was deleted with it).
     */
    private Uni<Void> applyToNew(VolumeEntity volume, ClaimEntity claim, Transition first) {
        String pluginId = volume.pluginId;
        observe(claim, () -> placement.nodesChanged(pluginId)); // the node holds one more claim (maybe one more volume)
        if (first.next().phase().past()) {
            return claim.persist().chain(() -> apply(volume, claim, first));
        }
        return apply(volume, claim, first).chain(() -> claim.past && volume.deleting
                // ended at once (a nested failure) as the last claim of a deleting volume: apply deleted the volume and
                // its claims, as it would have deleted this row had it been inserted first
                ? Uni.createFrom().voidItem()
                : claim.persist().replaceWithVoid());
    }

    /** What a claim pending on {@code blocker}'s release waits for, e.g. "waiting for node-1's lease to lapse: 41 s left". */
    private String releaseWaitText(VolumeEntity volume, ClaimEntity blocker) {
        Phase phase = Phase.valueOf(blocker.phase);
        if (phase == Phase.STORAGE_FENCING) {
            return "waiting for the storage fence of " + blocker.nodeId + " by ControllerUnpublish";
        }
        boolean leaseWait = blocker.fenceWait != null
                || !StorageFence.leaseValid(fencing.book().entry(blocker.nodeId), fencing.timers(), fencing.now());
        if (!leaseWait) {
            return "waiting for allocation " + blocker.allocationId + "'s release on " + blocker.nodeId + " ("
                    + phase.name().toLowerCase().replace('_', '-') + ")";
        }
        if (!Failover.effective(volume.failover).freedByLapse()) {
            return "waiting for " + blocker.nodeId + " to report the unmount, or an operator's forced detach (volume "
                    + volume.volumeKey + " has failover manual)";
        }
        return fencing.book().verdict(blocker.nodeId, blocker.leaseEpoch == null ? 0 : blocker.leaseEpoch,
                fencing.timers(), fencing.now()).reason();
    }

    /**
     * A claim of the volume ended (past): each pending claim of the volume is decided again at once (event-driven, in
     * the same transaction, the volume locked): started when the rules accept it now, left pending while another
     * release blocks it, rejected when a rule refuses it.
     */
    private Uni<Void> wakePending(VolumeEntity volume, Tx tx) {
        return ClaimEntity.<ClaimEntity>list("volumeKey = ?1 and past = false and phase = ?2 order by createdAt",
                volume.volumeKey, Phase.RELEASE_WAIT.name()).chain(pending -> {
            Uni<Void> chain = Uni.createFrom().voidItem();
            for (ClaimEntity claim : pending) {
                chain = chain.chain(() -> {
                    claim.tx = tx;
                    return decidePending(volume, claim, false);
                });
            }
            return chain;
        });
    }

    /** Decides a pending claim again; {@code due}: its pending timeout passed (still blocked = rejected). */
    private Uni<Void> decidePending(VolumeEntity volume, ClaimEntity claim, boolean due) {
        if (claim.past || !Phase.RELEASE_WAIT.name().equals(claim.phase)) {
            return Uni.createFrom().voidItem();
        }
        return activeClaims(volume.volumeKey).chain(claims -> {
            List<ClaimEntity> others = claims.stream().filter(c -> !c.claimId.equals(claim.claimId)).toList();
            VolumeFacts othersFacts = facts(volume, others);
            return plugins.facts(volume.pluginId)
                    .chain(known -> plugins.withVolumesHeld(known, othersFacts, volume.volumeKey, claim.nodeId))
                    .chain(plugin -> {
            var decision = ClaimRules.decide(othersFacts, plugin, new ClaimRules.Request(claim.allocationId,
                            claim.nodeId, ClaimMode.fromWire(claim.mode), AccessMode.fromWire(claim.accessMode),
                            AttachmentMode.fromWire(claim.attachmentMode), io.csiorchestrator.events.MountSupport.ALL, false),
                    new ClaimRules.PluginGrace(Instant.now(), settings.pluginGrace()));
            String mode = claim.mode;
            Instant requestedAt = claim.requestedAt;
            if (decision instanceof ClaimRules.WaitForRelease w) {
                if (!due) {
                    return Uni.createFrom().voidItem();
                }
                ClaimEntity blocker = others.stream().filter(c -> c.allocationId.equals(w.blocker().allocationId()))
                        .findFirst().orElseThrow();
                String reason = w.reason().replace(" pending: ", " rejected: still pending after "
                        + io.csiorchestrator.claims.domain.FenceTimers.text(settings.pendingTimeout()) + ", ") + "; " + releaseWaitText(volume, blocker);
                observe(claim, () -> {
                    metrics.decision("rejected", "release-pending-timeout");
                    metrics.claimLatency(mode, "rejected", requestedAt);
                });
                LOG.infof("claim rejected: %s", reason);
                return apply(volume, claim, machine().releaseWaitRejected(snapshot(claim), reason));
            }
            if (decision instanceof ClaimRules.Reject reject) {
                observe(claim, () -> {
                    metrics.decision("rejected", reject.code());
                    metrics.claimLatency(mode, "rejected", requestedAt);
                });
                LOG.infof("claim rejected: %s", reject.reason());
                return apply(volume, claim, machine().releaseWaitRejected(snapshot(claim), reject.reason()));
            }
            // The release ended: the claim starts (or waits for its node's plugin), with the plugin as it is now.
            claim.controllerRequired = plugin.controllerRequired();
            var node = plugin.nodes().get(claim.nodeId);
            claim.externalNodeId = node == null ? null : node.externalNodeId();
            claim.retryAt = null;
            claim.lastError = null;
            if (others.isEmpty()) {
                volume.claimedAccessMode = claim.accessMode;
            }
            Snapshot fresh = Snapshot.fresh(claim.controllerRequired, useControllerOnClaimingNode(claim, plugin));
            if (decision instanceof ClaimRules.WaitForPlugin wait) {
                return apply(volume, claim, machine().waitForPlugin(fresh, wait.since(), wait.until(), wait.reason(), true));
            }
            observe(claim, () -> metrics.decision("accepted", "release-ended"));
            LOG.infof("claim accepted: volume %s: %s claim by allocation %s on node %s, after the release it waited for",
                    claim.volumeKey, mode, claim.allocationId, claim.nodeId);
            return apply(volume, claim, machine().releaseWaitOver(snapshot(claim)));
                    });
        });
    }

    /** The request's mount flags (opened from sealedMountFlags), or why they cannot be used. */
    private record RequestedFlags(List<String> flags, String problem) {
    }

    private RequestedFlags requestedFlags(ClaimRequested request) {
        List<String> flags;
        try {
            flags = secrets.mountFlagsOf(request);
        } catch (SecretSealer.SecretUnsealException e) {
            return new RequestedFlags(List.of(), e.getMessage());
        }
        Violations invalid = new Violations();
        MountOptions.checkFlags("sealedMountFlags.mountFlags", flags, invalid);
        return invalid.isEmpty() ? new RequestedFlags(flags, null)
                : new RequestedFlags(List.of(), "the opened flags are invalid: " + invalid.list());
    }

    private ClaimEntity newClaim(ClaimRequested request, List<String> requestFlags, VolumeEntity volume, PluginFacts plugin) {
        Instant now = Instant.now();
        ClaimEntity c = new ClaimEntity();
        c.claimId = UUID.randomUUID().toString();
        c.volumeKey = volume.volumeKey;
        c.namespace = volume.namespace;
        c.volumeId = volume.id;
        c.allocationId = request.allocationId();
        c.nodeId = request.nodeId();
        c.mode = request.mode().wire();
        c.requestId = request.requestId();
        c.accessMode = request.accessMode().wire();
        c.attachmentMode = request.attachmentMode().wire();
        c.readOnly = request.readOnly() || request.mode() == ClaimMode.READ;
        c.controllerRequired = plugin.controllerRequired();
        var node = plugin.nodes().get(request.nodeId());
        c.externalNodeId = node == null ? null : node.externalNodeId();
        // Effective mount options: the request's fs type and flags replace the volume's (sealed, never plain).
        SecretPayload stored = secrets.open(volume.sealedJson, volume.namespace, volume.id);
        MountOptions effective = new MountOptions(volume.fsType, stored.mountFlags())
                .overriddenBy(new MountOptions(request.mountOptions().fsType(), requestFlags));
        c.fsType = effective.fsType();
        c.sealedJson = secrets.sealToJson(new SecretPayload(stored.secrets(), effective.mountFlags()), volume.namespace, volume.id);
        c.publishContextJson = "{}";
        c.phase = Phase.CONTROLLER_PUBLISHING.name();
        c.attempt = 0;
        c.createdAt = now;
        c.updatedAt = now;
        return c;
    }

    // ---------------------------------------------------------------- mount-done

    public Uni<Void> onMountDone(MountDone done, Tx tx) {
        return inTransaction(tx, () -> mountDoneStep(done, tx));
    }

    /** {@link #onMountDone}'s work inside the caller's transaction (one record of a batch). */
    public Uni<Void> mountDoneStep(MountDone done, Tx tx) {
        // Find the volume of the command, lock the volume, then read the claim: a concurrent update of the
        // same volume (a claim-requested on another partition) waits for this transaction or vice versa.
        return lockVolumeOfClaim("commandId", done.commandId()).chain(volume -> {
            if (volume == null) {
                LOG.debugf("mount-done for command %s matches no pending command (already handled or unknown)", done.commandId());
                return Uni.createFrom().voidItem();
            }
            return ClaimEntity.<ClaimEntity>find("commandId", done.commandId()).firstResult().chain(claim -> {
                if (claim == null) {
                    return Uni.createFrom().voidItem();
                }
                claim.tx = tx;
                return stepDone(volume, claim, done);
            });
        });
    }

    /**
     * Locks the volume of the claim whose {@code attribute} ({@code commandId} or {@code claimId}) is {@code value}, in
     * one statement (a claim's volume never changes); null when no claim matches. The claim itself is read after this,
     * under the lock.
     */
    private static Uni<VolumeEntity> lockVolumeOfClaim(String attribute, String value) {
        return VolumeEntity.<VolumeEntity>find("volumeKey = (select c.volumeKey from ClaimEntity c where c." + attribute + " = ?1)",
                value).withLock(LockModeType.PESSIMISTIC_WRITE).firstResult();
    }

    private Uni<Void> stepDone(VolumeEntity volume, ClaimEntity claim, MountDone done) {
        claim.commandId = null;
        claim.commandDeadline = null;
        if (Phase.STORAGE_FENCING.name().equals(claim.phase)) {
            // Only a successful ControllerUnpublish is a fence; NOT_FOUND or any other failure is none.
            return done.succeeded()
                    ? apply(volume, claim, machine().storageFenced(snapshot(claim), StorageFence.fencedNote(claim.nodeId)))
                    : storageFenceFailed(volume, claim, done.errorCode(), done.errorMessage());
        }
        if (claim.detachNote != null && Phase.CONTROLLER_UNPUBLISHING.name().equals(claim.phase)
                && (done.succeeded() || "NOT_FOUND".equals(done.errorCode()))) {
            // the controller side of a claim whose node side was assumed detached: its RELEASED says why
            return apply(volume, claim, machine().controllerUnpublishedAfterDetach(snapshot(claim), claim.detachNote));
        }
        if (done.succeeded()) {
            if (done.kind() == NodeCommandKind.CONTROLLER_PUBLISH) {
                claim.publishContextJson = Json.write(done.publishContext());
            }
            if (done.kind() == NodeCommandKind.MOUNT) {
                if (done.hostPath() == null) {
                    return apply(volume, claim, machine().failed(snapshot(claim), "INTERNAL",
                            "the worker of node " + done.nodeId() + " reported the mount done without a host path"));
                }
                claim.hostPath = done.hostPath();
            }
            return apply(volume, claim, machine().succeeded(snapshot(claim), done.hostPath()));
        }
        String message = done.errorMessage();
        Phase phase = Phase.valueOf(claim.phase);
        if ((done.kind() == NodeCommandKind.MOUNT || done.kind() == NodeCommandKind.UNMOUNT)
                && PLUGIN_AWAY_CODES.contains(done.errorCode())) {
            // The node's plugin did not answer: wait for it within the grace instead of using up attempts.
            return plugins.facts(volume.pluginId).chain(plugin -> onPluginOutage(volume, claim, plugin, true,
                    done.errorCode() + ": " + message));
        }
        if (VolumeOperationsCodes.PLUGIN_NOT_FOUND.equals(done.errorCode())) {
            // A controller instance that just went away: retried (with another healthy controller when there is one).
            return apply(volume, claim, machine().failed(snapshot(claim), "UNAVAILABLE", message));
        }
        if (phase == Phase.CONTROLLER_UNPUBLISHING && claim.attempt >= settings.maxPublishAttempts()
                && !"NOT_FOUND".equals(done.errorCode())) {
            // Nomad 25349: a controller-unpublish for a node that is gone is abandoned, not retried forever.
            return volumePlugin(volume).chain(pluginId -> plugins.goneSince(pluginId, claim.nodeId,
                    Instant.now().minus(settings.nodeGoneTimeout()))).chain(gone -> gone
                    ? apply(volume, claim, machine().controllerUnpublishAbandoned(snapshot(claim), "node " + claim.nodeId
                            + " is gone and the controller-unpublish keeps failing: " + done.errorCode() + ": " + message))
                    : apply(volume, claim, machine().failed(snapshot(claim), done.errorCode(), message)));
        }
        return apply(volume, claim, machine().failed(snapshot(claim), done.errorCode(), message));
    }

    private static Uni<String> volumePlugin(VolumeEntity volume) {
        return Uni.createFrom().item(volume.pluginId);
    }

    // ---------------------------------------------------------------- reconcile

    /** Sends the current step of a claim whose retry is due. */
    public Uni<Void> retryDue(String claimId) {
        return onLockedClaim(claimId, (volume, claim) -> {
            if (claim.past || claim.commandId != null || claim.retryAt == null || claim.retryAt.isAfter(Instant.now())) {
                return Uni.createFrom().voidItem();
            }
            if (Phase.RELEASE_WAIT.name().equals(claim.phase)) {
                return decidePending(volume, claim, true);
            }
            if (claim.pluginWaitSince != null) {
                return plugins.facts(volume.pluginId).chain(plugin -> onPluginOutage(volume, claim, plugin, false, null));
            }
            NodeCommandKind kind = ClaimMachine.kindOf(Phase.valueOf(claim.phase));
            return kind == null ? Uni.createFrom().voidItem() : send(volume, claim, kind);
        });
    }

    /** The worker codes that say a node step's plugin did not answer (gone, restarting, not registered). */
    static final java.util.Set<String> PLUGIN_AWAY_CODES = java.util.Set.of(VolumeOperationsCodes.PLUGIN_NOT_FOUND, "UNAVAILABLE");

    /** The worker's own error codes claim-service acts on. */
    static final class VolumeOperationsCodes {
        /** The node has no healthy instance of the command's plugin (node-mount-worker's VolumeOperations). */
        static final String PLUGIN_NOT_FOUND = "PLUGIN_NOT_FOUND";

        private VolumeOperationsCodes() {
        }
    }

    /**
     * A claim's node step and its plugin instance being away ({@link ClaimRules#pluginOutage}): proceed, keep
     * waiting, or give up. {@code failedNow}: the step just failed because the plugin did not answer ({@code why}).
     */
    private Uni<Void> onPluginOutage(VolumeEntity volume, ClaimEntity claim, PluginFacts plugin, boolean failedNow, String why) {
        var outage = ClaimRules.pluginOutage(volume.pluginId, claim.nodeId, plugin, claim.pluginWaitSince, failedNow,
                new ClaimRules.PluginGrace(Instant.now(), settings.pluginGrace()), settings.retryBaseBackoff());
        if (outage instanceof ClaimRules.Proceed) {
            return pluginBack(volume, claim, plugin);
        }
        if (outage instanceof ClaimRules.KeepWaiting w) {
            String reason = why == null ? w.reason() : w.reason() + " (" + why + ")";
            return apply(volume, claim, machine().waitForPlugin(snapshot(claim), w.since(), w.until(), reason,
                    claim.pluginWaitSince == null));
        }
        ClaimRules.PluginGone gone = (ClaimRules.PluginGone) outage;
        claim.pluginWaitSince = null;
        boolean waiting = Phase.PLUGIN_WAIT.name().equals(claim.phase);
        String mode = claim.mode;
        Instant requestedAt = claim.requestedAt;
        LOG.warnf("claim %s (volume %s, node %s): %s", claim.claimId, claim.volumeKey, claim.nodeId, gone.reason());
        if (waiting) {
            observe(claim, () -> {
                metrics.decision("rejected", gone.code());
                metrics.claimLatency(mode, "rejected", requestedAt);
            });
        }
        String subject = waiting ? "volume " + claim.volumeKey + ": " + mode + " claim by allocation " + claim.allocationId
                + " on node " + claim.nodeId + " rejected: " : "";
        return apply(volume, claim, machine().pluginGone(snapshot(claim), subject + gone.reason()));
    }

    /** The claim's node plugin instance is healthy: its waiting claim starts, its waiting step is sent. */
    private Uni<Void> pluginBack(VolumeEntity volume, ClaimEntity claim, PluginFacts plugin) {
        LOG.infof("claim %s (volume %s, node %s): plugin %s is back, waited since %s", claim.claimId, claim.volumeKey,
                claim.nodeId, volume.pluginId, claim.pluginWaitSince);
        claim.pluginWaitSince = null;
        if (Phase.PLUGIN_WAIT.name().equals(claim.phase)) {
            // The plugin may have been unknown while away: take its controller requirement and node id as they are now.
            claim.controllerRequired = plugin.controllerRequired();
            var node = plugin.nodes().get(claim.nodeId);
            claim.externalNodeId = node == null ? null : node.externalNodeId();
            String mode = claim.mode;
            observe(claim, () -> metrics.decision("accepted", "plugin-back"));
            LOG.infof("claim accepted: volume %s: %s claim by allocation %s on node %s, after waiting for plugin %s",
                    claim.volumeKey, mode, claim.allocationId, claim.nodeId, volume.pluginId);
        }
        return apply(volume, claim, machine().pluginBack(snapshot(claim)));
    }

    /**
     * plugin-status said the claim's node plugin instance is healthy: a claim waiting for it goes on at once
     * (level-triggered: re-read under the volume lock; a redelivered status finds nothing waiting).
     */
    public Uni<Void> pluginMayBeBack(String claimId) {
        return onLockedClaim(claimId, (volume, claim) -> {
            if (claim.past || claim.commandId != null || claim.pluginWaitSince == null) {
                return Uni.createFrom().voidItem();
            }
            return plugins.facts(volume.pluginId).chain(plugin -> plugin.hasHealthyNode(claim.nodeId)
                    ? pluginBack(volume, claim, plugin) : Uni.createFrom().voidItem());
        });
    }

    /** Ids of the claims waiting for {@code pluginId} on one of {@code nodeIds}. */
    public static Uni<List<String>> waitingFor(String pluginId, java.util.Collection<String> nodeIds) {
        if (nodeIds.isEmpty()) {
            return Uni.createFrom().item(List.of());
        }
        return Panache.withSession(() -> Panache.getSession().chain(s -> s.createNativeQuery(
                        "SELECT c.claim_id FROM claims c JOIN volumes v ON v.volume_key = c.volume_key"
                                + " WHERE NOT c.past AND c.plugin_wait_since IS NOT NULL AND c.command_id IS NULL"
                                + " AND v.plugin_id = :p AND c.node_id IN (:nodes) ORDER BY c.plugin_wait_since", String.class)
                .setParameter("p", pluginId).setParameter("nodes", List.copyOf(nodeIds)).getResultList()));
    }

    /** A claim's command got no answer in time. */
    public Uni<Void> commandTimedOut(String claimId) {
        return onLockedClaim(claimId, (volume, claim) -> {
            if (claim.past || claim.commandId == null || claim.commandDeadline == null || claim.commandDeadline.isAfter(Instant.now())) {
                return Uni.createFrom().voidItem();
            }
            LOG.warnf("command %s of claim %s got no answer in time", claim.commandId, claim.claimId);
            claim.commandId = null;
            claim.commandDeadline = null;
            if (Phase.STORAGE_FENCING.name().equals(claim.phase)) {
                return storageFenceFailed(volume, claim, "DEADLINE_EXCEEDED", "no answer within the command timeout");
            }
            if (!Phase.UNMOUNTING.name().equals(claim.phase)) {
                return apply(volume, claim, machine().timedOut(snapshot(claim)));
            }
            // An unmount without an answer: the node is unreachable, a storage-fencing plugin can cut it off now.
            return storageFenceDecision(volume, claim, StorageFence.Unreachable.UNMOUNT_TIMED_OUT).chain(decision ->
                    decision instanceof StorageFence.Fence fence ? storageFence(volume, claim, fence)
                            : apply(volume, claim, machine().timedOut(snapshot(claim))));
        });
    }

    /**
     * The storage-fence rule ({@link StorageFence#decide}) for this claim, whose node is unreachable for {@code why}.
     * The caller holds the volume lock.
     */
    private Uni<StorageFence.Decision> storageFenceDecision(VolumeEntity volume, ClaimEntity claim, StorageFence.Unreachable why) {
        List<String> fencingPlugins = fencing.storageFencingPlugins();
        if (why == StorageFence.Unreachable.REACHABLE || !fencingPlugins.contains(volume.pluginId)) {
            return Uni.createFrom().item(new StorageFence.NotApplicable());
        }
        return plugins.facts(volume.pluginId).chain(plugin -> activeClaims(volume.volumeKey).map(active -> {
            List<ClaimMachine.Peer> others = active.stream().filter(c -> !c.claimId.equals(claim.claimId))
                    .map(c -> new ClaimMachine.Peer(c.nodeId, Phase.valueOf(c.phase), c.controllerRequired)).toList();
            var node = plugin.nodes().get(claim.nodeId);
            String external = claim.externalNodeId != null ? claim.externalNodeId : node == null ? null : node.externalNodeId();
            return StorageFence.decide(new StorageFence.Facts(volume.pluginId, fencingPlugins,
                    Failover.effective(volume.failover), plugin.controllerRequired(), Phase.valueOf(claim.phase),
                    "failed".equals(claim.storageFence), claim.nodeId, external, plugin.healthyControllerNodes(),
                    claim.controllerNodeId, ClaimMachine.controllerPublicationNeeded(claim.nodeId, others), why));
        }));
    }

    /** Why the claim's node is unreachable by its lease alone (not valid), or REACHABLE. */
    private StorageFence.Unreachable leaseReachability(ClaimEntity claim) {
        return StorageFence.leaseValid(fencing.book().entry(claim.nodeId), fencing.timers(), fencing.now())
                ? StorageFence.Unreachable.REACHABLE : StorageFence.Unreachable.LEASE_NOT_VALID;
    }

    /** Starts the storage fence: ControllerUnpublish(volume, the claim's node) to {@code fence}'s controller. */
    private Uni<Void> storageFence(VolumeEntity volume, ClaimEntity claim, StorageFence.Fence fence) {
        LOG.warnf("claim %s (volume %s): %s", claim.claimId, claim.volumeKey, fence.reason());
        claim.commandId = null;
        claim.commandDeadline = null;
        claim.retryAt = null;
        claim.controllerNodeId = fence.controllerNode();
        return apply(volume, claim, machine().storageFence(snapshot(claim), fence.reason()));
    }

    /**
     * The storage fence failed or got no answer: never a fence. Not tried again for this claim; the release says so
     * with the lease wait it falls back to.
     */
    private Uni<Void> storageFenceFailed(VolumeEntity volume, ClaimEntity claim, String code, String message) {
        claim.storageFence = "failed";
        LeaseBook.Verdict verdict = fencing.book().verdict(claim.nodeId, claim.leaseEpoch == null ? 0 : claim.leaseEpoch,
                fencing.timers(), fencing.now());
        claim.fenceWait = waitKind(verdict);
        String reason = StorageFence.failedReason(claim.nodeId, code, message) + ": " + verdict.reason();
        LOG.warnf("claim %s (volume %s): %s", claim.claimId, claim.volumeKey, reason);
        return apply(volume, claim, machine().storageFenceFailed(snapshot(claim), reason));
    }

    private static String waitKind(LeaseBook.Verdict verdict) {
        return verdict instanceof LeaseBook.Verdict.Wait w ? (w.lapsed() ? "lapsed" : "lease-valid")
                : verdict instanceof LeaseBook.Verdict.Fenced ? "fenced" : "no-lease";
    }

    /**
     * The claim's node may be unreachable (its lease ended, or the release's unmount keeps failing): the node side is
     * assumed detached only when the lease book says the node surely lapsed and fenced ({@link LeaseBook#verdict});
     * otherwise a release says once per kind of wait why it waits (claim-status RELEASING with the reason).
     */
    public Uni<Void> fenceCheck(String claimId) {
        return onLockedClaim(claimId, (volume, claim) -> {
            Phase phase = Phase.valueOf(claim.phase);
            if (claim.past || phase == Phase.PLUGIN_WAIT || phase == Phase.RELEASE_WAIT
                    || phase == Phase.CONTROLLER_UNPUBLISHING || phase == Phase.STORAGE_FENCING) {
                return Uni.createFrom().voidItem();
            }
            LeaseBook.Verdict lease = fencing.book().verdict(claim.nodeId, claim.leaseEpoch == null ? 0 : claim.leaseEpoch,
                    fencing.timers(), fencing.now());
            if (lease instanceof LeaseBook.Verdict.Wait w) {
                // no row changes when the wait ends: the leader's pass is asked for that moment (issue 36, no polling)
                reconcileSchedule.offer(Instant.now().plus(w.left()));
            }
            boolean manual = !Failover.effective(volume.failover).freedByLapse();
            if (lease instanceof LeaseBook.Verdict.Fenced fenced && !manual) {
                return detach(volume, claim, fenced.reason());
            }
            return storageFenceDecision(volume, claim, leaseReachability(claim)).chain(decision -> {
                if (decision instanceof StorageFence.Fence fence) {
                    return storageFence(volume, claim, fence);
                }
                LeaseBook.Verdict verdict = lease;
                String kind = manual ? "manual" : waitKind(verdict);
                if (manual) {
                    verdict = new LeaseBook.Verdict.NoLease("volume " + volume.volumeKey + " has failover manual: waiting for "
                            + claim.nodeId + " to report the unmount, or an operator's forced detach");
                }
                String reason = verdict.reason();
                if (decision instanceof StorageFence.Unavailable no) {
                    // A storage-fencing plugin that cannot fence now: said once, with the lease wait it falls back to.
                    kind = "nosf-" + kind;
                    reason = no.reason() + "; " + reason;
                }
                if (kind.equals(claim.fenceWait)) {
                    return Uni.createFrom().voidItem();
                }
                claim.fenceWait = kind;
                LOG.infof("claim %s (volume %s, node %s): %s", claim.claimId, claim.volumeKey, claim.nodeId, reason);
                return apply(volume, claim, machine().fenceWait(snapshot(claim), reason));
            });
        });
    }

    /**
     * node-leases said {@code nodeId}'s lease ended: each of its claims is checked at once ({@link #fenceCheck}), so a
     * release says without delay that it now waits for the node's fence; the reconciler checks again until it is due.
     */
    public Uni<Void> fenceCheckNode(String nodeId) {
        return Panache.withSession(() -> Panache.getSession().chain(s -> s.createNativeQuery(
                        "SELECT claim_id FROM claims WHERE NOT past AND node_id = :n AND phase IN ('CONTROLLER_PUBLISHING',"
                                + " 'MOUNTING', 'READY', 'UNMOUNTING') ORDER BY created_at", String.class)
                .setParameter("n", nodeId).getResultList()))
                .chain(ids -> {
                    Uni<Void> chain = Uni.createFrom().voidItem();
                    for (String id : ids) {
                        chain = chain.chain(() -> fenceCheck(id));
                    }
                    return chain;
                });
    }

    /**
     * A FENCED node event (issue 19): {@code nodeId} fenced itself at lease epoch {@code epoch} and removed the mounts
     * {@code removed} ({@code namespace/volumeId/allocationId}). Each claim among them on that node mounted under an
     * epoch at or below {@code epoch} (or before leases) ends ({@link ClaimMachine#fenced}), a reader's as well as a
     * writer's (the node fences every mount of a volume whose failover is fence, {@link Failover#fencesMounts()}); a
     * claim whose mount the report does not list is untouched. Each volume in its own transaction, re-read under its
     * lock.
     */
    public Uni<Void> onNodeFenced(String nodeId, long epoch, java.util.Collection<String> removed) {
        Uni<Void> chain = Uni.createFrom().voidItem();
        for (String mount : removed) {
            String[] parts = mount.split("/");
            if (parts.length != 3) {
                continue;
            }
            String volumeKey = VolumeEntity.key(parts[0], parts[1]);
            String allocationId = parts[2];
            chain = chain.chain(() -> inTransaction(() -> lockVolume(volumeKey).chain(volume -> volume == null
                    ? Uni.createFrom().voidItem()
                    : ClaimEntity.<ClaimEntity>find("volumeKey = ?1 and allocationId = ?2 and nodeId = ?3 and past = false",
                            volumeKey, allocationId, nodeId).firstResult().chain(claim -> {
                        if (claim == null || (claim.leaseEpoch != null && claim.leaseEpoch > epoch)) {
                            return Uni.createFrom().voidItem();
                        }
                        claim.tx = Tx.untraced();
                        String reason = nodeId + " fenced at epoch " + epoch + ": mount removed";
                        LOG.warnf("claim %s (volume %s): %s", claim.claimId, volumeKey, reason);
                        if (java.util.Set.of("MOUNTING", "READY", "UNMOUNTING").contains(claim.phase)) {
                            claim.detachNote = reason; // its mount removed: the RELEASED after the controller side says so
                        }
                        if (!Phase.CONTROLLER_UNPUBLISHING.name().equals(claim.phase)) {
                            claim.commandId = null;
                            claim.commandDeadline = null;
                            claim.retryAt = null;
                        }
                        return apply(volume, claim, machine().fenced(snapshot(claim), reason));
                    }))));
        }
        return chain;
    }

    private Uni<Void> detach(VolumeEntity volume, ClaimEntity claim, String why) {
        LOG.warnf("claim %s: %s", claim.claimId, why);
        if (!Phase.CONTROLLER_UNPUBLISHING.name().equals(claim.phase)) {
            claim.detachNote = why; // the node side assumed detached: the RELEASED after the controller side says why
            claim.commandId = null;
            claim.commandDeadline = null;
            claim.retryAt = null;
        }
        return apply(volume, claim, machine().nodeDetached(snapshot(claim), why));
    }

    /** Releases a claim (force delete). Call inside {@code tx}'s transaction with the volume locked. */
    public Uni<Void> releaseLocked(VolumeEntity volume, ClaimEntity claim, Tx tx) {
        claim.tx = tx;
        if (claim.releaseRequestedAt == null && !claim.releaseRequested && !claim.rollingBack) {
            claim.releaseRequestedAt = Instant.now();
        }
        // A claim being rolled back is torn down already; a forced delete adds no release answer to it.
        Snapshot s = snapshot(claim);
        return apply(volume, claim, claim.rollingBack ? new Transition(s, List.of())
                : machine().release(s, claim.hostPath != null));
    }

    /**
     * Operator detach (not forced) of a claim: a node whose lease lapsed and whose fence wait passed is assumed
     * detached at once; any other node (its lease valid, lapsing, or unknown) is sent the unmount as for a release, and
     * the claim is freed when the node reports it unmounted or its lease lapses and the wait passes (issue 19 item 6).
     * Call inside {@code tx}'s transaction with the volume locked.
     */
    public Uni<Void> operatorDetachLocked(VolumeEntity volume, ClaimEntity claim, Tx tx) {
        claim.tx = tx;
        LeaseBook.Verdict verdict = fencing.book().verdict(claim.nodeId, claim.leaseEpoch == null ? 0 : claim.leaseEpoch,
                fencing.timers(), fencing.now());
        if (verdict instanceof LeaseBook.Verdict.Fenced fenced && Failover.effective(volume.failover).freedByLapse()) {
            return detachLocked(volume, claim, "operator detached node " + claim.nodeId + " from volume " + volume.volumeKey
                    + ": " + fenced.reason(), tx);
        }
        LOG.infof("claim %s: operator detach of node %s: unmount sent, freed when it reports it unmounted (%s)",
                claim.claimId, claim.nodeId, verdict.reason());
        return releaseLocked(volume, claim, tx);
    }

    /** Operator detach of a claim on a node. Call inside {@code tx}'s transaction with the volume locked. */
    public Uni<Void> detachLocked(VolumeEntity volume, ClaimEntity claim, String why, Tx tx) {
        claim.tx = tx;
        if (!Phase.CONTROLLER_UNPUBLISHING.name().equals(claim.phase)) {
            claim.detachNote = why; // the node side assumed detached: the RELEASED after the controller side says why
            claim.commandId = null;
            claim.commandDeadline = null;
            claim.retryAt = null;
        }
        return apply(volume, claim, machine().nodeDetached(snapshot(claim), why));
    }

    private interface ClaimWork {
        Uni<Void> run(VolumeEntity volume, ClaimEntity claim);
    }

    private Uni<Void> onLockedClaim(String claimId, ClaimWork work) {
        Tx tx = Tx.untraced();
        return inTransaction(tx, () -> lockVolumeOfClaim("claimId", claimId).chain(volume -> volume == null
                ? Uni.createFrom().voidItem()
                : ClaimEntity.<ClaimEntity>findById(claimId).chain(claim -> {
                    if (claim == null) {
                        return Uni.createFrom().voidItem();
                    }
                    claim.tx = tx;
                    return work.run(volume, claim);
                })));
    }

    // ---------------------------------------------------------------- transitions

    /** Stores {@code t} as the claim's new checkpoint and carries out its effects (in the caller's transaction). */
    Uni<Void> apply(VolumeEntity volume, ClaimEntity claim, Transition t) {
        Instant now = Instant.now();
        boolean wasPending = Phase.RELEASE_WAIT.name().equals(claim.phase);
        boolean becameReady = t.next().phase() == Phase.READY && !Phase.READY.name().equals(claim.phase);
        Snapshot s = t.next();
        if (!s.phase().name().equals(claim.phase) || claim.attempt != s.attempt()) {
            LOG.infof("claim %s (volume %s, allocation %s, node %s): %s -> %s (attempt %d)", claim.claimId, claim.volumeKey,
                    claim.allocationId, claim.nodeId, claim.phase, s.phase(), s.attempt());
        }
        claim.phase = s.phase().name();
        claim.attempt = s.attempt();
        claim.controllerPublished = s.controllerPublished();
        claim.releaseRequested = s.releaseRequested();
        claim.rollingBack = s.rollingBack();
        claim.updatedAt = now;
        Uni<Void> chain = Uni.createFrom().voidItem();
        for (ClaimMachine.Effect effect : t.effects()) {
            if (effect instanceof ClaimMachine.EmitStatus e) {
                if (e.state() == ClaimState.FAILED) {
                    claim.lastError = e.reason();
                    LOG.warnf("claim %s of volume %s failed: %s", claim.claimId, claim.volumeKey, e.reason());
                }
                chain = chain.chain(() -> outbox.add(status(claim, e.state(), e.reason()), claim.tx));
                observeEnd(claim, e.state(), t);
            } else if (effect instanceof ClaimMachine.SendCommand c) {
                chain = chain.chain(() -> send(volume, claim, c.kind()));
            } else if (effect instanceof ClaimMachine.RetryLater r) {
                claim.commandId = null;
                claim.commandDeadline = null;
                claim.retryAt = now.plus(r.delay());
                claim.lastError = r.lastError();
                LOG.infof("claim %s: %s; retrying in %s", claim.claimId, r.lastError(), r.delay());
            } else if (effect instanceof ClaimMachine.WaitForPlugin w) {
                claim.commandId = null;
                claim.commandDeadline = null;
                claim.retryAt = w.until();
                claim.pluginWaitSince = w.since();
                claim.lastError = w.reason();
                LOG.infof("claim %s: %s; decided again by %s at the latest", claim.claimId, w.reason(), w.until());
            } else if (effect instanceof ClaimMachine.WaitForRelease w) {
                claim.commandId = null;
                claim.commandDeadline = null;
                claim.retryAt = w.until();
                claim.lastError = w.reason();
            } else if (effect instanceof ClaimMachine.Abandoned a) {
                claim.lastError = a.reason();
                LOG.warnf("claim %s: %s abandoned: %s", claim.claimId, a.kind().wire(), a.reason());
            }
        }
        if (becameReady) {
            // the volume is published on the claim's node now: expanded there too when that node is behind (issue 14)
            chain = chain.chain(() -> provisions.get().claimReady(volume, claim.nodeId, claim.tx));
        }
        return chain.chain(() -> {
            if (!s.phase().past()) {
                return Uni.createFrom().voidItem();
            }
            claim.past = true;
            claim.endedAt = now;
            String pluginId = volume.pluginId;
            observe(claim, () -> placement.nodesChanged(pluginId)); // the node may hold one volume less
            claim.pluginWaitSince = null;
            claim.commandId = null;
            claim.commandDeadline = null;
            claim.retryAt = null;
            return Panache.getSession().chain(session -> session.flush())
                    .chain(() -> ClaimEntity.count("volumeKey = ?1 and past = false", volume.volumeKey))
                    .chain(remaining -> {
                        if (remaining > 0) {
                            // A claim pending on this one's release goes on now (not when a timer fires).
                            return wasPending ? Uni.createFrom().voidItem() : wakePending(volume, claim.tx);
                        }
                        volume.claimedAccessMode = null;
                        if (volume.deleting) {
                            LOG.infof("volume %s deleted after its last claim was released", volume.volumeKey);
                            return ClaimEntity.delete("volumeKey", volume.volumeKey).chain(() -> volume.delete());
                        }
                        return Uni.createFrom().voidItem();
                    });
        });
    }

    /**
     * Writes the node command of the current step (a new command id per attempt) into the outbox. A controller
     * command first checks the volume's other claims on the same node (the publication is per (volume, node)): a
     * controller-unpublish another claim's publication still needs is skipped, a controller-publish waits while
     * another claim's controller-unpublish is pending. The caller holds the volume lock.
     */
    private Uni<Void> send(VolumeEntity volume, ClaimEntity claim, NodeCommandKind kind) {
        // the claim's node steps carry its controller steps; an unmount only while a controller-unpublish is owed
        boolean combined = snapshot(claim).combined()
                && (kind == NodeCommandKind.MOUNT || kind == NodeCommandKind.UNMOUNT && claim.controllerPublished);
        if ((kind != NodeCommandKind.CONTROLLER_PUBLISH && kind != NodeCommandKind.CONTROLLER_UNPUBLISH && !combined)
                || Phase.STORAGE_FENCING.name().equals(claim.phase)) {
            // A storage fence was decided with the volume's other claims on the node checked (StorageFence.decide).
            return write(volume, claim, kind, false);
        }
        return activeClaims(volume.volumeKey).chain(active -> {
            List<ClaimMachine.Peer> others = active.stream().filter(c -> !c.claimId.equals(claim.claimId))
                    .map(c -> new ClaimMachine.Peer(c.nodeId, Phase.valueOf(c.phase), c.controllerRequired)).toList();
            if (combined && kind == NodeCommandKind.UNMOUNT) {
                // The last claim of the volume on the node ends the publication; the worker checks its own record too.
                return write(volume, claim, kind, !ClaimMachine.controllerPublicationNeeded(claim.nodeId, others));
            }
            if (combined && ClaimMachine.controllerUnpublishPending(claim.nodeId, others)) {
                return apply(volume, claim, machine().controllerPublishDeferred(snapshot(claim), "another claim of volume "
                        + volume.volumeKey + " is controller-unpublishing it from node " + claim.nodeId));
            }
            if (combined) {
                return write(volume, claim, kind, true);
            }
            if (kind == NodeCommandKind.CONTROLLER_UNPUBLISH && ClaimMachine.controllerPublicationNeeded(claim.nodeId, others)) {
                return apply(volume, claim, machine().controllerUnpublishSkipped(snapshot(claim), "another claim of volume "
                        + volume.volumeKey + " on node " + claim.nodeId + " still uses the controller publication"));
            }
            if (kind == NodeCommandKind.CONTROLLER_PUBLISH && ClaimMachine.controllerUnpublishPending(claim.nodeId, others)) {
                return apply(volume, claim, machine().controllerPublishDeferred(snapshot(claim), "another claim of volume "
                        + volume.volumeKey + " is controller-unpublishing it from node " + claim.nodeId));
            }
            return write(volume, claim, kind, false);
        });
    }

    /** @param withController the mount or unmount carries the controller steps (issue 36 item 1) */
    private Uni<Void> write(VolumeEntity volume, ClaimEntity claim, NodeCommandKind kind, boolean combinedAsked) {
        return plugins.facts(volume.pluginId).chain(plugin -> {
            Instant now = Instant.now();
            boolean withController = combinedAsked;
            if (combinedAsked && kind == NodeCommandKind.UNMOUNT && !plugin.healthyControllerNodes().contains(claim.nodeId)) {
                // The node's own controller instance is gone: the unmount goes alone and the controller-unpublish
                // follows as a command of its own, to a healthy controller elsewhere (the claim's controller moved).
                claim.controllerNodeId = null;
                withController = false;
            }
            String target;
            if (kind == NodeCommandKind.MOUNT || kind == NodeCommandKind.UNMOUNT) {
                target = claim.nodeId;
            } else {
                if (claim.externalNodeId == null) {
                    var node = plugin.nodes().get(claim.nodeId);
                    claim.externalNodeId = node == null ? null : node.externalNodeId();
                }
                if (claim.externalNodeId == null) {
                    if (kind == NodeCommandKind.CONTROLLER_UNPUBLISH) {
                        return apply(volume, claim, machine().controllerUnpublishAbandoned(snapshot(claim),
                                "node " + claim.nodeId + " is unknown to plugin " + volume.pluginId + " (no external node id)"));
                    }
                    return apply(volume, claim, machine().failed(snapshot(claim), "NOT_FOUND",
                            "node " + claim.nodeId + " is unknown to plugin " + volume.pluginId + " (no external node id)"));
                }
                boolean storageFence = Phase.STORAGE_FENCING.name().equals(claim.phase);
                target = storageFence
                        ? StorageFence.controllerFor(plugin.healthyControllerNodes(), claim.controllerNodeId, claim.nodeId)
                        : StorageFence.controllerFor(plugin.healthyControllerNodes(), claim.controllerNodeId,
                                n -> StorageFence.leaseValid(fencing.book().entry(n), fencing.timers(), fencing.now()));
                if (target == null && storageFence) {
                    return storageFenceFailed(volume, claim, "UNAVAILABLE", "plugin " + volume.pluginId
                            + " has no healthy controller instance on a node other than " + claim.nodeId);
                }
                if (target == null) {
                    claim.commandId = null;
                    claim.retryAt = now.plus(settings.policy().backoff(Math.max(claim.attempt, 1)));
                    claim.lastError = "plugin " + volume.pluginId + " has no healthy controller instance; waiting for one";
                    LOG.warnf("claim %s: %s", claim.claimId, claim.lastError);
                    return Uni.createFrom().voidItem();
                }
                claim.controllerNodeId = target;
            }
            claim.pluginWaitSince = null;
            if (kind == NodeCommandKind.MOUNT) {
                // The fencing token: a lapse of an older epoch than the mount's is no fence of it.
                claim.leaseEpoch = fencing.book().epoch(claim.nodeId);
            }
            // Secrets re-sealed for the target node only (issue 20 item 4); without a sealing key for it, wait for one.
            io.csiorchestrator.events.SealedSecrets sealedForTarget;
            try {
                sealedForTarget = kind == NodeCommandKind.UNMOUNT && !withController ? null
                        : secrets.forNode(claim.sealedJson, target, claim.namespace, claim.volumeId);
            } catch (IllegalStateException | SecretSealer.SecretUnsealException e) {
                claim.commandId = null;
                claim.retryAt = now.plus(settings.policy().backoff(Math.max(claim.attempt, 1)));
                claim.lastError = e.getMessage();
                LOG.warnf("claim %s: %s", claim.claimId, claim.lastError);
                return Uni.createFrom().voidItem();
            }
            claim.commandId = claim.claimId + "." + kind.wire() + "." + claim.attempt + "." + UUID.randomUUID().toString().substring(0, 8);
            claim.commandNodeId = target;
            claim.commandDeadline = now.plus(settings.commandTimeout());
            claim.retryAt = null;
            boolean mountSide = kind == NodeCommandKind.MOUNT || kind == NodeCommandKind.UNMOUNT;
            boolean publishing = kind == NodeCommandKind.MOUNT || kind == NodeCommandKind.CONTROLLER_PUBLISH;
            NodeCommand command = new NodeCommand(claim.commandId, target, kind, claim.namespace, claim.volumeId,
                    volume.pluginId, volume.externalId, mountSide ? claim.allocationId : null,
                    publishing ? AccessMode.fromWire(claim.accessMode) : null,
                    publishing ? AttachmentMode.fromWire(claim.attachmentMode) : null,
                    // The controller publication is the (volume, node)'s: read-only by the volume's access mode, not the claim's.
                    kind == NodeCommandKind.CONTROLLER_PUBLISH
                            ? ClaimRules.controllerPublishReadOnly(AccessMode.fromWire(claim.accessMode)) : claim.readOnly,
                    kind == NodeCommandKind.MOUNT ? claim.fsType : null,
                    mountSide && !withController ? null : claim.externalNodeId,
                    publishing ? Json.map(volume.contextJson) : null,
                    kind == NodeCommandKind.MOUNT ? Json.map(claim.publishContextJson) : null,
                    sealedForTarget, now)
                    // Fencing tokens (issue 19): the target node's newest known lease epoch, the claim's generation.
                    .withFencing(fencing.book().epoch(target), claim.claimGeneration,
                            kind == NodeCommandKind.MOUNT ? Failover.effective(volume.failover).fencesMounts() : null);
            return outbox.add(withController ? command.withControllerSteps() : command, claim.tx);
        });
    }

    /** The claim latency ends at ready / failed, the release latency at released; counted after commit. */
    private void observeEnd(ClaimEntity claim, ClaimState state, Transition t) {
        String mode = claim.mode;
        switch (state) {
            case READY -> {
                Instant start = claim.requestedAt;
                observe(claim, () -> metrics.claimLatency(mode, "ready", start));
            }
            case FAILED -> {
                Instant start = claim.requestedAt;
                observe(claim, () -> metrics.claimLatency(mode, "failed", start));
            }
            case RELEASED -> {
                Instant start = claim.releaseRequestedAt;
                String outcome = t.effects().stream().anyMatch(e -> e instanceof ClaimMachine.Abandoned) ? "abandoned" : "released";
                observe(claim, () -> metrics.releaseLatency(outcome, start));
            }
            default -> {
            }
        }
    }

    // ---------------------------------------------------------------- plugin-status

    /**
     * Stores the plugin's status; once committed, claims waiting for one of its node instances that is healthy now
     * go on (event-driven: no claim polls its plugin).
     */
    public Uni<Void> onPluginStatus(String pluginId, PluginStatus status) {
        List<String> healthyNodes = status == null ? List.of() : status.nodes().stream()
                .filter(n -> Boolean.TRUE.equals(n.healthy())).map(PluginStatus.NodeInstance::nodeId).toList();
        return inTransaction(() -> plugins.apply(pluginId, status))
                .invoke(() -> placement.nodesChanged(pluginId))
                .chain(() -> waitingFor(pluginId, healthyNodes))
                .chain(ids -> {
                    Uni<Void> chain = Uni.createFrom().voidItem();
                    for (String id : ids) {
                        chain = chain.chain(() -> pluginMayBeBack(id));
                    }
                    return chain;
                });
    }

    /**
     * A volume's CSI condition on a node, as that node's worker saw it: stored (one row per volume
     * and node), unless a later one is stored already (the events of one node are ordered on their
     * partition; a redelivered older one changes nothing).
     */
    public Uni<Void> onVolumeCondition(NodeEvent event) {
        String volumeKey = VolumeEntity.key(event.namespace(), event.volumeId());
        String key = VolumeConditionEntity.key(volumeKey, event.nodeId());
        return inTransaction(() -> VolumeConditionEntity.<VolumeConditionEntity>findById(key).chain(found -> {
            if (found != null && found.since.isAfter(event.occurredAt())) {
                return Uni.createFrom().voidItem();
            }
            VolumeConditionEntity row = found != null ? found : new VolumeConditionEntity();
            row.conditionKey = key;
            row.volumeKey = volumeKey;
            row.nodeId = event.nodeId();
            row.pluginId = event.pluginId();
            row.abnormal = "abnormal".equals(event.details().get("condition"));
            String message = event.details().get("message");
            row.message = message == null ? null : message.length() > 1024 ? message.substring(0, 1024) : message;
            row.since = event.occurredAt();
            return (found != null ? Uni.createFrom().item(row) : row.persist()).replaceWithVoid();
        }));
    }

    // ---------------------------------------------------------------- helpers

    static Snapshot snapshot(ClaimEntity c) {
        return new Snapshot(Phase.valueOf(c.phase), c.attempt, c.controllerRequired, c.controllerPublished,
                c.releaseRequested, c.rollingBack, c.nodeId.equals(c.controllerNodeId));
    }

    /**
     * Issue 36 item 1: whether the claim's controller publication is made by a healthy controller instance of the
     * plugin on the claiming node itself (node-local drivers: the reference plugin, LVM-style drivers); then that
     * node's worker runs the controller steps in the claim's mount and unmount (one node command per attach and per
     * detach), and then it sets the claim's controller to that node. Otherwise the controller steps stay commands of their own.
     */
    private static boolean useControllerOnClaimingNode(ClaimEntity claim, PluginFacts plugin) {
        if (!claim.controllerRequired || claim.externalNodeId == null
                || !plugin.healthyControllerNodes().contains(claim.nodeId)) {
            return false;
        }
        claim.controllerNodeId = claim.nodeId;
        return true;
    }

    public static VolumeFacts facts(VolumeEntity v, List<ClaimEntity> claims) {
        List<HeldClaim> held = new ArrayList<>();
        for (ClaimEntity c : claims) {
            held.add(new HeldClaim(c.allocationId, c.nodeId, ClaimMode.fromWire(c.mode),
                    !Phase.RELEASE_WAIT.name().equals(c.phase) && (c.releaseRequested || c.rollingBack)));
        }
        return new VolumeFacts(v.namespace, v.id, v.pluginId, AccessMode.fromWire(v.accessMode),
                AttachmentMode.fromWire(v.attachmentMode),
                v.claimedAccessMode == null ? null : AccessMode.fromWire(v.claimedAccessMode),
                Json.map(v.topologyJson), v.deleting, held);
    }

    private static ClaimStatus status(ClaimRequested r, ClaimState state, String reason, String hostPath) {
        return new ClaimStatus(r.requestId(), r.namespace(), r.volumeId(), r.allocationId(), r.nodeId(), r.mode(), state,
                reason, hostPath, Instant.now());
    }

    private static ClaimStatus status(ClaimEntity c, ClaimState state, String reason) {
        boolean releaseSide = state == ClaimState.RELEASING || state == ClaimState.RELEASED;
        String requestId = releaseSide && c.releaseRequestId != null ? c.releaseRequestId : c.requestId;
        return new ClaimStatus(requestId, c.namespace, c.volumeId, c.allocationId, c.nodeId, ClaimMode.fromWire(c.mode), state,
                reason, state == ClaimState.READY ? c.hostPath : null, Instant.now());
    }
}
