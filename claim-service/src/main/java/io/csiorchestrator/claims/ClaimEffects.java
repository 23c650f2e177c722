package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimMachine.Snapshot;
import io.csiorchestrator.claims.domain.ClaimMachine.Transition;
import io.csiorchestrator.claims.domain.ClaimRules;
import io.csiorchestrator.claims.domain.Failover;
import io.csiorchestrator.claims.domain.StorageFence;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.ClaimStore;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.SecretSealer;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.jboss.logging.Logger;

/**
 * Carries out a {@link ClaimMachine} transition inside the caller's transaction, the volume locked: stores the claim's
 * new checkpoint and runs its effects (claim-status and node commands into the outbox, retries and waits as due times
 * on the claim's row), then, when the claim ended, frees the volume or wakes the claims pending on it.
 */
@ApplicationScoped
public class ClaimEffects {

    private static final Logger LOG = Logger.getLogger(ClaimEffects.class);

    @Inject
    ClaimService service;
    @Inject
    PendingClaims pendingClaims;
    @Inject
    ClaimFences fences;
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
    @Inject
    Fencing fencing;
    /** The placement topic (issue 34): told after commit when a claim on a node begins or ends, or a plugin changes. */
    @Inject
    io.csiorchestrator.claims.placement.PlacementPublisher placement;
    /** Resize on mount (issue 14): looked up lazily, the provisions depend on the claims too. */
    @Inject
    jakarta.enterprise.inject.Instance<io.csiorchestrator.claims.provision.ProvisionService> provisions;

