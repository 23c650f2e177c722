package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The chaos scheduler's book ({@link ChaosBook}): what it sends, what it then believes held and expects at the end,
 * and that {@code granted-against-rules} over what it recorded depends on no view of its (test audit 2, finding 3 and
 * untested path 6).
 */
class ChaosBookTest {

    private static final AccessMode SW = AccessMode.MULTI_NODE_SINGLE_WRITER;
    private static final List<String> NODES = List.of("node-1", "node-2");

    private final ChaosBook book = new ChaosBook("chaos", NODES, new Random(7));
    private long offset;

    /** claim-service's claim-status record for {@code r} read by the suite: the next offset of the partition. */
    private Optional<String> read(ClaimRequested r, ClaimState state, String reason) {
        return read(r.requestId(), r, state, reason);
    }

    private Optional<String> read(String requestId, ClaimRequested r, ClaimState state, String reason) {
        ClaimStatus s = new ClaimStatus(requestId, "chaos", r.volumeId(), r.allocationId(), r.nodeId(), r.mode(), state,
                reason, state == ClaimState.READY ? "/mnt/x" : null, Instant.ofEpochMilli(1_000 + offset));
        long at = 1_000 + offset;
        return book.take(ChaosBook.answer(s, 0, offset++, at));
    }

    private static ClaimRequested claim(String volume, String alloc, String node, ClaimMode mode) {
        return ClaimClient.claim("chaos", volume, alloc, node, mode, SW, AttachmentMode.FILE_SYSTEM);
    }

    /**
     * What it sends: on an idle volume, a claim of the volume's access mode from a new allocation; the volume busy
     * until the request's final answer; nothing while every volume is busy. The request it records is what was sent,
     * with its send time and no verdict of its own. A ready answer makes the allocation held, and later a release of
     * it is chosen; its released answer ends that.
     */
    @Test
    void sendsClaimsOnIdleVolumesAndFollowsTheirAnswers() {
        book.add("v1", SW);
        book.add("v2", AccessMode.MULTI_NODE_READER_ONLY);
        ClaimRequested first = book.next();
        ClaimRequested second = book.next();
        assertNull(book.next(), "both volumes busy");
        assertEquals(Set.of("v1", "v2"), Set.of(first.volumeId(), second.volumeId()));
        for (ClaimRequested r : List.of(first, second)) {
            assertTrue(r.mode() != ClaimMode.RELEASE && NODES.contains(r.nodeId()), r.toString());
            assertEquals(book.volume(r.volumeId()).mode, r.accessMode());
        }
        ChaosCheck.Request sent = book.sent(first, 5_000);
        assertEquals(new ChaosCheck.Request(first.requestId(), first.volumeId(), first.allocationId(), first.nodeId(),
                first.mode(), book.volume(first.volumeId()).mode, 5_000), sent);
        assertEquals(List.of(sent), book.requests);
        read(first, ClaimState.ACCEPTED, null);
        assertNull(book.next(), "accepted is no final answer: still busy");
        read(first, ClaimState.READY, null);
        ChaosBook.Vol v = book.volume(first.volumeId());
        assertEquals(Map.of(first.allocationId(), new ChaosCheck.Held(first.nodeId(), first.mode())), v.held);
        assertEquals(Set.of(first.allocationId()), book.expectedHeld(v.id));
        assertTrue(book.pending.isEmpty());

        ClaimRequested release = null;
        for (int i = 0; i < 200 && release == null; i++) {
            ClaimRequested r = book.next();
            assertNotNull(r, "the volume is idle again");
            if (r.mode() == ClaimMode.RELEASE) {
                release = r;
            } else {
                book.sendFailed(r); // not sent: the volume idle again, its allocation released at the end
            }
        }
        assertNotNull(release, "a release of the held claim chosen");
        assertEquals(first.allocationId(), release.allocationId());
        book.sent(release, 6_000);
        read(release, ClaimState.RELEASING, null);
        assertEquals(Set.of(first.allocationId()), book.expectedHeld(v.id), "releasing is no final answer");
        read(release, ClaimState.RELEASED, null);
        assertEquals(Set.of(), book.expectedHeld(v.id));
    }

    /** The answer can be read before the sending thread recorded its request: it is taken when the request is. */
    @Test
    void anAnswerReadBeforeItsRequestWasRecordedIsTaken() {
        book.add("v1", SW);
        ClaimRequested c = book.next();
        read(c, ClaimState.READY, null);
        book.sent(c, 5_000);
        assertTrue(book.pending.isEmpty());
        assertEquals(Set.of(c.allocationId()), book.expectedHeld("v1"));
        assertNotNull(book.next(), "the volume is idle again");
    }

