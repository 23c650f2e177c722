package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.Failover;
import io.csiorchestrator.claims.domain.LeaseBook;
import io.csiorchestrator.claims.domain.StorageFence;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Transactions;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * Claims on a node that may be unreachable: command timeouts, node leases that ended ({@link LeaseBook}), FENCED
 * reports, storage fences ({@link StorageFence}) and operator detaches. A node side is assumed detached only when the
 * lease book says the node surely lapsed and fenced; otherwise the release waits and says why.
 */
@ApplicationScoped
public class ClaimFences {

    private static final Logger LOG = Logger.getLogger(ClaimFences.class);

    @Inject
    ClaimEffects effects;
    @Inject
    ClaimService service;
    @Inject
    Plugins plugins;
    @Inject
    Fencing fencing;
    @Inject
    ReconcileSchedule reconcileSchedule;
    @Inject
    Transactions transactions;

    /** A claim's command got no answer in time. */
    public Uni<Void> commandTimedOut(String claimId) {
        return service.onLockedClaim(claimId, (volume, claim) -> {
            if (claim.past || claim.commandId == null || claim.commandDeadline == null || claim.commandDeadline.isAfter(Instant.now())) {
                return Uni.createFrom().voidItem();
            }
            LOG.warnf("command %s of claim %s got no answer in time", claim.commandId, claim.claimId);
            claim.commandId = null;
            claim.commandDeadline = null;
            if (claim.phase == Phase.STORAGE_FENCING) {
                return storageFenceFailed(volume, claim, "DEADLINE_EXCEEDED", "no answer within the command timeout");
            }
            if (claim.phase != Phase.UNMOUNTING) {
                return effects.apply(volume, claim, service.machine().timedOut(ClaimRows.snapshot(claim)));
            }
            // An unmount without an answer: the node is unreachable, a storage-fencing plugin can cut it off now.
            return storageFenceDecision(volume, claim, StorageFence.Unreachable.UNMOUNT_TIMED_OUT).chain(decision ->
                    decision instanceof StorageFence.Fence fence ? storageFence(volume, claim, fence)
                            : effects.apply(volume, claim, service.machine().timedOut(ClaimRows.snapshot(claim))));
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
        return plugins.facts(volume.pluginId).chain(plugin -> ClaimService.activeClaims(volume.volumeKey).map(active -> {
            List<ClaimMachine.Peer> others = active.stream().filter(c -> !c.claimId.equals(claim.claimId))
                    .map(c -> new ClaimMachine.Peer(c.nodeId, c.phase, c.controllerRequired)).toList();
            var node = plugin.nodes().get(claim.nodeId);
            String external = claim.externalNodeId != null ? claim.externalNodeId : node == null ? null : node.externalNodeId();
            return StorageFence.decide(new StorageFence.Facts(volume.pluginId, fencingPlugins,
                    Failover.effective(volume.failover), plugin.controllerRequired(), claim.phase,
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
        return effects.apply(volume, claim, service.machine().storageFence(ClaimRows.snapshot(claim), fence.reason()));
    }

    /**
     * The storage fence failed or got no answer: never a fence. Not tried again for this claim; the release says so
     * with the lease wait it falls back to.
     */
    Uni<Void> storageFenceFailed(VolumeEntity volume, ClaimEntity claim, String code, String message) {
        claim.storageFence = "failed";
        LeaseBook.Verdict verdict = fencing.book().verdict(claim.nodeId, claim.leaseEpoch == null ? 0 : claim.leaseEpoch,
                fencing.timers(), fencing.now());
        claim.fenceWait = waitKind(verdict);
        String reason = StorageFence.failedReason(claim.nodeId, code, message) + ": " + verdict.reason();
        LOG.warnf("claim %s (volume %s): %s", claim.claimId, claim.volumeKey, reason);
        return effects.apply(volume, claim, service.machine().storageFenceFailed(ClaimRows.snapshot(claim), reason));
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
        return service.onLockedClaim(claimId, (volume, claim) -> {
            Phase phase = claim.phase;
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
                return effects.apply(volume, claim, service.machine().fenceWait(ClaimRows.snapshot(claim), reason));
            });
        });
    }

    /**
     * node-leases said {@code nodeId}'s lease ended: each of its claims is checked at once ({@link #fenceCheck}), so a
     * release says without delay that it now waits for the node's fence; the reconciler checks again until it is due.
     */
    public Uni<Void> fenceCheckNode(String nodeId) {
        return transactions.reading(() -> SessionSql.strings(
                        "SELECT claim_id FROM claims WHERE NOT past AND node_id = $1 AND phase IN ('CONTROLLER_PUBLISHING',"
                                + " 'MOUNTING', 'READY', 'UNMOUNTING') ORDER BY created_at", nodeId))
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
            chain = chain.chain(() -> service.inTransaction(() -> service.lockVolume(volumeKey).chain(volume -> volume == null
                    ? Uni.createFrom().voidItem()
                    : ClaimService.activeClaims(volumeKey).map(active -> active.stream().filter(c -> c.allocationId
                            .equals(allocationId) && c.nodeId.equals(nodeId)).findFirst().orElse(null)).chain(claim -> {
                        if (claim == null || (claim.leaseEpoch != null && claim.leaseEpoch > epoch)) {
                            return Uni.createFrom().voidItem();
                        }
                        claim.tx = Tx.untraced();
                        String reason = nodeId + " fenced at epoch " + epoch + ": mount removed";
                        LOG.warnf("claim %s (volume %s): %s", claim.claimId, volumeKey, reason);
                        if (java.util.EnumSet.of(Phase.MOUNTING, Phase.READY, Phase.UNMOUNTING).contains(claim.phase)) {
                            claim.detachNote = reason; // its mount removed: the RELEASED after the controller side says so
                        }
                        if (claim.phase != Phase.CONTROLLER_UNPUBLISHING) {
                            claim.commandId = null;
                            claim.commandDeadline = null;
                            claim.retryAt = null;
                        }
                        return effects.apply(volume, claim, service.machine().fenced(ClaimRows.snapshot(claim), reason));
                    }))));
        }
        return chain;
    }

    /** The claim's node is surely fenced: its node side is assumed detached ({@link #detachLocked}), said in the log. */
    private Uni<Void> detach(VolumeEntity volume, ClaimEntity claim, String why) {
        LOG.warnf("claim %s: %s", claim.claimId, why);
        return detachLocked(volume, claim, why, claim.tx);
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
        return service.releaseLocked(volume, claim, tx);
    }

    /** Operator detach of a claim on a node. Call inside {@code tx}'s transaction with the volume locked. */
    public Uni<Void> detachLocked(VolumeEntity volume, ClaimEntity claim, String why, Tx tx) {
        claim.tx = tx;
        if (claim.phase != Phase.CONTROLLER_UNPUBLISHING) {
            claim.detachNote = why; // the node side assumed detached: the RELEASED after the controller side says why
            claim.commandId = null;
            claim.commandDeadline = null;
            claim.retryAt = null;
        }
        return effects.apply(volume, claim, service.machine().nodeDetached(ClaimRows.snapshot(claim), why));
    }
}
