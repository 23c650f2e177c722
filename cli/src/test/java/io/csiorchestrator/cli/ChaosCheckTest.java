package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.cli.ChaosCheck.Answer;
import io.csiorchestrator.cli.ChaosCheck.EndState;
import io.csiorchestrator.cli.ChaosCheck.Fault;
import io.csiorchestrator.cli.ChaosCheck.Held;
import io.csiorchestrator.cli.ChaosCheck.NodeEv;
import io.csiorchestrator.cli.ChaosCheck.Report;
import io.csiorchestrator.cli.ChaosCheck.Request;
import io.csiorchestrator.cli.ChaosCheck.Violation;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeEventKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link ChaosCheck} over hand-made sequences of requests, claim-status answers and node events. */
class ChaosCheckTest {

    private static final AccessMode SW = AccessMode.MULTI_NODE_SINGLE_WRITER;
    private static final long LIMIT = 30_000;
    /** One fault: window 0..100 s, killed at 10 s, back at 20 s. */
    private static final List<Fault> FAULT = List.of(new Fault("worker-kill", 0, 10_000, 20_000, 100_000));

    private final List<Request> requests = new ArrayList<>();
    private final List<Answer> answers = new ArrayList<>();
    private final List<NodeEv> events = new ArrayList<>();
    /** The next claim-status offset: the records of these tests are on one partition, in the order added. */
    private long offset;

    private void claim(String id, String volume, String alloc, String node, ClaimMode mode, long sentAt) {
        claimIn(SW, id, volume, alloc, node, mode, sentAt);
    }

    private void claimIn(AccessMode accessMode, String id, String volume, String alloc, String node, ClaimMode mode,
                         long sentAt) {
        requests.add(new Request(id, volume, alloc, node, mode, accessMode, sentAt));
    }

    private void release(String id, String volume, String alloc, long sentAt) {
        requests.add(new Request(id, volume, alloc, null, ClaimMode.RELEASE, SW, sentAt));
    }

    private void answer(String id, ClaimState state, long at) {
        answer(id, state, state == ClaimState.REJECTED || state == ClaimState.FAILED
                || state == ClaimState.PENDING ? "no" : null, at);
    }

    /**
     * A claim-status record of request {@code id} as claim-service writes it: the claim's volume, allocation, node and
     * mode, the next offset of the volume's partition.
     */
    private void answer(String id, ClaimState state, String reason, long at) {
        Request r = requests.stream().filter(q -> q.id().equals(id)).findFirst().orElseThrow();
        String node = r.node() != null ? r.node() : requests.stream()
                .filter(q -> q.isClaim() && q.volume().equals(r.volume()) && q.alloc().equals(r.alloc()))
                .map(Request::node).findFirst().orElse(null);
        answers.add(new Answer(id, state, reason, at, r.volume(), r.alloc(), node, r.mode(), 0, offset++));
    }

    private void event(String node, NodeEventKind kind, String volume, String alloc, long at) {
        events.add(new NodeEv(node, kind, volume, alloc, true, at));
    }

    /**
     * A run in which every claim is answered once, the converging claims on both nodes come after the fault's end,
     * and the writers of a volume are mounted one after the other: a clean sequence everything else is built on.
     */
    private void cleanRun() {
        claim("c1", "v1", "a1", "node-1", ClaimMode.WRITE, 1_000);
        answer("c1", ClaimState.ACCEPTED, 1_100);
        answer("c1", ClaimState.READY, 1_500);
        event("node-1", NodeEventKind.MOUNT, "v1", "a1", 1_400);
        release("r1", "v1", "a1", 12_000); // sent during the fault, answered once the worker was back
        answer("r1", ClaimState.RELEASING, 12_100);
        event("node-1", NodeEventKind.UNMOUNT, "v1", "a1", 21_000);
        answer("r1", ClaimState.RELEASED, 21_500);
        claim("c2", "v1", "a2", "node-2", ClaimMode.WRITE, 22_000);
        event("node-2", NodeEventKind.MOUNT, "v1", "a2", 22_400);
        answer("c2", ClaimState.READY, 22_500);
        claim("c3", "v2", "a3", "node-1", ClaimMode.READ, 23_000);
        answer("c3", ClaimState.READY, 24_000);
    }

