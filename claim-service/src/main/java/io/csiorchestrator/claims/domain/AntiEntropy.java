package io.csiorchestrator.claims.domain;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.ReportedMount;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Anti-entropy, the pure part: compares one node's report of its actual state ({@link NodeStateReported}) with the
 * claims on that node and says which differences to repair. Kubelet's reconciler and Nomad's volumewatcher compare
 * desired and actual state the same way; here the desired state is claim-service's claims.
 *
 * <p>Differences, per volume and allocation on the node:
 * <ul>
 *   <li>{@link Kind#ORPHAN}: the node has a publication (reported mounted, or recorded done but missing) that no
 *       current claim holds: it is unmounted (and controller-unpublished where the plugin needs it).</li>
 *   <li>{@link Kind#MOUNT_LOST}: a READY claim's publication is reported missing or is not in the report at all:
 *       the claim is mounted again.</li>
 * </ul>
 * Claims stuck in a transition are not judged here: their command deadline re-drives them (the reconcile loop).
 *
 * <p>When in doubt, wait:
 * <ul>
 *   <li>a publication in an uncertain state ({@code mounting}, {@code unmounting}) is no difference;</li>
 *   <li>a claim (current or past) of the volume and allocation on the node whose last transition is not older than
 *       the report ({@code lastTransition >= takenAt}) makes the report too old to judge that pair: the claim was
 *       granted, mounted or released after the report was taken;</li>
 *   <li>a difference is repaired only once it has lasted {@code grace}: from the report that first showed it (or
 *       the claim's last transition, whichever is later) to the report at hand. The grace covers a mount or release
 *       being carried out right now, a worker still restoring after its start, and clock skew between nodes.</li>
 * </ul>
 * A repair never gives a node access it did not have: an orphan is only taken away, a lost mount is only given back
 * to the claim and node that hold it, so a single-writer volume cannot become writable on a second node.
 */
public final class AntiEntropy {

    /** What kind of difference. */
    public enum Kind {
        ORPHAN("orphan-unmounted"), MOUNT_LOST("mount-redriven");

        private final String code;

        Kind(String code) {
            this.code = code;
        }

        /** The metric tag and node-event detail, kebab-case. */
        public String code() {
            return code;
        }
    }

    /** One difference between a node's report and its claims: the key under which its age is kept. */
    public record Difference(Kind kind, String nodeId, String namespace, String volumeId, String allocationId) {
    }

    /**
     * A claim on the node, as far as anti-entropy needs it.
     *
     * @param lastTransition when the claim last changed phase (its {@code updated_at})
     * @param past           FREED or FAILED
     */
    public record ClaimView(String claimId, String namespace, String volumeId, String allocationId, Phase phase,
                            boolean past, Instant lastTransition) {
    }

    /** A repair to carry out, with the difference it repairs and a sentence for operators. */
    public sealed interface Repair permits UnmountOrphan, Remount {
        Difference difference();

        String why();
    }

    /** Unmount a publication no claim holds. */
    public record UnmountOrphan(Difference difference, String pluginId, String externalVolumeId, boolean readOnly,
                                AccessMode accessMode, AttachmentMode attachmentMode, String why) implements Repair {
    }

    /** Mount a READY claim again whose mount vanished. */
    public record Remount(Difference difference, String claimId, String why) implements Repair {
    }

    /**
     * The outcome of one report: the repairs due now, and every difference seen in it with the time it was first
     * seen (to be passed to the node's next report).
     */
    public record Plan(List<Repair> repairs, Map<Difference, Instant> pending) {
        public Plan {
            repairs = List.copyOf(repairs);
            pending = Map.copyOf(pending);
        }
    }

    private final Duration grace;

    public AntiEntropy(Duration grace) {
        this.grace = grace;
    }

    /**
     * Compares {@code report} with {@code claims}, every current claim of the report's node and every past one that
     * ended at or after the report was taken. {@code firstSeen}: the previous plan's {@link Plan#pending()} for the
     * node (empty when none).
     */
    public Plan plan(NodeStateReported report, List<ClaimView> claims, Map<Difference, Instant> firstSeen) {
        String node = report.nodeId();
        Instant takenAt = report.takenAt();
        List<Repair> repairs = new ArrayList<>();
        Map<Difference, Instant> pending = new LinkedHashMap<>();
        Map<String, NodeStateReported.Publication> reported = new LinkedHashMap<>();
        for (NodeStateReported.VolumeState volume : report.volumes()) {
            for (NodeStateReported.Publication p : volume.publications()) {
                reported.put(pairKey(volume.namespace(), volume.volumeId(), p.allocationId()), p);
                if (p.state() != ReportedMount.MOUNTED && p.state() != ReportedMount.MISSING) {
                    continue; // uncertain: in progress, or being released
                }
                List<ClaimView> pair = claimsOf(claims, volume.namespace(), volume.volumeId(), p.allocationId());
                if (tooOld(pair, takenAt) || pair.stream().anyMatch(c -> !c.past())) {
                    continue; // held by a current claim (its own mount, or it is mounting or releasing it)
                }
                Difference d = new Difference(Kind.ORPHAN, node, volume.namespace(), volume.volumeId(), p.allocationId());
                Instant since = firstSeen.getOrDefault(d, takenAt);
                pending.put(d, since);
                if (lasted(since, null, takenAt)) {
                    repairs.add(new UnmountOrphan(d, volume.pluginId(), volume.externalVolumeId(),
                            Boolean.TRUE.equals(p.readOnly()), p.accessMode(), p.attachmentMode(),
                            "node " + node + " reported volume " + volume.namespace() + "/" + volume.volumeId()
                                    + " " + p.state().wire() + " for allocation " + p.allocationId()
                                    + ", which holds no claim on it (since the report of " + since + "): unmounting it"));
                }
            }
        }
        for (ClaimView c : claims) {
            if (c.past() || c.phase() != Phase.READY) {
                continue;
            }
            NodeStateReported.Publication p = reported.get(pairKey(c.namespace(), c.volumeId(), c.allocationId()));
            if (p != null && p.state() != ReportedMount.MISSING) {
                continue; // mounted, or uncertain
            }
            if (tooOld(claimsOf(claims, c.namespace(), c.volumeId(), c.allocationId()), takenAt)) {
                continue;
            }
            Difference d = new Difference(Kind.MOUNT_LOST, node, c.namespace(), c.volumeId(), c.allocationId());
            Instant since = firstSeen.getOrDefault(d, takenAt);
            pending.put(d, since);
            if (lasted(since, c.lastTransition(), takenAt)) {
                repairs.add(new Remount(d, c.claimId(), "node " + node + " reported the mount of volume " + c.namespace()
                        + "/" + c.volumeId() + " for allocation " + c.allocationId() + " "
                        + (p == null ? "gone from its record" : "missing from its mount table")
                        + " (since the report of " + since + "): mounting it again"));
            }
        }
        return new Plan(repairs, pending);
    }

    /** Whether a difference seen since {@code since} (not before {@code lastTransition}) has lasted the grace. */
    private boolean lasted(Instant since, Instant lastTransition, Instant takenAt) {
        Instant from = lastTransition != null && lastTransition.isAfter(since) ? lastTransition : since;
        return !takenAt.isBefore(from.plus(grace));
    }

    /** Whether a claim of the pair changed at or after the report was taken: the report cannot judge the pair. */
    private static boolean tooOld(List<ClaimView> pair, Instant takenAt) {
        return pair.stream().anyMatch(c -> c.lastTransition() != null && !c.lastTransition().isBefore(takenAt));
    }

    private static List<ClaimView> claimsOf(List<ClaimView> claims, String namespace, String volumeId, String allocationId) {
        return claims.stream().filter(c -> c.namespace().equals(namespace) && c.volumeId().equals(volumeId)
                && c.allocationId().equals(allocationId)).toList();
    }

    private static String pairKey(String namespace, String volumeId, String allocationId) {
        return namespace + "/" + volumeId + "/" + allocationId;
    }
}
