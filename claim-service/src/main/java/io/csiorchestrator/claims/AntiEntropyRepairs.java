package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.AntiEntropy;
import io.csiorchestrator.claims.domain.AntiEntropy.ClaimView;
import io.csiorchestrator.claims.domain.AntiEntropy.Difference;
import io.csiorchestrator.claims.domain.AntiEntropy.Plan;
import io.csiorchestrator.claims.domain.AntiEntropy.Remount;
import io.csiorchestrator.claims.domain.AntiEntropy.Repair;
import io.csiorchestrator.claims.domain.AntiEntropy.UnmountOrphan;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimMachine.Transition;
import io.csiorchestrator.claims.domain.RepairBudget;
import io.csiorchestrator.claims.outbox.Outbox;
import io.csiorchestrator.claims.store.ClaimEntity;
import io.csiorchestrator.claims.store.ClaimStore;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Plugins;
import io.csiorchestrator.claims.store.VolumeEntity;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.claims.store.Transactions;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import jakarta.annotation.PostConstruct;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.jboss.logging.Logger;

/**
 * Anti-entropy, the I/O around {@link AntiEntropy}: for each {@code node-state} report, reads the node's claims,
 * asks the pure comparison for the repairs due and carries each out in its own transaction, with the volume locked
 * and the comparison made again on the claims as they are then (a claim-requested or mount-done of the volume may
 * have changed them meanwhile). Every repair writes, in that transaction, its claim's transition (a claim-status
 * record and the node command), a {@code reconcile} node event, and counts {@code csi.claims.repairs} once
 * committed. Repairs are rate-limited ({@link RepairBudget}); one put off waits for a later report.
 *
 * <p>Kept in memory, per node whose reports this instance reads: the newest report handled (an older or repeated
 * one changes nothing: at-least-once delivery) and when each difference was first seen. Another instance that
 * takes the partition over starts from nothing: it waits a whole grace period before repairing (when in doubt,
 * wait).
 */
@ApplicationScoped
public class AntiEntropyRepairs {

    private static final Logger LOG = Logger.getLogger(AntiEntropyRepairs.class);

    /** What this instance knows of one node: its newest report handled and its differences' first sightings. */
    private record Seen(Instant takenAt, long sequence, Map<Difference, Instant> pending) {
    }

    @Inject
    ClaimService claims;
    @Inject
    ClaimEffects effects;
    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;
    @Inject
    Outbox outbox;
    @Inject
    Plugins plugins;
    @Inject
    Transactions transactions;

    private final Map<String, Seen> nodes = new ConcurrentHashMap<>();
    private RepairBudget budget;

    @PostConstruct
    void init() {
        budget = new RepairBudget(settings.antiEntropy().repairsPerMinute(), settings.antiEntropy().repairBurst());
    }

    /** One node's report. */
    public Uni<Void> onReport(NodeStateReported report) {
        String node = report.nodeId();
        Seen seen = nodes.get(node);
        if (seen != null && !report.takenAt().isAfter(seen.takenAt())) {
            LOG.debugf("node-state of %s taken at %s (report %d) is not newer than the one handled (%s); ignored", node,
                    report.takenAt(), report.sequence(), seen.takenAt());
            return Uni.createFrom().voidItem();
        }
        AntiEntropy comparison = new AntiEntropy(settings.antiEntropy().grace());
        Map<Difference, Instant> firstSeen = seen == null ? Map.of() : seen.pending();
        return transactions.reading(() -> claimViews(node, report.takenAt(), null))
                        .chain(views -> {
                            Plan plan = comparison.plan(report, views, firstSeen);
                            return carryOut(report, comparison, plan).invoke(() ->
                                    nodes.put(node, new Seen(report.takenAt(), report.sequence(), plan.pending())));
                        });
    }