    private Report check(EndState end) {
        return ChaosCheck.check(requests, answers, events, FAULT, end, LIMIT);
    }

    private static List<String> kinds(Report report) {
        return report.violations().stream().map(Violation::kind).toList();
    }

    /** The clean run passes: no violation, the row counts its requests and answers, the slowest and the convergence. */
    @Test
    void cleanRunHasNoViolationAndItsRowCountsRequestsAnswersSlowestAndConvergence() {
        cleanRun();
        Report report = check(EndState.clean());
        assertEquals(List.of(), report.violations());
        ChaosCheck.Row row = report.rows().get(0);
        assertEquals("worker-kill", row.fault());
        assertEquals(4, row.requests());
        assertEquals(4, row.answers());
        assertEquals(0, row.failed());
        assertEquals(9_500, row.slowestMillis()); // r1: sent at 12.0 s, released at 21.5 s
        assertEquals(4_000, row.convergeMillis()); // node-1's first ready after the end: c3 at 24.0 s
        assertEquals(ChaosCheck.FINAL, report.rows().get(1).fault());
    }

    /** A request with no final answer (only accepted) is reported unanswered, under the fault it was sent in. */
    @Test
    void requestWithoutFinalAnswerIsUnanswered() {
        cleanRun();
        claim("c4", "v3", "a4", "node-2", ClaimMode.READ, 30_000);
        answer("c4", ClaimState.ACCEPTED, 30_100);
        Report report = check(EndState.clean());
        assertEquals(List.of("unanswered"), kinds(report));
        assertEquals("worker-kill", report.violations().get(0).fault());
        assertTrue(report.violations().get(0).detail().contains("c4"), report.violations().toString());
    }

    /** Two different final answers to one claim (ready, then failed) are a violation; the same one twice is not. */
    @Test
    void twoDifferentFinalAnswersAreAViolationTheSameTwiceIsNot() {
        cleanRun();
        answer("c3", ClaimState.READY, 24_500); // a duplicate (at least once across a failover)
        assertEquals(List.of(), check(EndState.clean()).violations());
        answer("c3", ClaimState.FAILED, 25_000);
        assertEquals(List.of("answered-twice-differently"), kinds(check(EndState.clean())));
    }

    /**
     * A failed claim's rollback answers released under the claim's request id: not a second final answer; the
     * failed answer is counted in its row.
     */
    @Test
    void releasedAfterAFailedClaimIsNotASecondAnswerAndTheFailureIsCounted() {
        cleanRun();
        claim("c5", "v3", "a5", "node-1", ClaimMode.READ, 30_000);
        answer("c5", ClaimState.FAILED, 30_500);
        answer("c5", ClaimState.RELEASED, 31_000);
        Report report = check(EndState.clean());
        assertEquals(List.of(), report.violations());
        assertEquals(1, report.rows().get(0).failed());
        assertTrue(Chaos.table(report).lines().anyMatch(l -> l.matches("worker-kill\\s+5\\s+5\\s+1\\s.*")),
                Chaos.table(report));
    }

    /** Node events in time order: a writer mounted on node-2 before the writer on node-1 was unmounted. */
    @Test
    void singleWriterVolumeMountedForWritersOnTwoNodesAtOnceIsAViolation() {
        cleanRun();
        events.removeIf(e -> e.kind() == NodeEventKind.UNMOUNT);
        event("node-1", NodeEventKind.UNMOUNT, "v1", "a1", 23_000); // after a2's mount at 22.4 s
        Report report = check(EndState.clean());
        assertEquals(List.of("two-writers-mounted"), kinds(report));
        assertTrue(report.violations().get(0).detail().contains("a1=node-1"), report.violations().toString());
    }

