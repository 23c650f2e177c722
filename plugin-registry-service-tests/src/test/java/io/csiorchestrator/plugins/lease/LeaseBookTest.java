package io.csiorchestrator.plugins.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.NodeLeaseState;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The registry's lease rules (issue 19 item 1), pure: grant, renew, lapse, next epoch, restart, stale epochs. */
class LeaseBookTest {

    private static final long S = 1_000_000_000L;
    private static final long T0 = Long.MAX_VALUE - 10 * S; // overflow-safe comparisons
    private static final Instant NOW = Instant.parse("2026-11-24T21:00:00Z");

    private static LeaseBook book() {
        return new LeaseBook(LeaseBook.lapseAfterNanos(Duration.ofSeconds(30), 0.05));
    }

    @Test
    void lapseAfterIsTtlTimesOnePlusDrift() {
        assertEquals(31_500_000_000L, LeaseBook.lapseAfterNanos(Duration.ofSeconds(30), 0.05));
    }

    @Test
    void theNextLapseIsTheEarliestLastGrantOfAnOwnedValidLeasePlusTtlTimesOnePlusDrift() {
        LeaseBook book = book();
        assertEquals(java.util.OptionalLong.empty(), book.nextLapseNanos(node -> true), "no lease yet");
        book.request("node-1", 0, T0, NOW);
        book.request("node-2", 0, T0 + 2 * S, NOW);
        book.request("node-3", 0, T0 + S, NOW);
        long lapseAfter = LeaseBook.lapseAfterNanos(Duration.ofSeconds(30), 0.05);
        // past Long.MAX_VALUE: the sum wraps, and so must the comparison (nanoTime arithmetic)
        assertEquals(T0 + lapseAfter, book.nextLapseNanos(node -> true).getAsLong());
        assertEquals(T0 + S + lapseAfter, book.nextLapseNanos(node -> !node.equals("node-1")).getAsLong(),
                "node-1 not owned: node-3's is next");
        book.request("node-1", 1, T0 + 3 * S, NOW); // renewed: node-3 is the earliest now
        assertEquals(T0 + S + lapseAfter, book.nextLapseNanos(node -> true).getAsLong());
        book.lapses(T0 + S + lapseAfter, node -> true); // node-3 lapses: no longer valid, node-2's is next
        assertEquals(T0 + 2 * S + lapseAfter, book.nextLapseNanos(node -> true).getAsLong());
        assertEquals(java.util.OptionalLong.empty(), book.nextLapseNanos(node -> false), "none owned");
    }

    @Test
    void theFirstGrantIsEpochOnePersistedAndARenewalKeepsItWithoutAWrite() {
        LeaseBook book = book();
        LeaseBook.Grant first = book.request("node-1", 0, T0, NOW);
        assertEquals(new LeaseBook.Grant("node-1", 1, true, true), first);
        book.persisted("node-1", 1);
        assertEquals(new LeaseBook.Grant("node-1", 1, false, false), book.request("node-1", 1, T0 + 5 * S, NOW));
        assertEquals(new LeaseBook.Grant("node-1", 1, false, false), book.request("node-1", 0, T0 + 6 * S, NOW),
                "a restarted worker holding nothing renews the valid epoch");
    }

    /** A new epoch whose write failed is written again on the next request, never published unwritten. */
    @Test
    void anEpochNotYetPersistedIsPersistedOnTheNextRequest() {
        LeaseBook book = book();
        book.request("node-1", 0, T0, NOW);
        assertEquals(new LeaseBook.Grant("node-1", 1, true, false), book.request("node-1", 1, T0 + S, NOW));
    }

