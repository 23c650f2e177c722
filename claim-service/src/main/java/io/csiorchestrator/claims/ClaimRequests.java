package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimMachine.Snapshot;
import io.csiorchestrator.claims.domain.ClaimMachine.Transition;
import io.csiorchestrator.claims.domain.ClaimRules;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.domain.ClaimRules.VolumeFacts;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.ClaimStore;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.MountOptions;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;
import io.csiorchestrator.events.Violations;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.jboss.logging.Logger;

/**
 * claim-requested: a claim or a release of a volume by an allocation on a node, decided by {@link ClaimRules} under the
 * volume's lock, answered once per request id (a redelivered request changes nothing), and started as a new claim's
 * first transition ({@link ClaimEffects#apply}).
 */
@ApplicationScoped
public class ClaimRequests {

    private static final Logger LOG = Logger.getLogger(ClaimRequests.class);

    @Inject
    ClaimEffects effects;
    @Inject
    ClaimService service;
    @Inject
    PendingClaims pendingClaims;
    @Inject
    Outbox outbox;
    @Inject
    Plugins plugins;
    @Inject
    Secrets secrets;
    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;
    /** The placement topic (issue 34): told after commit when a claim on a node begins or ends, or a plugin changes. */
    @Inject
    io.csiorchestrator.claims.placement.PlacementPublisher placement;

    /**
     * A claim-requested record. {@code requestedAt}: the event's time (CloudEvents ce_time, else the
     * record's timestamp), the start of the claim and release latencies; {@code tx}: its trace context.
     */
    public Uni<Void> onClaimRequested(ClaimRequested request, Instant requestedAt, Tx tx) {
        return service.inTransaction(tx, () -> claimRequestedStep(request, requestedAt, tx));
    }