    /**
     * Issue 34: under single-node-single-writer two writer allocations mounted on the same node at once are two writers;
     * under single-node-multi-writer they are not, but two nodes still are.
     */
    @Test
    void singleNodeSingleWriterCountsWriterAllocationsNotNodes() {
        cleanRun();
        claimIn(AccessMode.SINGLE_NODE_SINGLE_WRITER, "c7", "v7", "a7", "node-1", ClaimMode.WRITE, 25_000);
        claimIn(AccessMode.SINGLE_NODE_SINGLE_WRITER, "c8", "v7", "a8", "node-1", ClaimMode.WRITE, 25_100);
        answer("c7", ClaimState.READY, 25_200);
        answer("c8", ClaimState.READY, 25_300);
        event("node-1", NodeEventKind.MOUNT, "v7", "a7", 25_150);
        event("node-1", NodeEventKind.MOUNT, "v7", "a8", 25_250);
        Report report = check(EndState.clean());
        // the grant of a8 beside a7 is against the rules, and the two mounts are two writers
        assertEquals(List.of("granted-against-rules", "two-writers-mounted"), kinds(report).stream().sorted().toList());
        assertTrue(report.violations().stream().anyMatch(v -> v.detail().contains("(single-node-single-writer) mounted for"
                + " writers {a7=node-1, a8=node-1}")), report.violations().toString());

        requests.clear();
        answers.clear();
        events.clear();
        cleanRun();
        claimIn(AccessMode.SINGLE_NODE_MULTI_WRITER, "c7", "v7", "a7", "node-1", ClaimMode.WRITE, 25_000);
        claimIn(AccessMode.SINGLE_NODE_MULTI_WRITER, "c8", "v7", "a8", "node-1", ClaimMode.WRITE, 25_100);
        answer("c7", ClaimState.READY, 25_200);
        answer("c8", ClaimState.READY, 25_300);
        event("node-1", NodeEventKind.MOUNT, "v7", "a7", 25_150);
        event("node-1", NodeEventKind.MOUNT, "v7", "a8", 25_250);
        assertEquals(List.of(), check(EndState.clean()).violations());
    }

    /** Readers mounted on two nodes beside one writer break nothing. */
    @Test
    void readersOnTwoNodesBesideOneWriterAreNoViolation() {
        cleanRun();
        claim("c6", "v1", "a6", "node-1", ClaimMode.READ, 25_000);
        answer("c6", ClaimState.READY, 25_500);
        event("node-1", NodeEventKind.MOUNT, "v1", "a6", 25_400);
        claim("c7", "v1", "a7", "node-2", ClaimMode.READ, 26_000);
        answer("c7", ClaimState.READY, 26_500);
        event("node-2", NodeEventKind.MOUNT, "v1", "a7", 26_400);
        assertEquals(List.of(), check(EndState.clean()).violations());
    }

    /**
     * A plain double grant: a second writer of a single-writer volume answered ready while the first (a2 on node-2) holds
     * it, judged from claim-status alone (no verdict of the scheduler's); answered rejected it is no violation.
     */
    @Test
    void secondWriterGrantedWhileTheFirstHoldsIsAViolationRejectedIsNot() {
        cleanRun();
        claim("c8", "v1", "a8", "node-1", ClaimMode.WRITE, 27_000);
        answer("c8", ClaimState.REJECTED, 27_200);
        assertEquals(List.of(), check(EndState.clean()).violations());
        answers.removeIf(a -> a.requestId().equals("c8"));
        answer("c8", ClaimState.READY, 27_200);
        Report report = check(EndState.clean());
        assertEquals(List.of("granted-against-rules"), kinds(report));
        assertEquals("worker-kill", report.violations().get(0).fault());
        String detail = report.violations().get(0).detail();
        assertTrue(detail.contains("claim a8 on node-1") && detail.contains("a2 (write on node-2"), detail);
    }

