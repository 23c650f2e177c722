package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.ClaimMachine;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimMachine.Snapshot;
import io.csiorchestrator.claims.domain.ClaimMachine.Transition;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.ClaimStore;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.VolumeConditionEntity;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.function.Supplier;

/**
 * The transactions and locks every claim step runs in, and the steps with no handler of their own. Each step is one
 * transaction: the volume row is locked first (SELECT ... FOR UPDATE, {@link ClaimStore}), so claim-requested (partitioned by volume) and
 * mount-done (partitioned by node) updates of one volume are serialised; the claim's new checkpoint and the events it
 * causes (claim-status, node-commands) are written to the outbox in the same transaction and sent by this process
 * after the commit ({@link Outbox#inTransaction}). {@code messaging.RecordBatches} runs a poll's steps in one transaction ({@link #inOneTransaction}),
 * their volumes locked up front in key order ({@link #lockVolumes}, {@link #lockVolumesOfCommands}).
 *
 * <p>The claim's steps, around the pure {@link ClaimMachine} (the decision of what comes next) and {@link ClaimEffects}
 * (its effects carried out against the store and the outbox):
 * <ul>
 * <li>{@link ClaimRequests}: claim-requested, a claim or a release;</li>
 * <li>{@link MountAnswers}: mount-done, a node's answer to a command;</li>
 * <li>{@link PendingClaims}: claims waiting for another claim's release, woken when it ends;</li>
 * <li>{@link PluginWaits}: claims waiting for their node's plugin instance, and plugin-status;</li>
 * <li>{@link ClaimFences}: leases, fences, storage fences, command timeouts and operator detaches;</li>
 * <li>here: a retry falling due ({@link #retryDue}), a forced release ({@link #releaseLocked}), volume conditions.</li>
 * </ul>
 */
@ApplicationScoped
public class ClaimService {

    @Inject
    ClaimEffects effects;
    @Inject
    PendingClaims pendingClaims;
    @Inject
    PluginWaits pluginWaits;
    @Inject
    Outbox outbox;
    @Inject
    Plugins plugins;
    @Inject
    ClaimSettings settings;

    ClaimMachine machine() {
        return new ClaimMachine(settings.policy());
    }

    /** Runs {@code work} in a transaction without a traced cause; its outbox rows are sent once it committed. */
    public <T> Uni<T> inTransaction(Supplier<Uni<T>> work) {
        return inTransaction(Tx.untraced(), work);
    }

    /**
     * Runs {@code work} in a transaction caused by {@code tx}'s input; once it committed, its outbox rows are sent
     * ({@link Outbox#inTransaction}: publish after commit) and the transaction's observations (latency timers, decision
     * counters) recorded.
     */
    public <T> Uni<T> inTransaction(Tx tx, Supplier<Uni<T>> work) {
        return outbox.inTransaction(work).invoke(tx::committed).onFailure().invoke(tx::rolledBack);
    }

    /**
     * Runs {@code work} (the steps of several inputs, {@code txs} theirs) in one transaction; once it committed, its
     * outbox rows are sent and every input's observations recorded; when it fails, none of them (a retry records them anew).
     */
    public Uni<Void> inOneTransaction(List<Tx> txs, Supplier<Uni<Void>> work) {
        return outbox.inTransaction(work).invoke(() -> txs.forEach(Tx::committed))
                .onFailure().invoke(() -> txs.forEach(Tx::rolledBack));
    }

    /** The volume, locked for this transaction ({@link ClaimStore}); null when it is not registered. */
    public Uni<VolumeEntity> lockVolume(String volumeKey) {
        return Uni.createFrom().deferred(() -> ClaimStore.current().lockVolume(volumeKey));
    }

    /**
     * Locks the volumes of {@code volumeKeys} in key order, in one statement, and reads their current claims in a
     * second: the transaction of a batch takes every lock it needs up front and in the same order as any other batch,
     * so two batches never deadlock on each other.
     */
    public static Uni<Void> lockVolumes(java.util.Collection<String> volumeKeys) {
        return Uni.createFrom().deferred(() -> ClaimStore.current().lockVolumes(volumeKeys));
    }

    /** {@link #lockVolumes} for the volumes of the claims waiting for {@code commandIds}' answers. */
    public static Uni<Void> lockVolumesOfCommands(java.util.Collection<String> commandIds) {
        return Uni.createFrom().deferred(() -> ClaimStore.current().lockVolumesOfCommands(commandIds));
    }

    /** The volume's current claims, oldest first, as this transaction left them. Call with the volume locked. */
    public static Uni<List<ClaimEntity>> activeClaims(String volumeKey) {
        return Uni.createFrom().deferred(() -> ClaimStore.current().activeClaims(volumeKey));
    }

    /** Sends the current step of a claim whose retry is due. */
    public Uni<Void> retryDue(String claimId) {
        return onLockedClaim(claimId, (volume, claim) -> {
            if (claim.past || claim.commandId != null || claim.retryAt == null || claim.retryAt.isAfter(Instant.now())) {
                return Uni.createFrom().voidItem();
            }
            if (claim.phase == Phase.RELEASE_WAIT) {
                return pendingClaims.decidePending(volume, claim, true);
            }
            if (claim.pluginWaitSince != null) {
                return plugins.facts(volume.pluginId).chain(plugin -> pluginWaits.onPluginOutage(volume, claim, plugin, false, null));
            }
            NodeCommandKind kind = ClaimMachine.kindOf(claim.phase);
            return kind == null ? Uni.createFrom().voidItem() : effects.send(volume, claim, kind);
        });
    }

    /** Releases a claim (force delete). Call inside {@code tx}'s transaction with the volume locked. */
    public Uni<Void> releaseLocked(VolumeEntity volume, ClaimEntity claim, Tx tx) {
        claim.tx = tx;
        if (claim.releaseRequestedAt == null && !claim.releaseRequested && !claim.rollingBack) {
            claim.releaseRequestedAt = Instant.now();
        }
        // A claim being rolled back is torn down already; a forced delete adds no release answer to it.
        Snapshot s = ClaimRows.snapshot(claim);
        return effects.apply(volume, claim, claim.rollingBack ? new Transition(s, List.of())
                : machine().release(s, claim.hostPath != null));
    }

    /** Work on one claim, its volume locked. */
    interface ClaimWork {
        Uni<Void> run(VolumeEntity volume, ClaimEntity claim);
    }

    /** Runs {@code work} on the claim {@code claimId} in a transaction of its own, its volume locked; nothing when it is gone. */
    Uni<Void> onLockedClaim(String claimId, ClaimWork work) {
        Tx tx = Tx.untraced();
        return inTransaction(tx, () -> ClaimStore.current().lockVolumeOfClaim(claimId).chain(volume -> volume == null
                ? Uni.createFrom().voidItem()
                : ClaimStore.current().claim(claimId).chain(claim -> {
                    if (claim == null) {
                        return Uni.createFrom().voidItem();
                    }
                    claim.tx = tx;
                    return work.run(volume, claim);
                })));
    }

    /**
     * A volume's CSI condition on a node, as that node's worker saw it: stored (one row per volume
     * and node), unless a later one is stored already (the events of one node are ordered on their
     * partition; a redelivered older one changes nothing).
     */
    public Uni<Void> onVolumeCondition(NodeEvent event) {
        String volumeKey = VolumeEntity.key(event.namespace(), event.volumeId());
        String key = VolumeConditionEntity.key(volumeKey, event.nodeId());
        return inTransaction(() -> VolumeConditionEntity.byKey(key).chain(found -> {
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
            return found != null ? row.update() : row.insert();
        }));
    }
}
