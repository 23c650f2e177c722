package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimMachine.Snapshot;
import io.csiorchestrator.claims.domain.ClaimRules;
import io.csiorchestrator.claims.domain.ClaimRules.VolumeFacts;
import io.csiorchestrator.claims.domain.Failover;
import io.csiorchestrator.claims.domain.StorageFence;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * Claims waiting for another claim's release (RELEASE_WAIT, issue 19): decided again when a claim of their volume ends
 * (event-driven, in that transaction), or when their pending timeout falls due.
 */
@ApplicationScoped
public class PendingClaims {

    private static final Logger LOG = Logger.getLogger(PendingClaims.class);

    @Inject
    ClaimEffects effects;
    @Inject
    ClaimService service;
    @Inject
    Plugins plugins;
    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;
    @Inject
    Fencing fencing;

    /** What a claim pending on {@code blocker}'s release waits for, e.g. "waiting for node-1's lease to lapse: 41 s left". */
    String releaseWaitText(VolumeEntity volume, ClaimEntity blocker) {
        Phase phase = blocker.phase;
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
    Uni<Void> wakePending(VolumeEntity volume, Tx tx) {
        return ClaimService.activeClaims(volume.volumeKey).map(active -> active.stream()
                .filter(c -> c.phase == Phase.RELEASE_WAIT).toList()).chain(pending -> {
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
    Uni<Void> decidePending(VolumeEntity volume, ClaimEntity claim, boolean due) {
        if (claim.past || claim.phase != Phase.RELEASE_WAIT) {
            return Uni.createFrom().voidItem();
        }
        return ClaimService.activeClaims(volume.volumeKey).chain(claims -> {
            List<ClaimEntity> others = claims.stream().filter(c -> !c.claimId.equals(claim.claimId)).toList();
            VolumeFacts othersFacts = ClaimRows.facts(volume, others);
            return plugins.facts(volume.pluginId)
                    .chain(known -> plugins.withVolumesHeld(known, othersFacts, volume.volumeKey, claim.nodeId))
                    .chain(plugin -> {
            var decision = ClaimRules.decide(othersFacts, plugin, new ClaimRules.Request(claim.allocationId,
                            claim.nodeId, claim.mode, claim.accessMode,
                            claim.attachmentMode, io.csiorchestrator.events.MountSupport.ALL, false),
                    new ClaimRules.PluginGrace(Instant.now(), settings.pluginGrace()));
            String mode = claim.mode.wire();
            Instant requestedAt = claim.requestedAt;
            if (decision instanceof ClaimRules.WaitForRelease w) {
                if (!due) {
                    return Uni.createFrom().voidItem();
                }
                ClaimEntity blocker = others.stream().filter(c -> c.allocationId.equals(w.blocker().allocationId()))
                        .findFirst().orElseThrow();
                String reason = w.reason().replace(" pending: ", " rejected: still pending after "
                        + io.csiorchestrator.claims.domain.FenceTimers.text(settings.pendingTimeout()) + ", ") + "; " + releaseWaitText(volume, blocker);
                ClaimRows.observe(claim, () -> {
                    metrics.decision("rejected", "release-pending-timeout");
                    metrics.claimLatency(mode, "rejected", requestedAt);
                });
                LOG.infof("claim rejected: %s", reason);
                return effects.apply(volume, claim, service.machine().releaseWaitRejected(ClaimRows.snapshot(claim), reason));
            }
            if (decision instanceof ClaimRules.Reject reject) {
                ClaimRows.observe(claim, () -> {
                    metrics.decision("rejected", reject.code());
                    metrics.claimLatency(mode, "rejected", requestedAt);
                });
                LOG.infof("claim rejected: %s", reject.reason());
                return effects.apply(volume, claim, service.machine().releaseWaitRejected(ClaimRows.snapshot(claim), reject.reason()));
            }
            // The release ended: the claim starts (or waits for its node's plugin), with the plugin as it is now.
            claim.controllerRequired = plugin.controllerRequired();
            var node = plugin.nodes().get(claim.nodeId);
            claim.externalNodeId = node == null ? null : node.externalNodeId();
            claim.retryAt = null;
            claim.lastError = null;
            if (others.isEmpty()) {
                volume.claimedAccessMode = claim.accessMode.wire();
            }
            Snapshot fresh = Snapshot.fresh(claim.controllerRequired, ClaimRows.useControllerOnClaimingNode(claim, plugin));
            if (decision instanceof ClaimRules.WaitForPlugin wait) {
                return effects.apply(volume, claim, service.machine().waitForPlugin(fresh, wait.since(), wait.until(), wait.reason(), true));
            }
            ClaimRows.observe(claim, () -> metrics.decision("accepted", "release-ended"));
            LOG.infof("claim accepted: volume %s: %s claim by allocation %s on node %s, after the release it waited for",
                    claim.volumeKey, mode, claim.allocationId, claim.nodeId);
            return effects.apply(volume, claim, service.machine().releaseWaitOver(ClaimRows.snapshot(claim)));
                    });
        });
    }
}