    /** No claim answered ready on node-2 after the fault ended: not converged, with the reason. */
    @Test
    void faultWithoutAReadyClaimOnANodeAfterItsEndDidNotConverge() {
        cleanRun();
        answers.removeIf(a -> a.requestId().equals("c2"));
        answer("c2", ClaimState.REJECTED, 22_500); // e.g. "plugin unhealthy" on node-2
        Report report = check(EndState.clean());
        assertEquals(List.of("not-converged"), kinds(report));
        assertTrue(report.violations().get(0).detail().contains("node-2"), report.violations().toString());
        assertEquals(-1, report.rows().get(0).convergeMillis());
    }

    /** Converging later than the limit after the fault's end is a violation. */
    @Test
    void convergingLaterThanTheLimitIsAViolation() {
        cleanRun();
        answers.removeIf(a -> a.requestId().equals("c3") && a.state() == ClaimState.READY); // node-1's first ready
        answer("c3", ClaimState.READY, 20_000 + LIMIT + 1);
        Report report = check(EndState.clean());
        assertEquals(List.of("not-converged"), kinds(report));
        assertEquals(LIMIT + 1, report.rows().get(0).convergeMillis());
    }

    /** What is left at the end (a claim held, a mount, a lost claim) is reported on the final row. */
    @Test
    void endStateLeftoversAreFinalViolations() {
        cleanRun();
        Report report = check(new EndState(List.of("volume v1 holds 1 writer(s)"), List.of("/w/node-1/root/x"),
                List.of("volume v2: allocation a3 lost")));
        assertEquals(List.of("claim-lost", "claim-held-after-release", "mount-left"), kinds(report));
        assertTrue(report.violations().stream().allMatch(v -> v.fault().equals(ChaosCheck.FINAL)));
        assertFalse(report.passed());
        assertEquals(3, report.rows().get(1).violations().size());
        assertTrue(Chaos.table(report).contains("3 [claim-held-after-release, claim-lost, mount-left]"),
                Chaos.table(report));
    }

    /**
     * A write claim answered ready and later ended by its node's fence (claim-status FAILED "node-1 fenced at epoch 3:
     * mount removed" under the claim's request id, issue 19): the scheduler following claim-status no longer holds it,
     * so claim-service not holding it is no lost claim, and the fence's status is no second answer to the claim. A
     * ready claim ended by any other failed status (or by none) that claim-service does not hold is still lost, and a
     * ready-then-failed claim is still answered twice.
     */
    @Test
    void claimEndedByItsNodesFenceIsNeitherLostNorAnsweredTwiceAnyOtherEndStillIs() {
        cleanRun();
        claim("c6", "v3", "a6", "node-1", ClaimMode.WRITE, 30_000);
        answer("c6", ClaimState.READY, 30_500);
        claim("c7", "v4", "a7", "node-1", ClaimMode.WRITE, 31_000);
        answer("c7", ClaimState.READY, 31_500);
        Answer fence = new Answer("c6", ClaimState.FAILED, "node-1 fenced at epoch 3: mount removed", 40_000);
        Answer other = new Answer("c7", ClaimState.FAILED, "volume v4 gone", 40_000);
        answers.add(fence);
        answers.add(other);

        // The scheduler's view: both held once ready; the fence's status ends c6 only.
        Map<String, Held> heldV3 = new java.util.HashMap<>(Map.of("a6", new Held("node-1", ClaimMode.WRITE)));
        Map<String, Held> heldV4 = new java.util.HashMap<>(Map.of("a7", new Held("node-1", ClaimMode.WRITE)));
        Request c6 = requests.get(requests.size() - 2);
        Request c7 = requests.get(requests.size() - 1);
        assertTrue(ChaosCheck.fenceEnd(heldV3, c6, fence));
        assertFalse(ChaosCheck.fenceEnd(heldV4, c7, other));
        assertEquals(Map.of(), heldV3);
        assertEquals(List.of(), ChaosCheck.claimsLost("v3", heldV3.keySet(), java.util.Set.of(), 200));
        List<String> lost = ChaosCheck.claimsLost("v4", heldV4.keySet(), java.util.Set.of(), 200);
        assertEquals(1, lost.size(), lost.toString());
        assertTrue(lost.get(0).contains("allocation a7"), lost.toString());

        Report report = check(new EndState(List.of(), List.of(), lost));
        assertEquals(List.of("answered-twice-differently", "claim-lost"), kinds(report));
        assertTrue(report.violations().get(0).detail().contains("c7"), report.violations().toString());
    }