    private Uni<Void> carryOut(NodeStateReported report, AntiEntropy comparison, Plan plan) {
        if (plan.repairs().isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        return Multi.createFrom().iterable(plan.repairs())
                .onItem().transformToUniAndConcatenate(repair -> {
                    String kind = repair.difference().kind().code();
                    if (!budget.tryTake(Instant.now())) {
                        metrics.repairDeferred(kind);
                        LOG.infof("repair put off by the rate limit (%s): %s", kind, repair.why());
                        return Uni.createFrom().voidItem();
                    }
                    return repair(report, comparison, plan.pending(), repair);
                })
                .collect().last().replaceWithVoid();
    }

    /** One repair, in its own transaction with the volume locked, if the claims as they are now still ask for it. */
    private Uni<Void> repair(NodeStateReported report, AntiEntropy comparison, Map<Difference, Instant> firstSeen,
                             Repair repair) {
        Difference d = repair.difference();
        String volumeKey = VolumeEntity.key(d.namespace(), d.volumeId());
        Tx tx = Tx.untraced();
        return claims.inTransaction(tx, () -> claims.lockVolume(volumeKey)
                .chain(volume -> claimViews(d.nodeId(), report.takenAt(), volumeKey).chain(views -> {
                    Plan again = comparison.plan(onlyVolume(report, d.namespace(), d.volumeId()), views, firstSeen);
                    if (again.repairs().stream().noneMatch(r -> r.difference().equals(d))) {
                        LOG.debugf("repair no longer due once the volume was locked: %s", repair.why());
                        return Uni.createFrom().item(false);
                    }
                    Uni<Boolean> done = repair instanceof Remount remount
                            ? remount(volume, remount, tx)
                            : unmountOrphan(volume, (UnmountOrphan) repair, tx);
                    return done.call(started -> started ? outbox.add(nodeEvent(report, repair), tx) : Uni.createFrom().voidItem());
                })).invoke(started -> {
                    if (started) {
                        LOG.warnf("anti-entropy repair (%s): %s", d.kind().code(), repair.why());
                        tx.afterCommit(() -> metrics.repair(d.kind().code()));
                    }
                })).replaceWithVoid();
    }

    private Uni<Boolean> remount(VolumeEntity volume, Remount repair, Tx tx) {
        if (volume == null) {
            return Uni.createFrom().item(false);
        }
        return ClaimStore.current().claim(repair.claimId()).chain(claim -> {
            if (claim == null || claim.past) {
                return Uni.createFrom().item(false);
            }
            Transition t = claims.machine().mountLost(ClaimRows.snapshot(claim), repair.why());
            if (t.effects().isEmpty()) {
                return Uni.createFrom().item(false);
            }
            claim.tx = tx;
            claim.requestedAt = null; // not a new claim: the claim latency is not timed again
            return effects.apply(volume, claim, t).replaceWith(true);
        });
    }

    /**
     * An orphan of a registered volume becomes a claim of its own, torn down like a release (so it has claim-status
     * records, retries and, where owed, the controller-unpublish). It counts as a claim of the volume meanwhile: no
     * other node can be granted a single-writer volume while the orphan's mount may still be writable. An orphan of
     * a volume that is not registered any more gets a bare unmount command and a releasing status.
     */
    private Uni<Boolean> unmountOrphan(VolumeEntity volume, UnmountOrphan repair, Tx tx) {
        Difference d = repair.difference();
        ClaimMode mode = repair.readOnly() ? ClaimMode.READ : ClaimMode.WRITE;
        String requestId = "anti-entropy-" + UUID.randomUUID();
        if (volume == null) {
            Instant now = Instant.now();
            NodeCommand unmount = new NodeCommand("anti-entropy." + UUID.randomUUID(), d.nodeId(), NodeCommandKind.UNMOUNT,
                    d.namespace(), d.volumeId(), repair.pluginId(), repair.externalVolumeId(), d.allocationId(), null, null,
                    repair.readOnly(), null, null, null, null, null, now);
            return outbox.add(unmount, tx)
                    .chain(() -> outbox.add(new ClaimStatus(requestId, d.namespace(), d.volumeId(), d.allocationId(),
                            d.nodeId(), mode, ClaimState.RELEASING, repair.why() + " (the volume is not registered:"
                            + " unmount only)", null, now), tx))
                    .replaceWith(true);
        }
        return plugins.facts(volume.pluginId).chain(plugin -> {
            Instant now = Instant.now();
            ClaimEntity c = new ClaimEntity();
            c.claimId = UUID.randomUUID().toString();
            c.volumeKey = volume.volumeKey;
            c.namespace = volume.namespace;
            c.volumeId = volume.id;
            c.allocationId = d.allocationId();
            c.nodeId = d.nodeId();
            c.mode = mode;
            c.requestId = requestId;
            c.releaseRequestId = requestId;
            c.accessMode = repair.accessMode() != null ? repair.accessMode() : AccessMode.fromWire(volume.accessMode);
            c.attachmentMode = repair.attachmentMode() != null ? repair.attachmentMode()
                    : AttachmentMode.fromWire(volume.attachmentMode);
            c.readOnly = repair.readOnly();
            c.controllerRequired = plugin.controllerRequired();
            var node = plugin.nodes().get(d.nodeId());
            c.externalNodeId = node == null ? null : node.externalNodeId();
            c.fsType = volume.fsType;
            c.sealedJson = volume.sealedJson;
            c.publishContextJson = "{}";
            c.phase = Phase.UNMOUNTING;
            c.attempt = 1;
            c.createdAt = now;
            c.updatedAt = now;
            c.tx = tx;
            // The controller-unpublish is owed where the plugin needs a controller; whether it is sent is decided when it
            // is due, by the rule of every claim's (ClaimMachine.controllerPublicationNeeded): no other claim of the
            // volume on that node still needs the publication (decided now, a claim leaving meanwhile would leak it).
            Transition t = claims.machine().orphanFound(plugin.controllerRequired(), plugin.controllerRequired(), repair.why());
            ClaimStore.current().insert(c);
            return effects.apply(volume, c, t).replaceWith(true);
        });
    }

    private static NodeEvent nodeEvent(NodeStateReported report, Repair repair) {
        Difference d = repair.difference();
        Map<String, String> details = new LinkedHashMap<>();
        details.put("repair", d.kind().code());
        details.put("reportSequence", Long.toString(report.sequence()));
        details.put("reportTakenAt", report.takenAt().toString());
        if (repair instanceof Remount remount) {
            details.put("claimId", remount.claimId());
        }
        String message = repair instanceof Remount ? "Anti-entropy: mount lost, mounting again"
                : "Anti-entropy: orphan mount, unmounting";
        String pluginId = repair instanceof UnmountOrphan orphan ? orphan.pluginId() : null;
        String why = repair.why().length() > 8000 ? repair.why().substring(0, 8000) : repair.why();
        details.put("why", why);
        return new NodeEvent(d.nodeId(), null, NodeEventKind.RECONCILE, message, pluginId, d.namespace(), d.volumeId(),
                d.allocationId(), null, null, details, Instant.now());
    }

    private static NodeStateReported onlyVolume(NodeStateReported report, String namespace, String volumeId) {
        return new NodeStateReported(report.nodeId(), report.sequence(), report.takenAt(), report.volumes().stream()
                .filter(v -> v.namespace().equals(namespace) && v.volumeId().equals(volumeId)).toList());
    }

    /** The node's current claims and those that changed at or after {@code takenAt} (of one volume, or all). */
    private static Uni<List<ClaimView>> claimViews(String nodeId, Instant takenAt, String volumeKey) {
        return SessionSql.select(volumeKey == null ? CLAIM_VIEWS : CLAIM_VIEWS + " AND volume_key = $3",
                        volumeKey == null ? new Object[] {nodeId, takenAt} : new Object[] {nodeId, takenAt, volumeKey})
                .map(rows -> rows.stream().map(r -> new ClaimView((String) r[0], (String) r[1], (String) r[2], (String) r[3],
                        Phase.valueOf((String) r[4]), (Boolean) r[5], SessionSql.instant(r[6]))).toList());
    }

    private static final String CLAIM_VIEWS = "SELECT claim_id, namespace, volume_id, allocation_id, phase, past, updated_at"
            + " FROM claims WHERE node_id = $1 AND (NOT past OR updated_at >= $2)";
}