    @Test
    void aLeaseLapsesOnlyAfterTtlTimesOnePlusDriftWithoutRenewalAndTheNextGrantIsEpochPlusOne() {
        LeaseBook book = book();
        book.request("node-1", 0, T0, NOW);
        book.persisted("node-1", 1);
        book.request("node-1", 1, T0 + 10 * S, NOW);
        assertEquals(List.of(), book.lapses(T0 + 10 * S + 31_500_000_000L - 1, n -> true));
        List<LeaseBook.View> lapsed = book.lapses(T0 + 10 * S + 31_500_000_000L, n -> true);
        assertEquals(1, lapsed.size());
        assertEquals(1, lapsed.get(0).epoch());
        assertEquals(NodeLeaseState.LAPSED, lapsed.get(0).state());
        assertEquals(List.of(), book.lapses(T0 + 100 * S, n -> true), "declared once");
        assertEquals(new LeaseBook.Grant("node-1", 2, true, true), book.request("node-1", 1, T0 + 101 * S, NOW),
                "a lapsed epoch is never granted again, even to a worker still holding it");
    }

    @Test
    void onlyNodesOfOwnedPartitionsLapse() {
        LeaseBook book = book();
        book.request("node-1", 0, T0, NOW);
        book.request("node-2", 0, T0, NOW);
        List<LeaseBook.View> lapsed = book.lapses(T0 + 40 * S, "node-2"::equals);
        assertEquals(List.of("node-2"), lapsed.stream().map(LeaseBook.View::nodeId).toList());
    }

    /** After a restart every persisted valid lease counts as granted at the load, whatever its age. */
    @Test
    void loadedValidLeasesCountAsJustGranted() {
        LeaseBook book = book();
        book.load(List.of(new LeaseBook.Stored("node-1", 4, NodeLeaseState.VALID, NOW.minusSeconds(3600), 0),
                new LeaseBook.Stored("node-2", 7, NodeLeaseState.LAPSED, NOW.minusSeconds(3600), 0)), T0);
        assertEquals(List.of(), book.lapses(T0 + 31 * S, n -> true));
        assertEquals(List.of("node-1"), book.lapses(T0 + 32 * S, n -> true).stream().map(LeaseBook.View::nodeId).toList());
        assertEquals(8, book.request("node-2", 0, T0 + 33 * S, NOW).epoch(), "after the stored lapsed epoch 7");
        assertEquals(5, book.request("node-1", 0, T0 + 33 * S, NOW).epoch());
    }

    /** A reload (rebalance) never makes an epoch this book ended valid again, even if the end was not written. */
    @Test
    void aReloadDoesNotReviveAnEndedEpoch() {
        LeaseBook book = book();
        book.request("node-1", 0, T0, NOW);
        book.lapses(T0 + 40 * S, n -> true);
        book.load(List.of(new LeaseBook.Stored("node-1", 1, NodeLeaseState.VALID, NOW, 0)), T0 + 41 * S);
        assertEquals(NodeLeaseState.LAPSED, book.get("node-1").orElseThrow().state());
        assertEquals(2, book.request("node-1", 1, T0 + 42 * S, NOW).epoch());
    }

    @Test
    void aFencedEpochIsNeverRenewedAndAHeldEpochAboveTheBooksIsOvertaken() {
        LeaseBook book = book();
        book.request("node-1", 0, T0, NOW);
        assertTrue(book.fenced("node-1", 1));
        assertFalse(book.fenced("node-1", 1), "once");
        assertEquals(1, book.get("node-1").orElseThrow().fencedEpoch());
        assertEquals(2, book.request("node-1", 1, T0 + S, NOW).epoch());
        assertEquals(10, book.request("node-9", 9, T0 + S, NOW).epoch(), "a worker holding 9 that the book does not know");
    }

    @Test
    void aReportOfAnOlderEpochIsStale() {
        LeaseBook book = book();
        book.load(List.of(new LeaseBook.Stored("node-1", 3, NodeLeaseState.VALID, NOW, 0)), T0);
        assertEquals(Optional.of("stale lease epoch 2 < 3 for node-1"), book.staleEpoch("node-1", 2L));
        assertEquals(Optional.empty(), book.staleEpoch("node-1", 3L));
        assertEquals(Optional.empty(), book.staleEpoch("node-1", null));
        assertEquals(Optional.empty(), book.staleEpoch("node-2", 1L));
    }
}