    /**
     * A ready claim claim-service frees itself after its node's lease lapsed (RELEASING or RELEASED "node-1's lease
     * epoch 2 lapsed and the fence wait passed: assumed detached" under the claim's request id, no release asked; with
     * a controller the RELEASED after the controller-unpublish has no reason) is learned as ended at the first of them;
     * a RELEASED or RELEASING with another reason under a claim's id is not.
     */
    @Test
    void claimFreedAfterItsNodesLapseIsLearnedAsEnded() {
        Request c = new Request("c8", "v5", "a8", "node-1", ClaimMode.READ, SW, 30_000);
        Map<String, Held> held = new java.util.HashMap<>(Map.of("a8", new Held("node-1", ClaimMode.READ)));
        String why = "node-1's lease epoch 2 lapsed and the fence wait passed: assumed detached";
        assertFalse(ChaosCheck.fenceEnd(held, c, new Answer("c8", ClaimState.RELEASED, "the failed claim was rolled back", 40_000)));
        assertFalse(ChaosCheck.fenceEnd(held, c, new Answer("c8", ClaimState.RELEASING, "waiting for node-1's lease", 40_000)));
        assertFalse(ChaosCheck.fenceEnd(held, c, new Answer("c8", ClaimState.RELEASED, null, 40_000)));
        assertEquals(1, held.size());
        assertTrue(ChaosCheck.fenceEnd(held, c, new Answer("c8", ClaimState.RELEASING, why, 41_000)));
        assertEquals(Map.of(), held);
        held.put("a8", new Held("node-1", ClaimMode.READ));
        assertTrue(ChaosCheck.fenceEnd(held, c, new Answer("c8", ClaimState.RELEASED, why, 41_000)));
        assertEquals(Map.of(), held);
        assertTrue(ChaosCheck.fenceEnded(new Answer("c8", ClaimState.RELEASED,
                "node-1's lease epoch 2 was fenced and the fence wait passed: assumed detached", 41_000)));
    }

