package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimMachine.Snapshot;
import io.csiorchestrator.claims.domain.ClaimRules.HeldClaim;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.domain.ClaimRules.VolumeFacts;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The claim's stored row as the pure domain sees it ({@link Snapshot}, {@link VolumeFacts}), the claim-status records
 * made from it, and its observations held until commit.
 */
public final class ClaimRows {

    private ClaimRows() {
    }

    /** Runs {@code observation} when the claim's transaction commits (at once when the claim has none). */
    static void observe(ClaimEntity claim, Runnable observation) {
        if (claim.tx != null) {
            claim.tx.afterCommit(observation);
        } else {
            observation.run();
        }
    }

    /** The claim's checkpoint as {@link io.csiorchestrator.claims.domain.ClaimMachine} reads it. */
    static Snapshot snapshot(ClaimEntity c) {
        return new Snapshot(c.phase, c.attempt, c.controllerRequired, c.controllerPublished,
                c.releaseRequested, c.rollingBack, c.nodeId.equals(c.controllerNodeId));
    }

    /**
     * Issue 36 item 1: whether the claim's controller publication is made by a healthy controller instance of the
     * plugin on the claiming node itself (node-local drivers: the reference plugin, LVM-style drivers); then that
     * node's worker runs the controller steps in the claim's mount and unmount (one node command per attach and per
     * detach), and then it sets the claim's controller to that node. Otherwise the controller steps stay commands of their own.
     */
    static boolean useControllerOnClaimingNode(ClaimEntity claim, PluginFacts plugin) {
        if (!claim.controllerRequired || claim.externalNodeId == null
                || !plugin.healthyControllerNodes().contains(claim.nodeId)) {
            return false;
        }
        claim.controllerNodeId = claim.nodeId;
        return true;
    }

    /** The volume and its active claims as {@link io.csiorchestrator.claims.domain.ClaimRules} reads them. */
    public static VolumeFacts facts(VolumeEntity v, List<ClaimEntity> claims) {
        List<HeldClaim> held = new ArrayList<>();
        for (ClaimEntity c : claims) {
            held.add(new HeldClaim(c.allocationId, c.nodeId, c.mode,
                    c.phase != Phase.RELEASE_WAIT && (c.releaseRequested || c.rollingBack)));
        }
        return new VolumeFacts(v.namespace, v.id, v.pluginId, AccessMode.fromWire(v.accessMode),
                AttachmentMode.fromWire(v.attachmentMode),
                v.claimedAccessMode == null ? null : AccessMode.fromWire(v.claimedAccessMode),
                Json.map(v.topologyJson), v.deleting, held);
    }

    /** The answer to request {@code r} that starts no claim (rejected, already held, nothing to release). */
    static ClaimStatus status(ClaimRequested r, ClaimState state, String reason, String hostPath) {
        return new ClaimStatus(r.requestId(), r.namespace(), r.volumeId(), r.allocationId(), r.nodeId(), r.mode(), state,
                reason, hostPath, Instant.now());
    }

    /** The claim's claim-status; a release's answers carry the release request's id. */
    static ClaimStatus status(ClaimEntity c, ClaimState state, String reason) {
        boolean releaseSide = state == ClaimState.RELEASING || state == ClaimState.RELEASED;
        String requestId = releaseSide && c.releaseRequestId != null ? c.releaseRequestId : c.requestId;
        return new ClaimStatus(requestId, c.namespace, c.volumeId, c.allocationId, c.nodeId, c.mode, state,
                reason, state == ClaimState.READY ? c.hostPath : null, Instant.now());
    }
}