    /**
     * The {@code rejected} answer to a claim request a known scheduler signed but that was refused (issue 33 item 4,
     * messaging.RefusedClaimRequests), once per record: its {@code ce_id} is remembered (hashed, with the handled
     * request ids and purged with them) so a copy of the record gets no second answer. The request id is not taken:
     * the request sent again correctly (a new ce_id, a fresh ce_time) is handled as new.
     */
    public Uni<Void> answerRefused(ClaimStatus answer, String ceId, Tx tx) {
        String marker = "refused ce_id sha256:" + sha256(ceId);
        return service.inTransaction(tx, () -> takeRequestId(marker)
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

    /** Records {@code requestId} as handled, in the caller's transaction: 1 the first time, 0 when it was before. */
    private static Uni<Integer> takeRequestId(String requestId) {
        return SessionSql.update("INSERT INTO handled_requests (request_id, handled_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                requestId, Instant.now());
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
        return takeRequestId(request.requestId())
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
        return service.lockVolume(key).chain(volume -> {
            if (volume == null) {
                if (request.mode() != ClaimMode.RELEASE) {
                    rejected(request, requestedAt, tx, "volume-not-registered");
                }
                return outbox.add(ClaimRows.status(request, ClaimState.REJECTED, "volume " + key + ": " + request.mode().wire()
                        + " claim by allocation " + request.allocationId() + " rejected: the volume is not registered", null), tx);
            }
            return ClaimService.activeClaims(key).chain(claims -> request.mode() == ClaimMode.RELEASE
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
            return outbox.add(ClaimRows.status(request, ClaimState.RELEASED, "allocation " + request.allocationId()
                    + " holds no claim on volume " + volume.volumeKey + " (nothing to release)", null), tx);
        }
        claim.tx = tx;
        if (claim.releaseRequestId == null) {
            // The first release request is the one the teardown's RELEASED answers; a later one does not take it over.
            claim.releaseRequestId = request.requestId();
        }
        // A claim mounting with a host path was answered ready before (anti-entropy mounts it again).
        Transition t = service.machine().release(ClaimRows.snapshot(claim), claim.hostPath != null);
        if (t.effects().isEmpty()) {
            // Already tearing down (a release, a rollback or a forced delete): answered, not started twice.
            return outbox.add(ClaimRows.status(request, ClaimState.RELEASING, "the claim of allocation " + request.allocationId()
                    + " on volume " + volume.volumeKey + " is already being released (" + claim.phase.name().toLowerCase() + ")", null), tx);
        }
        if (claim.releaseRequestedAt == null) {
            claim.releaseRequestedAt = requestedAt;
        }
        return effects.apply(volume, claim, t);
    }

    private Uni<Void> claim(ClaimRequested request, Instant requestedAt, Tx tx, VolumeEntity volume, List<ClaimEntity> claims) {
        VolumeFacts facts = ClaimRows.facts(volume, claims);
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
                return outbox.add(ClaimRows.status(request, ClaimState.REJECTED, reject.reason(), null), tx);
            }
            if (decision instanceof ClaimRules.AlreadyHeld) {
                ClaimEntity held = claims.stream().filter(c -> c.allocationId.equals(request.allocationId())).findFirst().orElseThrow();
                boolean ready = held.phase == Phase.READY;
                tx.afterCommit(() -> metrics.decision("accepted", "already-held"));
                return outbox.add(ClaimRows.status(request, ready ? ClaimState.READY : ClaimState.ACCEPTED,
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
            ClaimEntity claim = granted(request, requestedAt, tx, volume, plugin, flags);
            if (claims.isEmpty()) {
                volume.claimedAccessMode = request.accessMode().wire();
            }
            Snapshot fresh = Snapshot.fresh(claim.controllerRequired, ClaimRows.useControllerOnClaimingNode(claim, plugin));
            return applyToNew(volume, claim, wait == null ? service.machine().start(fresh)
                    : service.machine().waitForPlugin(fresh, wait.since(), wait.until(), wait.reason(), true));
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
        String reason = pendingClaims.releaseWaitText(volume, blocker) + " (" + pending.reason() + ")";
        LOG.infof("claim pending: %s", reason);
        tx.afterCommit(() -> metrics.decision("waiting", "release-pending"));
        ClaimEntity claim = granted(request, requestedAt, tx, volume, plugin, flags);
        return applyToNew(volume, claim, service.machine().waitForRelease(
                Snapshot.fresh(claim.controllerRequired), Instant.now().plus(settings.pendingTimeout()), reason));
    }

    /**
     * The first transition of a new claim, then its row: inserted once, at the end of the transaction, with the state and
     * command the transition gave it ({@link ClaimStore#insert}; an ended claim is added first). Nothing
     * in {@link #apply} reads the claim's own row before the claim ends, and a first transition never ends it (a nested
     * one, e.g. a command that cannot be written, may: then the row is inserted ended, or not at all when its volume
     * was deleted with it).
     */
    private Uni<Void> applyToNew(VolumeEntity volume, ClaimEntity claim, Transition first) {
        String pluginId = volume.pluginId;
        ClaimRows.observe(claim, () -> placement.nodesChanged(pluginId)); // the node holds one more claim (maybe one more volume)
        if (first.next().phase().past()) {
            ClaimStore.current().insert(claim);
            return effects.apply(volume, claim, first);
        }
        return effects.apply(volume, claim, first).chain(() -> claim.past && volume.deleting
                // ended at once (a nested failure) as the last claim of a deleting volume: apply deleted the volume and
                // its claims, as it would have deleted this row had it been inserted first
                ? Uni.createFrom().voidItem()
                : Uni.createFrom().voidItem().invoke(() -> ClaimStore.current().insert(claim)));
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

    /**
     * The new claim of {@code request}, started or pending: a write claim takes the volume's write generation, bumped
     * per grant (its fencing token); the volume is updated now.
     */
    private ClaimEntity granted(ClaimRequested request, Instant requestedAt, Tx tx, VolumeEntity volume, PluginFacts plugin,
                                RequestedFlags flags) {
        ClaimEntity claim = newClaim(request, flags.flags(), volume, plugin);
        if (request.mode() == ClaimMode.WRITE) {
            volume.writeGeneration++;
            claim.claimGeneration = volume.writeGeneration;
        }
        claim.requestedAt = requestedAt;
        claim.tx = tx;
        volume.updatedAt = Instant.now();
        return claim;
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
        c.mode = request.mode();
        c.requestId = request.requestId();
        c.accessMode = request.accessMode();
        c.attachmentMode = request.attachmentMode();
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
        c.phase = Phase.CONTROLLER_PUBLISHING;
        c.attempt = 0;
        c.createdAt = now;
        c.updatedAt = now;
        return c;
    }
}