    /** The rules grants are judged by: which claims may not be granted beside a holder, or at all. */
    @Test
    void conflictsAreSecondWritersOtherNodesOfSingleNodeVolumesAndWritersOfReadOnlyVolumes() {
        assertTrue(GrantCheck.conflicts(SW, "node-1", ClaimMode.WRITE, "node-2", ClaimMode.WRITE));
        assertTrue(GrantCheck.conflicts(SW, "node-1", ClaimMode.WRITE, "node-1", ClaimMode.WRITE));
        assertFalse(GrantCheck.conflicts(SW, "node-1", ClaimMode.WRITE, "node-2", ClaimMode.READ));
        assertFalse(GrantCheck.conflicts(SW, "node-1", ClaimMode.READ, "node-2", ClaimMode.WRITE));
        AccessMode snw = AccessMode.SINGLE_NODE_WRITER;
        assertTrue(GrantCheck.conflicts(snw, "node-1", ClaimMode.READ, "node-2", ClaimMode.READ));
        assertTrue(GrantCheck.conflicts(snw, "node-1", ClaimMode.WRITE, "node-1", ClaimMode.WRITE));
        assertFalse(GrantCheck.conflicts(snw, "node-1", ClaimMode.READ, "node-1", ClaimMode.WRITE));
        assertTrue(GrantCheck.conflicts(AccessMode.SINGLE_NODE_READER_ONLY, "node-1", ClaimMode.READ, "node-2",
                ClaimMode.READ));
        assertFalse(GrantCheck.conflicts(AccessMode.MULTI_NODE_MULTI_WRITER, "node-1", ClaimMode.WRITE, "node-2",
                ClaimMode.WRITE));
        // issue 34: the CSI 1.5 single-node modes
        AccessMode sssw = AccessMode.SINGLE_NODE_SINGLE_WRITER;
        assertTrue(GrantCheck.conflicts(sssw, "node-1", ClaimMode.WRITE, "node-1", ClaimMode.WRITE));
        assertFalse(GrantCheck.conflicts(sssw, "node-1", ClaimMode.WRITE, "node-1", ClaimMode.READ));
        assertTrue(GrantCheck.conflicts(sssw, "node-1", ClaimMode.READ, "node-2", ClaimMode.READ));
        AccessMode snmw = AccessMode.SINGLE_NODE_MULTI_WRITER;
        assertFalse(GrantCheck.conflicts(snmw, "node-1", ClaimMode.WRITE, "node-1", ClaimMode.WRITE));
        assertTrue(GrantCheck.conflicts(snmw, "node-1", ClaimMode.WRITE, "node-2", ClaimMode.WRITE));
        assertFalse(GrantCheck.writerForbidden(sssw, ClaimMode.WRITE));
        assertFalse(GrantCheck.writerForbidden(snmw, ClaimMode.WRITE));
        assertTrue(GrantCheck.writerForbidden(AccessMode.MULTI_NODE_READER_ONLY, ClaimMode.WRITE));
        assertTrue(GrantCheck.writerForbidden(AccessMode.SINGLE_NODE_READER_ONLY, ClaimMode.WRITE));
        assertFalse(GrantCheck.writerForbidden(AccessMode.MULTI_NODE_READER_ONLY, ClaimMode.READ));
        assertFalse(GrantCheck.writerForbidden(SW, ClaimMode.WRITE));
    }

    private static final AccessMode SNW = AccessMode.SINGLE_NODE_WRITER;
    private static final String LAPSE = "node-1's lease epoch 2 lapsed and the fence wait passed: assumed detached";

    /**
     * The first half of the 2026-11-29 sequence (chaos-v01, single-node-writer): a327's read claim on node-1 is ready;
     * claim-service itself starts freeing it (node-1's lease lapsed, the fence wait passed: RELEASING under a327's own
     * request, no release asked); a394's write claim on node-2 arrives and waits (PENDING). The scheduler still counted
     * a327 held when it sent a394 (its reader polls every 200 ms).
     */
    private void lapseWhileNode2Waits() {
        cleanRun();
        claimIn(SNW, "c327", "v01", "a327", "node-1", ClaimMode.READ, 1_000);
        answer("c327", ClaimState.ACCEPTED, 1_100);
        event("node-1", NodeEventKind.MOUNT, "v01", "a327", 1_300);
        answer("c327", ClaimState.READY, 1_400);
        answer("c327", ClaimState.RELEASING, LAPSE, 68_764);
        claimIn(SNW, "c394", "v01", "a394", "node-2", ClaimMode.WRITE, 68_900);
        answer("c394", ClaimState.PENDING, 68_947);
    }

    /** ... then a327 RELEASED, then a394 started (ACCEPTED) and ready: the designed wait, no violation. */
    @Test
    void holderFreedByClaimServiceWhileAnotherNodesClaimWaitsIsNoViolation() {
        lapseWhileNode2Waits();
        answer("c327", ClaimState.RELEASED, LAPSE, 69_268);
        answer("c394", ClaimState.ACCEPTED, 69_300);
        event("node-2", NodeEventKind.MOUNT, "v01", "a394", 69_700);
        answer("c394", ClaimState.READY, 69_768);
        event("node-1", NodeEventKind.FENCED, "v01", "a327", 70_977);
        assertEquals(List.of(), check(EndState.clean()).violations());
    }

