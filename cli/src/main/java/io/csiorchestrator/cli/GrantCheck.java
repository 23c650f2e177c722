package io.csiorchestrator.cli;

import io.csiorchestrator.cli.ChaosCheck.Answer;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * {@code granted-against-rules}, judged at grant time from claim-status alone (issue 36). claim-status is keyed by
 * volume id, so one volume's records are in one partition, in the order claim-service's outbox published them. Read
 * in that order, they say who holds the volume at each moment:
 *
 * <ul>
 *   <li>a claim is <em>granted</em> by its first READY, or by an ACCEPTED without a reason (ClaimMachine.start: the
 *       claim starts publishing, its controller-publish or mount is sent). An ACCEPTED with a reason is no grant: it
 *       answers a repeated request of a claim already there ("already holds this claim", possibly a pending one) or
 *       announces the remount of a READY claim (anti-entropy). PENDING is the wait (RELEASE_WAIT): nothing is sent;</li>
 *   <li>a grant makes its allocation a holder until a RELEASED or FAILED record of that allocation. RELEASING does
 *       not end it (the teardown, or the wait for a lapsed node's fence, is under way: the volume may still be
 *       mounted there). A rolled-back claim's teardown after its FAILED is not on claim-status; its hold counts as
 *       ended at the FAILED (a grant during a rollback is not seen here);</li>
 *   <li>a grant of claim B that the rules forbid beside a holder A ({@link #conflicts}), or a writer of a read-only
 *       mode, is a violation. B answered PENDING and granted after A's RELEASED or FAILED is the designed wait.</li>
 * </ul>
 *
 * A grant of an allocation already holding is a repeat (the READY after its ACCEPTED, a duplicate), and a grant under
 * a request id whose hold already ended is a republished record (the outbox publishes at least once), not a new hold.
 * Records without a volume or an offset (hand-made elsewhere) are not judged. Pure: no I/O.
 */
final class GrantCheck {

    private GrantCheck() {
    }

    /** A grant against the rules: its record's timestamp (for the fault's window) and what it was. */
    record Grant(long at, String detail) {
    }

    /** A holder of a volume as claim-status showed it. */
    private record Holder(String requestId, String alloc, String node, ClaimMode mode, long grantOffset,
                          String lastStatus) {
        Holder with(String status) {
            return new Holder(requestId, alloc, node, mode, grantOffset, status);
        }

        @Override
        public String toString() {
            return alloc + " (" + mode.wire() + " on " + node + ", granted at offset " + grantOffset + ", last " + lastStatus
                    + ")";
        }
    }

    /** Whether {@code a} grants its claim: its READY, or the ACCEPTED of its start (no reason). */
    static boolean grants(Answer a) {
        return a.mode() != ClaimMode.RELEASE
                && (a.state() == ClaimState.READY || a.state() == ClaimState.ACCEPTED && a.reason() == null);
    }

    /** Whether {@code a} ends a hold of its allocation: RELEASED or FAILED. */
    static boolean ends(Answer a) {
        return a.state() == ClaimState.RELEASED || a.state() == ClaimState.FAILED;
    }

    /**
     * Whether the claim rules forbid a {@code claim} on {@code node} beside a holder ({@code heldNode},
     * {@code heldMode}) of a volume in {@code mode}: a second writer in a single-writer mode (on any node), any claim
     * on another node in a single-node mode. (A writer of a read-only mode is forbidden alone: {@link #writerForbidden}.)
     */
    static boolean conflicts(AccessMode mode, String heldNode, ClaimMode heldMode, String node, ClaimMode claim) {
        if (mode.singleWriter() && claim == ClaimMode.WRITE && heldMode == ClaimMode.WRITE) {
            return true;
        }
        return !mode.multiNode() && !java.util.Objects.equals(heldNode, node);
    }

    /** Whether a writer is forbidden by the mode itself (the reader-only modes). */
    static boolean writerForbidden(AccessMode mode, ClaimMode claim) {
        return claim == ClaimMode.WRITE && !mode.allowsWrite();
    }

    /**
     * The grants against the rules in {@code statuses} (claim-status records with volume, allocation, node, mode,
     * partition and offset); {@code modes}: each volume's access mode (a volume not in it is not judged).
     */
    static List<Grant> check(List<Answer> statuses, Map<String, AccessMode> modes) {
        Map<String, List<Answer>> byVolume = new TreeMap<>();
        for (Answer a : statuses) {
            if (a.volume() != null && a.alloc() != null && a.offset() >= 0 && modes.containsKey(a.volume())) {
                byVolume.computeIfAbsent(a.volume(), k -> new ArrayList<>()).add(a);
            }
        }
        List<Grant> found = new ArrayList<>();
        byVolume.forEach((volume, records) -> found.addAll(checkVolume(volume, modes.get(volume), records)));
        found.sort(Comparator.comparingLong(Grant::at));
        return found;
    }

    private static List<Grant> checkVolume(String volume, AccessMode mode, List<Answer> records) {
        List<Answer> ordered = new ArrayList<>(records);
        ordered.sort(Comparator.comparingInt(Answer::partition).thenComparingLong(Answer::offset));
        Map<String, Holder> holders = new LinkedHashMap<>();
        Set<String> ended = new HashSet<>();
        List<Grant> found = new ArrayList<>();
        for (Answer a : ordered) {
            Holder held = holders.get(a.alloc());
            if (ends(a)) {
                if (held != null) {
                    holders.remove(a.alloc());
                    ended.add(held.requestId());
                }
                continue;
            }
            if (!grants(a)) {
                if (held != null) {
                    holders.put(a.alloc(), held.with(a.state().wire() + (a.reason() == null ? "" : " '" + a.reason() + "'")
                            + " at offset " + a.offset()));
                }
                continue;
            }
            if (held != null || ended.contains(a.requestId())) {
                continue; // a repeat of a held claim, or a republished record of an ended one
            }
            List<Holder> against = holders.values().stream()
                    .filter(h -> conflicts(mode, h.node(), h.mode(), a.node(), a.mode())).toList();
            if (writerForbidden(mode, a.mode()) || !against.isEmpty()) {
                found.add(new Grant(a.at(), "volume " + volume + " (" + mode.wire() + "): " + a.mode().wire()
                        + " claim " + a.alloc() + " on " + a.node() + " (request " + a.requestId() + ") granted ("
                        + a.state().wire() + " at offset " + a.offset() + ") "
                        + (against.isEmpty() ? "though the mode allows no writer"
                        : "while still held by " + against + " (no released or failed before it)")));
            }
            holders.put(a.alloc(), new Holder(a.requestId(), a.alloc(), a.node(), a.mode(), a.offset(),
                    a.state().wire() + " at offset " + a.offset()));
        }
        return found;
    }
}