    /**
     * A send that failed and a release that failed make only their allocation uncertain: released at the end, not
     * expected held; the volume's other claims stay expected (no volume-wide, permanent "unsure").
     */
    @Test
    void failedSendsAndReleasesMakeOnlyTheirAllocationUncertain() {
        book.add("v1", AccessMode.MULTI_NODE_MULTI_WRITER);
        ClaimRequested a1 = claim("v1", "a1", "node-1", ClaimMode.WRITE);
        ClaimRequested a2 = claim("v1", "a2", "node-2", ClaimMode.WRITE);
        ClaimRequested a3 = claim("v1", "a3", "node-2", ClaimMode.READ);
        for (ClaimRequested c : List.of(a1, a2)) {
            book.sent(c, 1_000);
            read(c, ClaimState.READY, null);
        }
        book.volume("v1").busy = a3.requestId();
        book.sendFailed(a3);
        assertNull(book.volume("v1").busy);
        assertEquals(2, book.requests.size(), "a failed send is no request");
        ClaimRequested releaseA1 = ClaimClient.release("chaos", "v1", "a1");
        book.sent(releaseA1, 2_000);
        read(releaseA1, ClaimState.FAILED, "unmount failed");
        assertEquals(Set.of("a2"), book.expectedHeld("v1"));
        assertEquals(Set.of("v1/a1", "v1/a2", "v1/a3"), Set.copyOf(book.toRelease().stream()
                .map(p -> p[0] + "/" + p[1]).toList()));
    }

    /** A held claim its node's fence ended (FAILED "... fenced at epoch 3: mount removed" under its own request). */
    @Test
    void aHeldClaimEndedByItsNodesFenceIsNoLongerExpected() {
        book.add("v1", SW);
        ClaimRequested c = claim("v1", "a1", "node-1", ClaimMode.WRITE);
        book.sent(c, 1_000);
        read(c, ClaimState.READY, null);
        Optional<String> note = read(c, ClaimState.FAILED, "node-1 fenced at epoch 3: mount removed");
        assertTrue(note.isPresent() && note.get().contains("a1 on v1"), note.toString());
        assertEquals(Set.of(), book.expectedHeld("v1"));
    }

    /** A claim-status record keeps its request, state, reason, claim and place on the topic. */
    @Test
    void aStatusRecordKeepsItsClaimAndPlace() {
        ClaimStatus s = new ClaimStatus("r1", "chaos", "v1", "a1", "node-2", ClaimMode.WRITE, ClaimState.PENDING,
                "waits", null, Instant.EPOCH);
        assertEquals(new ChaosCheck.Answer("r1", ClaimState.PENDING, "waits", 99, "v1", "a1", "node-2", ClaimMode.WRITE,
                3, 42), ChaosBook.answer(s, 3, 42, 99));
    }

    /**
     * A volume with an uncertain moment (a release whose send failed) and, later, a real double grant; and a fencing
     * fault's own volume (no request of the scheduler's) with one: both are caught from what the book recorded.
     */
    @Test
    void aDoubleGrantAfterAnUncertainMomentAndOnAFenceVolumeIsCaught() {
        book.add("v1", SW);
        book.judgeToo("fence-1", AccessMode.SINGLE_NODE_WRITER);
        ClaimRequested a1 = claim("v1", "a1", "node-1", ClaimMode.WRITE);
        book.sent(a1, 1_000);
        read(a1, ClaimState.READY, null);
        book.sendFailed(ClaimClient.release("chaos", "v1", "a1"));
        ClaimRequested a2 = claim("v1", "a2", "node-2", ClaimMode.WRITE);
        book.sent(a2, 2_000);
        read(a2, ClaimState.READY, null);
        ClaimRequested f1 = ClaimClient.claim("chaos", "fence-1", "fw1", "node-1", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM);
        ClaimRequested f2 = ClaimClient.claim("chaos", "fence-1", "fw2", "node-2", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM);
        read(f1, ClaimState.READY, null);
        read(f1, ClaimState.RELEASING, "waiting for node-1's lease to lapse");
        read(f2, ClaimState.ACCEPTED, null);

        ChaosCheck.Report report = ChaosCheck.check(book.requests, book.answers, List.of(),
                List.of(new ChaosCheck.Fault("f", 0, 10, 20, 100_000)), ChaosCheck.EndState.clean(), 30_000, book.modes());
        List<String> grants = report.violations().stream().filter(v -> v.kind().equals("granted-against-rules"))
                .map(ChaosCheck.Violation::detail).toList();
        assertEquals(2, grants.size(), grants.toString());
        assertTrue(grants.get(0).contains("volume v1 ") && grants.get(0).contains("claim a2 on node-2"), grants.toString());
        assertTrue(grants.get(1).contains("volume fence-1 ") && grants.get(1).contains("claim fw2 on node-2"),
                grants.toString());
    }
}
