package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.StorageFence;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.ClaimStore;
import io.csiorchestrator.claims.store.Json;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommandKind;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import org.jboss.logging.Logger;

/**
 * mount-done: a node's answer to a claim's command, applied to the claim waiting for that command id (under its volume's
 * lock; an answer to a command no claim waits for any more changes nothing).
 */
@ApplicationScoped
public class MountAnswers {

    private static final Logger LOG = Logger.getLogger(MountAnswers.class);

    @Inject
    ClaimEffects effects;
    @Inject
    ClaimService service;
    @Inject
    PluginWaits pluginWaits;
    @Inject
    ClaimFences fences;
    @Inject
    Plugins plugins;
    @Inject
    ClaimSettings settings;

    /** A mount-done record in a transaction of its own. */
    public Uni<Void> onMountDone(MountDone done, Tx tx) {
        return service.inTransaction(tx, () -> mountDoneStep(done, tx));
    }

    /** {@link #onMountDone}'s work inside the caller's transaction (one record of a batch). */
    public Uni<Void> mountDoneStep(MountDone done, Tx tx) {
        // Find the volume of the command, lock the volume, then read the claim: a concurrent update of the
        // same volume (a claim-requested on another partition) waits for this transaction or vice versa.
        return Uni.createFrom().deferred(() -> ClaimStore.current().lockVolumeOfCommand(done.commandId())).chain(volume -> {
            if (volume == null) {
                LOG.debugf("mount-done for command %s matches no pending command (already handled or unknown)", done.commandId());
                return Uni.createFrom().voidItem();
            }
            return ClaimStore.current().claimByCommand(done.commandId()).chain(claim -> {
                if (claim == null) {
                    return Uni.createFrom().voidItem();
                }
                claim.tx = tx;
                return stepDone(volume, claim, done);
            });
        });
    }

    /**
     * An answer of an older lease epoch than its node's newest ({@code newest}), dead-lettered as stale: a node's report
     * of an ended epoch changes no claim (issue 19). When a claim still waits for that very command, it asks again under
     * the newest epoch after its backoff, since nothing else would until the command timeout (ChaosIT on 7a65ae6,
     * 2026-12-01: node-1's worker was killed, two mounts gave up for want of a lease and were rolled back under epoch 1;
     * the worker unmounted and answered under epoch 1 60 ms before epoch 2's grant reached it, claim-service had seen
     * the grant, and both claims stayed unmounting past the run's end). Asking again is safe (every command is
     * idempotent on the worker) and bounded: one per stale answer, none while no answer comes.
     */
    public Uni<Void> onStaleAnswer(MountDone done, long newest, Tx tx) {
        return service.inTransaction(tx, () -> Uni.createFrom().deferred(() -> ClaimStore.current().lockVolumeOfCommand(done.commandId()))
                .chain(volume -> volume == null ? Uni.createFrom().<ClaimEntity>nullItem() : ClaimStore.current().claimByCommand(done.commandId()))
                .invoke(claim -> {
                    if (claim == null || claim.past || !done.commandId().equals(claim.commandId)) {
                        return;
                    }
                    java.time.Duration backoff = settings.policy().backoff(Math.max(claim.attempt, 1));
                    claim.commandId = null;
                    claim.commandDeadline = null;
                    claim.retryAt = Instant.now().plus(backoff);
                    claim.lastError = "the answer of " + done.nodeId() + " to " + done.commandId() + " came under lease epoch "
                            + done.leaseEpoch() + ", older than its newest (" + newest + "): asked again under epoch " + newest;
                    LOG.infof("claim %s (volume %s, node %s): %s in %s", claim.claimId, claim.volumeKey, claim.nodeId,
                            claim.lastError, backoff);
                })
                .replaceWithVoid());
    }

    private Uni<Void> stepDone(VolumeEntity volume, ClaimEntity claim, MountDone done) {
        claim.commandId = null;
        claim.commandDeadline = null;
        if (claim.phase == Phase.STORAGE_FENCING) {
            // Only a successful ControllerUnpublish is a fence; NOT_FOUND or any other failure is none.
            return done.succeeded()
                    ? effects.apply(volume, claim, service.machine().storageFenced(ClaimRows.snapshot(claim), StorageFence.fencedNote(claim.nodeId)))
                    : fences.storageFenceFailed(volume, claim, done.errorCode(), done.errorMessage());
        }
        if (claim.detachNote != null && claim.phase == Phase.CONTROLLER_UNPUBLISHING
                && (done.succeeded() || "NOT_FOUND".equals(done.errorCode()))) {
            // the controller side of a claim whose node side was assumed detached: its RELEASED says why
            return effects.apply(volume, claim, service.machine().controllerUnpublishedAfterDetach(ClaimRows.snapshot(claim), claim.detachNote));
        }
        if (done.succeeded()) {
            if (done.kind() == NodeCommandKind.CONTROLLER_PUBLISH) {
                claim.publishContextJson = Json.write(done.publishContext());
            }
            if (done.kind() == NodeCommandKind.MOUNT) {
                if (done.hostPath() == null) {
                    return effects.apply(volume, claim, service.machine().failed(ClaimRows.snapshot(claim), "INTERNAL",
                            "the worker of node " + done.nodeId() + " reported the mount done without a host path"));
                }
                claim.hostPath = done.hostPath();
            }
            return effects.apply(volume, claim, service.machine().succeeded(ClaimRows.snapshot(claim), done.hostPath()));
        }
        String message = done.errorMessage();
        Phase phase = claim.phase;
        if ((done.kind() == NodeCommandKind.MOUNT || done.kind() == NodeCommandKind.UNMOUNT)
                && PLUGIN_AWAY_CODES.contains(done.errorCode())) {
            // The node's plugin did not answer: wait for it within the grace instead of using up attempts.
            return plugins.facts(volume.pluginId).chain(plugin -> pluginWaits.onPluginOutage(volume, claim, plugin, true,
                    done.errorCode() + ": " + message));
        }
        if (VolumeOperationsCodes.PLUGIN_NOT_FOUND.equals(done.errorCode())) {
            // A controller instance that just went away: retried (with another healthy controller when there is one).
            return effects.apply(volume, claim, service.machine().failed(ClaimRows.snapshot(claim), "UNAVAILABLE", message));
        }
        if (phase == Phase.CONTROLLER_UNPUBLISHING && claim.attempt >= settings.maxPublishAttempts()
                && !"NOT_FOUND".equals(done.errorCode())) {
            // Nomad 25349: a controller-unpublish for a node that is gone is abandoned, not retried forever.
            return volumePlugin(volume).chain(pluginId -> plugins.goneSince(pluginId, claim.nodeId,
                    Instant.now().minus(settings.nodeGoneTimeout()))).chain(gone -> gone
                    ? effects.apply(volume, claim, service.machine().controllerUnpublishAbandoned(ClaimRows.snapshot(claim), "node " + claim.nodeId
                            + " is gone and the controller-unpublish keeps failing: " + done.errorCode() + ": " + message))
                    : effects.apply(volume, claim, service.machine().failed(ClaimRows.snapshot(claim), done.errorCode(), message)));
        }
        return effects.apply(volume, claim, service.machine().failed(ClaimRows.snapshot(claim), done.errorCode(), message));
    }

    private static Uni<String> volumePlugin(VolumeEntity volume) {
        return Uni.createFrom().item(volume.pluginId);
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
}
