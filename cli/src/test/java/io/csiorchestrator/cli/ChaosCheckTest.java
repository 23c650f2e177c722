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

    private void claim(String id, String volume, String alloc, String node, ClaimMode mode, long sentAt, boolean mustReject) {
        requests.add(new Request(id, volume, alloc, node, mode, SW, sentAt, mustReject));
    }

    private void release(String id, String volume, String alloc, long sentAt) {
        requests.add(new Request(id, volume, alloc, null, ClaimMode.RELEASE, SW, sentAt, false));
    }

    private void answer(String id, ClaimState state, long at) {
        answers.add(new Answer(id, state, state == ClaimState.REJECTED ? "no" : null, at));
    }

    private void event(String node, NodeEventKind kind, String volume, String alloc, long at) {
        events.add(new NodeEv(node, kind, volume, alloc, true, at));
    }

    /**
     * A run in which every claim is answered once, the converging claims on both nodes come after the fault's end,
     * and the writers of a volume are mounted one after the other: a clean sequence everything else is built on.
     */
    private void cleanRun() {
        claim("c1", "v1", "a1", "node-1", ClaimMode.WRITE, 1_000, false);
        answer("c1", ClaimState.ACCEPTED, 1_100);
        answer("c1", ClaimState.READY, 1_500);
        event("node-1", NodeEventKind.MOUNT, "v1", "a1", 1_400);
        release("r1", "v1", "a1", 12_000); // sent during the fault, answered once the worker was back
        answer("r1", ClaimState.RELEASING, 12_100);
        event("node-1", NodeEventKind.UNMOUNT, "v1", "a1", 21_000);
        answer("r1", ClaimState.RELEASED, 21_500);
        claim("c2", "v1", "a2", "node-2", ClaimMode.WRITE, 22_000, false);
        event("node-2", NodeEventKind.MOUNT, "v1", "a2", 22_400);
        answer("c2", ClaimState.READY, 22_500);
        claim("c3", "v2", "a3", "node-1", ClaimMode.READ, 23_000, false);
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
        claim("c4", "v3", "a4", "node-2", ClaimMode.READ, 30_000, false);
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
        claim("c5", "v3", "a5", "node-1", ClaimMode.READ, 30_000, false);
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

    /** Readers mounted on two nodes beside one writer break nothing. */
    @Test
    void readersOnTwoNodesBesideOneWriterAreNoViolation() {
        cleanRun();
        claim("c6", "v1", "a6", "node-1", ClaimMode.READ, 25_000, false);
        answer("c6", ClaimState.READY, 25_500);
        event("node-1", NodeEventKind.MOUNT, "v1", "a6", 25_400);
        claim("c7", "v1", "a7", "node-2", ClaimMode.READ, 26_000, false);
        answer("c7", ClaimState.READY, 26_500);
        event("node-2", NodeEventKind.MOUNT, "v1", "a7", 26_400);
        assertEquals(List.of(), check(EndState.clean()).violations());
    }

    /** A claim the rules must refuse, answered ready, is a violation; answered rejected it is not. */
    @Test
    void claimThatMustBeRejectedButIsReadyIsAViolation() {
        cleanRun();
        claim("c8", "v1", "a8", "node-1", ClaimMode.WRITE, 27_000, true);
        answer("c8", ClaimState.REJECTED, 27_200);
        assertEquals(List.of(), check(EndState.clean()).violations());
        answers.removeIf(a -> a.requestId().equals("c8"));
        answer("c8", ClaimState.READY, 27_200);
        assertEquals(List.of("granted-against-rules"), kinds(check(EndState.clean())));
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
        answers.removeIf(a -> a.requestId().equals("r1") && a.state() == ClaimState.RELEASED);
        answer("r1", ClaimState.RELEASED, 20_000 + LIMIT + 1);
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
        claim("c6", "v3", "a6", "node-1", ClaimMode.WRITE, 30_000, false);
        answer("c6", ClaimState.READY, 30_500);
        claim("c7", "v4", "a7", "node-1", ClaimMode.WRITE, 31_000, false);
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
        Request c = new Request("c8", "v5", "a8", "node-1", ClaimMode.READ, SW, 30_000, false);
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

    /** The rules the scheduler judges claims by: which claims must be refused. */
    @Test
    void mustRejectSecondWritersOtherNodesOfSingleNodeVolumesAndWritersOfReadOnlyVolumes() {
        Map<String, Held> writer = Map.of("a1", new Held("node-1", ClaimMode.WRITE));
        Map<String, Held> reader = Map.of("a1", new Held("node-1", ClaimMode.READ));
        assertTrue(ChaosCheck.mustReject(SW, writer, "node-2", ClaimMode.WRITE));
        assertTrue(ChaosCheck.mustReject(SW, writer, "node-1", ClaimMode.WRITE));
        assertFalse(ChaosCheck.mustReject(SW, writer, "node-2", ClaimMode.READ));
        assertFalse(ChaosCheck.mustReject(SW, reader, "node-2", ClaimMode.WRITE));
        assertTrue(ChaosCheck.mustReject(AccessMode.SINGLE_NODE_WRITER, reader, "node-2", ClaimMode.READ));
        assertFalse(ChaosCheck.mustReject(AccessMode.SINGLE_NODE_WRITER, reader, "node-1", ClaimMode.WRITE));
        assertTrue(ChaosCheck.mustReject(AccessMode.MULTI_NODE_READER_ONLY, Map.of(), "node-1", ClaimMode.WRITE));
        assertFalse(ChaosCheck.mustReject(AccessMode.MULTI_NODE_READER_ONLY, reader, "node-2", ClaimMode.READ));
    }
}