    /** Stores {@code t} as the claim's new checkpoint and carries out its effects (in the caller's transaction). */
    Uni<Void> apply(VolumeEntity volume, ClaimEntity claim, Transition t) {
        Instant now = Instant.now();
        boolean wasPending = claim.phase == Phase.RELEASE_WAIT;
        boolean becameReady = t.next().phase() == Phase.READY && claim.phase != Phase.READY;
        Snapshot s = t.next();
        if (s.phase() != claim.phase || claim.attempt != s.attempt()) {
            LOG.infof("claim %s (volume %s, allocation %s, node %s): %s -> %s (attempt %d)", claim.claimId, claim.volumeKey,
                    claim.allocationId, claim.nodeId, claim.phase, s.phase(), s.attempt());
        }
        claim.phase = s.phase();
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
                chain = chain.chain(() -> outbox.add(ClaimRows.status(claim, e.state(), e.reason()), claim.tx));
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
            ClaimRows.observe(claim, () -> placement.nodesChanged(pluginId)); // the node may hold one volume less
            claim.pluginWaitSince = null;
            claim.commandId = null;
            claim.commandDeadline = null;
            claim.retryAt = null;
            return ClaimService.activeClaims(volume.volumeKey)
                    .chain(remaining -> {
                        if (!remaining.isEmpty()) {
                            // A claim pending on this one's release goes on now (not when a timer fires).
                            return wasPending ? Uni.createFrom().voidItem() : pendingClaims.wakePending(volume, claim.tx);
                        }
                        volume.claimedAccessMode = null;
                        if (volume.deleting) {
                            LOG.infof("volume %s deleted after its last claim was released", volume.volumeKey);
                            return ClaimStore.current().deleteVolume(volume);
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
    Uni<Void> send(VolumeEntity volume, ClaimEntity claim, NodeCommandKind kind) {
        // the claim's node steps carry its controller steps; an unmount only while a controller-unpublish is owed
        boolean combined = ClaimRows.snapshot(claim).combined()
                && (kind == NodeCommandKind.MOUNT || kind == NodeCommandKind.UNMOUNT && claim.controllerPublished);
        if ((kind != NodeCommandKind.CONTROLLER_PUBLISH && kind != NodeCommandKind.CONTROLLER_UNPUBLISH && !combined)
                || claim.phase == Phase.STORAGE_FENCING) {
            // A storage fence was decided with the volume's other claims on the node checked (StorageFence.decide).
            return write(volume, claim, kind, false);
        }
        return ClaimService.activeClaims(volume.volumeKey).chain(active -> {
            List<ClaimMachine.Peer> others = active.stream().filter(c -> !c.claimId.equals(claim.claimId))
                    .map(c -> new ClaimMachine.Peer(c.nodeId, c.phase, c.controllerRequired)).toList();
            if (combined && kind == NodeCommandKind.UNMOUNT) {
                // The last claim of the volume on the node ends the publication; the worker checks its own record too.
                return write(volume, claim, kind, !ClaimMachine.controllerPublicationNeeded(claim.nodeId, others));
            }
            if (combined && ClaimMachine.controllerUnpublishPending(claim.nodeId, others)) {
                return apply(volume, claim, service.machine().controllerPublishDeferred(ClaimRows.snapshot(claim), "another claim of volume "
                        + volume.volumeKey + " is controller-unpublishing it from node " + claim.nodeId));
            }
            if (combined) {
                return write(volume, claim, kind, true);
            }
            if (kind == NodeCommandKind.CONTROLLER_UNPUBLISH && ClaimMachine.controllerPublicationNeeded(claim.nodeId, others)) {
                return apply(volume, claim, service.machine().controllerUnpublishSkipped(ClaimRows.snapshot(claim), "another claim of volume "
                        + volume.volumeKey + " on node " + claim.nodeId + " still uses the controller publication"));
            }
            if (kind == NodeCommandKind.CONTROLLER_PUBLISH && ClaimMachine.controllerUnpublishPending(claim.nodeId, others)) {
                return apply(volume, claim, service.machine().controllerPublishDeferred(ClaimRows.snapshot(claim), "another claim of volume "
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
                        return apply(volume, claim, service.machine().controllerUnpublishAbandoned(ClaimRows.snapshot(claim),
                                "node " + claim.nodeId + " is unknown to plugin " + volume.pluginId + " (no external node id)"));
                    }
                    return apply(volume, claim, service.machine().failed(ClaimRows.snapshot(claim), "NOT_FOUND",
                            "node " + claim.nodeId + " is unknown to plugin " + volume.pluginId + " (no external node id)"));
                }
                boolean storageFence = claim.phase == Phase.STORAGE_FENCING;
                target = storageFence
                        ? StorageFence.controllerFor(plugin.healthyControllerNodes(), claim.controllerNodeId, claim.nodeId)
                        : StorageFence.controllerFor(plugin.healthyControllerNodes(), claim.controllerNodeId,
                                n -> StorageFence.leaseValid(fencing.book().entry(n), fencing.timers(), fencing.now()));
                if (target == null && storageFence) {
                    return fences.storageFenceFailed(volume, claim, "UNAVAILABLE", "plugin " + volume.pluginId
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
                    publishing ? claim.accessMode : null,
                    publishing ? claim.attachmentMode : null,
                    // The controller publication is the (volume, node)'s: read-only by the volume's access mode, not the claim's.
                    kind == NodeCommandKind.CONTROLLER_PUBLISH
                            ? ClaimRules.controllerPublishReadOnly(claim.accessMode) : claim.readOnly,
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
        String mode = claim.mode.wire();
        switch (state) {
            case READY -> {
                Instant start = claim.requestedAt;
                ClaimRows.observe(claim, () -> metrics.claimLatency(mode, "ready", start));
            }
            case FAILED -> {
                Instant start = claim.requestedAt;
                ClaimRows.observe(claim, () -> metrics.claimLatency(mode, "failed", start));
            }
            case RELEASED -> {
                Instant start = claim.releaseRequestedAt;
                String outcome = t.effects().stream().anyMatch(e -> e instanceof ClaimMachine.Abandoned) ? "abandoned" : "released";
                ClaimRows.observe(claim, () -> metrics.releaseLatency(outcome, start));
            }
            default -> {
            }
        }
    }
}