    /**
     * A waiting claim woken too early: a394 started (ACCEPTED, its mount sent) after a327's RELEASING but before its
     * RELEASED. A violation at the ACCEPTED, naming both; in whatever order the records were read (the checker orders
     * them by offset).
     */
    @Test
    void waitingClaimGrantedBeforeTheHoldersEndIsAViolation() {
        lapseWhileNode2Waits();
        answer("c394", ClaimState.ACCEPTED, 69_000);
        answer("c327", ClaimState.RELEASED, LAPSE, 69_268);
        answer("c394", ClaimState.READY, 69_768);
        java.util.Collections.reverse(answers);
        Report report = check(EndState.clean());
        assertEquals(List.of("granted-against-rules"), kinds(report));
        String detail = report.violations().get(0).detail();
        assertTrue(detail.contains("write claim a394 on node-2") && detail.contains("accepted at offset")
                && detail.contains("a327 (read on node-1") && detail.contains("releasing '" + LAPSE), detail);
    }

    /**
     * Readers and writers on two nodes: a reader on node-2 granted while a writer holds on node-1 breaks a
     * single-node-writer volume, not a multi-node-single-writer one; a writer of a multi-node-reader-only volume is a
     * violation with no holder at all.
     */
    @Test
    void readerOnAnotherNodeOfASingleNodeVolumeAndAWriterOfAReadOnlyOneAreViolations() {
        cleanRun();
        for (AccessMode mode : List.of(SNW, SW)) {
            String v = "v-" + mode.wire();
            claimIn(mode, "w1-" + v, v, "b1", "node-1", ClaimMode.WRITE, 30_000);
            answer("w1-" + v, ClaimState.READY, 30_500);
            claimIn(mode, "r2-" + v, v, "b2", "node-2", ClaimMode.READ, 31_000);
            answer("r2-" + v, ClaimState.READY, 31_500);
        }
        Report mixed = check(EndState.clean());
        assertEquals(List.of("granted-against-rules"), kinds(mixed));
        assertTrue(mixed.violations().get(0).detail().contains("volume v-single-node-writer"), mixed.violations().toString());
        requests.removeIf(r -> r.volume().startsWith("v-"));
        answers.removeIf(a -> a.volume() != null && a.volume().startsWith("v-"));
        claimIn(AccessMode.MULTI_NODE_READER_ONLY, "w3", "v8", "b3", "node-1", ClaimMode.WRITE, 30_000);
        answer("w3", ClaimState.READY, 30_500);
        Report report = check(EndState.clean());
        assertEquals(List.of("granted-against-rules"), kinds(report));
        assertTrue(report.violations().get(0).detail().contains("allows no writer"), report.violations().toString());
    }

    /**
     * Repeats are no new grants: the READY after a claim's ACCEPTED, a duplicate READY, an ACCEPTED with a reason (the
     * answer to a repeated request of a pending claim, a remount), a republished READY of a claim already released.
     */
    @Test
    void repeatsAndRepublishedRecordsOfAClaimAreNoNewGrants() {
        lapseWhileNode2Waits();
        answer("c394", ClaimState.ACCEPTED, "allocation a394 already holds this claim", 69_000);
        answer("c327", ClaimState.RELEASED, LAPSE, 69_268);
        answer("c394", ClaimState.ACCEPTED, 69_300);
        answer("c394", ClaimState.READY, 69_768);
        answer("c394", ClaimState.READY, 69_800);
        answer("c327", ClaimState.READY, 69_900); // the outbox publishing a327's ready again
        assertEquals(List.of(), check(EndState.clean()).violations());
        answer("c394", ClaimState.RELEASED, 70_000);
        claimIn(SNW, "c395", "v01", "a395", "node-1", ClaimMode.READ, 70_100);
        answer("c395", ClaimState.READY, 70_200);
        assertEquals(List.of(), check(EndState.clean()).violations());
    }
}
