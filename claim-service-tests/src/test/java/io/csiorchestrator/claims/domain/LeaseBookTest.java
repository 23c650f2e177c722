package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.LeaseBook.Applied;
import io.csiorchestrator.claims.domain.LeaseBook.State;
import io.csiorchestrator.claims.domain.LeaseBook.Verdict;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The lease book's one rule for assuming a node detached without its word (issue 19 item 3), on a fake clock. */
class LeaseBookTest {

    /** ttl 30 s, drift 0.05, budget 10 s, margin 5 s: floor 46.5 s; after a lapse 15 s. */
    static final FenceTimers T = FenceTimers.DEFAULT;
    static final long START = 1_000_000_000L;

    static long s(double seconds) {
        return START + (long) (seconds * 1e9);
    }

    @Test
    void aValidLeaseNeverLetsTheClaimGoHoweverLongItWasQuiet() {
        LeaseBook book = new LeaseBook(START);
        book.receive("node-1", 3, State.VALID, s(1));
        Verdict v = book.verdict("node-1", 3, T, s(10));
        assertEquals(new Verdict.Wait(false, Duration.ofMillis(37_500), "waiting for node-1's lease to lapse: 38 s left"), v);
        // No LAPSED received: hours later still not fenced (the lease wait has no plain timeout).
        Verdict later = book.verdict("node-1", 3, T, s(10_000));
        assertEquals(new Verdict.Wait(false, Duration.ZERO, "waiting for node-1's lease to lapse: 0 s left"), later);
    }

    @Test
    void afterLapsedTheClaimGoesOnlyOnceBothWaitsPassed() {
        LeaseBook book = new LeaseBook(START);
        book.receive("node-1", 3, State.VALID, s(1));
        assertEquals(Applied.TAKEN, book.receive("node-1", 3, State.LAPSED, s(33)));
        // lastValid + 46.5 = 47.5; lapse + 15 = 48: the later one counts.
        assertEquals(new Verdict.Wait(true, Duration.ofMillis(8_000), "node-1 lease lapsed, waiting for its fence: 8 s left"),
                book.verdict("node-1", 3, T, s(40)));
        assertInstanceOf(Verdict.Wait.class, book.verdict("node-1", 3, T, s(47.999)));
        Verdict v = book.verdict("node-1", 3, T, s(48));
        assertEquals(new Verdict.Fenced(3, "node-1's lease epoch 3 lapsed and the fence wait passed: assumed detached"), v);
    }

    @Test
    void theFailoverWaitFromTheLastValidLeaseCountsWhenTheLapseCameEarly() {
        LeaseBook book = new LeaseBook(START);
        book.receive("node-1", 3, State.VALID, s(10));
        book.receive("node-1", 3, State.LAPSED, s(11)); // lapse + 15 = 26; lastValid + 46.5 = 56.5
        assertInstanceOf(Verdict.Wait.class, book.verdict("node-1", 3, T, s(56)));
        assertInstanceOf(Verdict.Fenced.class, book.verdict("node-1", 3, T, s(56.5)));
    }

    @Test
    void aLapseOfAnEpochOlderThanTheClaimsMountIsNoFence() {
        LeaseBook book = new LeaseBook(START);
        book.receive("node-1", 2, State.LAPSED, s(1));
        Verdict v = book.verdict("node-1", 3, T, s(1000));
        assertInstanceOf(Verdict.Wait.class, v);
        assertFalse(((Verdict.Wait) v).lapsed());
    }

    @Test
    void afterARestartEveryLeaseCountsAsJustGranted() {
        // The book of a claim-service that started at START reads the compacted topic: the LAPSED record it finds is
        // received now, and no VALID receipt is older than its start.
        LeaseBook book = new LeaseBook(START);
        book.receive("node-1", 3, State.LAPSED, s(0.5));
        assertInstanceOf(Verdict.Wait.class, book.verdict("node-1", 3, T, s(46.4)));
        assertInstanceOf(Verdict.Fenced.class, book.verdict("node-1", 3, T, s(46.5)));
    }

    /**
     * claim-service restarted while node-1 is partitioned (issue 19 item 3): the compacted topic hands the new book the
     * node's last VALID record (granted who knows when before the restart) at once, and the registry's LAPSED comes
     * later. The VALID counts as granted at its receipt after the start, so the claim goes no earlier than that receipt
     * + the failover wait, even though the lapse's own wait (budget + margin) ended sooner; a node whose lease is only
     * known VALID is never assumed detached, however long after the restart.
     */
    @Test
    void afterARestartDuringAPartitionTheReplayedValidLeaseCountsAsJustGranted() {
        LeaseBook book = new LeaseBook(START);
        book.receive("node-1", 4, State.VALID, s(0.2));
        book.receive("node-2", 7, State.VALID, s(0.2));
        book.receive("node-1", 4, State.LAPSED, s(20));
        assertEquals(new Verdict.Wait(true, Duration.ofMillis(100), "node-1 lease lapsed, waiting for its fence: 1 s left"),
                book.verdict("node-1", 4, T, s(46.6)));
        assertInstanceOf(Verdict.Fenced.class, book.verdict("node-1", 4, T, s(46.7)));
        assertInstanceOf(Verdict.Wait.class, book.verdict("node-2", 7, T, s(10_000)));
    }

    @Test
    void staleEpochsAreIgnoredAndAnEndedEpochIsNeverValidAgain() {
        LeaseBook book = new LeaseBook(START);
        assertNull(book.epoch("node-1"));
        book.receive("node-1", 3, State.VALID, s(1));
        assertEquals(Applied.STALE, book.receive("node-1", 2, State.VALID, s(2)));
        assertEquals(Applied.STALE, book.receive("node-1", 2, State.LAPSED, s(2)));
        assertEquals(3L, book.epoch("node-1"));
        assertTrue(book.stale("node-1", 2L));
        assertFalse(book.stale("node-1", 3L));
        assertFalse(book.stale("node-1", null), "a sender without leases is not judged");
        assertFalse(book.stale("node-2", 1L), "a node without a known lease is not judged");
        book.receive("node-1", 3, State.LAPSED, s(5));
        assertEquals(Applied.STALE, book.receive("node-1", 3, State.VALID, s(6)));
        assertEquals(List.of("node-1"), book.endedNodes());
        // FENCED after LAPSED of the same epoch keeps the lapse's receipt time.
        book.receive("node-1", 3, State.FENCED, s(30));
        assertEquals(s(5), book.entry("node-1").endedNanos());
        // The next grant ends the wait.
        book.receive("node-1", 4, State.VALID, s(31));
        assertEquals(List.of(), book.endedNodes());
        assertInstanceOf(Verdict.Wait.class, book.verdict("node-1", 3, T, s(10_000)));
    }

    @Test
    void aNodeWithoutAKnownLeaseIsNeverAssumedDetached() {
        LeaseBook book = new LeaseBook(START);
        assertEquals(new Verdict.NoLease("no lease of node-9 is known: waiting for its unmount or an operator's detach"),
                book.verdict("node-9", 0, T, s(100_000)));
    }
}
