package io.csiorchestrator.worker.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseState;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The worker's lease arithmetic (issue 19 item 1/2): expiry from send time, lapse without ack, the fence moment. */
class LeaseKeeperTest {

    private static final long S = 1_000_000_000L;
    /** A nanoTime origin near the overflow, so every comparison must be overflow-safe. */
    private static final long T0 = Long.MAX_VALUE - 20 * S;
    private static final long TTL_MS = 30_000;
    private static final long BUDGET_MS = 10_000;

    private static NodeLease grant(long epoch, String requestId) {
        return new NodeLease("node-1", epoch, NodeLeaseState.VALID, requestId, TTL_MS, BUDGET_MS, Instant.EPOCH);
    }

    private static NodeLease ended(long epoch, NodeLeaseState state) {
        return new NodeLease("node-1", epoch, state, null, TTL_MS, BUDGET_MS, Instant.EPOCH);
    }

    /** The expiry counts from the send time of the request the grant answers, not from the grant's arrival. */
    @Test
    void theExpiryCountsFromTheAnsweredRequestsSendTime() {
        LeaseKeeper keeper = new LeaseKeeper("node-1");
        keeper.requestSent("r1", T0);
        assertEquals(LeaseKeeper.Change.NEW_EPOCH, keeper.onLease(grant(1, "r1"), T0 + 4 * S));
        assertEquals(T0 + 30 * S, keeper.expiryNanos(), "send time + ttl, although the grant came 4 s later");
        assertEquals(T0 + 20 * S, keeper.fenceAtNanos(), "expiry - budget");
        assertTrue(keeper.valid(T0 + 20 * S - 1));
        assertFalse(keeper.valid(T0 + 20 * S), "no new mount once the fence is due");
        assertFalse(keeper.fenceDue(T0 + 20 * S - 1));
        assertTrue(keeper.fenceDue(T0 + 20 * S));
    }

    @Test
    void aRenewalKeepsTheEpochAndMovesTheExpiryOn() {
        LeaseKeeper keeper = new LeaseKeeper("node-1");
        keeper.requestSent("r1", T0);
        keeper.onLease(grant(1, "r1"), T0);
        keeper.requestSent("r2", T0 + 5 * S);
        assertEquals(1, keeper.heldEpochForRequest());
        assertEquals(LeaseKeeper.Change.RENEWED, keeper.onLease(grant(1, "r2"), T0 + 6 * S));
        assertEquals(1, keeper.epoch());
        assertEquals(T0 + 35 * S, keeper.expiryNanos());
        assertEquals(5 * S, keeper.renewIntervalNanos(60 * S), "ttl / 6 of the grant");
    }

    /** A late answer to an older request never moves the expiry back. */
    @Test
    void aLateAnswerToAnOlderRequestDoesNotShortenTheLease() {
        LeaseKeeper keeper = new LeaseKeeper("node-1");
        keeper.requestSent("r1", T0);
        keeper.requestSent("r2", T0 + 5 * S);
        keeper.onLease(grant(1, "r2"), T0 + 6 * S);
        assertEquals(LeaseKeeper.Change.NONE, keeper.onLease(grant(1, "r1"), T0 + 7 * S), "r1 was forgotten with r2's grant");
        assertEquals(T0 + 35 * S, keeper.expiryNanos());
    }

    /** A one-way partition: requests keep going out, no grant comes back: the lease lapses locally all the same. */
    @Test
    void requestsWithoutAnswerLapseTheLease() {
        LeaseKeeper keeper = new LeaseKeeper("node-1");
        keeper.requestSent("r1", T0);
        keeper.onLease(grant(1, "r1"), T0 + S);
        for (int i = 1; i <= 6; i++) {
            keeper.requestSent("lost-" + i, T0 + i * 5 * S);
        }
        assertFalse(keeper.valid(T0 + 20 * S));
        assertTrue(keeper.fenceDue(T0 + 20 * S));
        assertEquals("node-1 has no valid lease (epoch 1 expired)", keeper.refusal(T0 + 31 * S));
        keeper.fenced();
        assertFalse(keeper.fenceDue(T0 + 40 * S), "fenced once per epoch");
        assertEquals("node-1 has no valid lease (epoch 1 fenced)", keeper.refusal(T0 + 40 * S));
    }

    @Test
    void aGrantForNoRequestOfThisProcessGivesNothing() {
        LeaseKeeper keeper = new LeaseKeeper("node-1");
        assertEquals(LeaseKeeper.Change.NONE, keeper.onLease(grant(4, "before-my-start"), T0));
        assertFalse(keeper.valid(T0));
        assertEquals("node-1 has no valid lease (none granted yet)", keeper.refusal(T0));
        assertFalse(keeper.fenceDue(T0), "nothing to fence before a first grant");
    }

    /** The registry's lapse ends the epoch at once; only a higher epoch makes the lease valid again. */
    @Test
    void aLapseEndsTheEpochAndTheNextGrantHasAHigherOne() {
        LeaseKeeper keeper = new LeaseKeeper("node-1");
        keeper.requestSent("r1", T0);
        keeper.onLease(grant(3, "r1"), T0);
        assertEquals(LeaseKeeper.Change.ENDED, keeper.onLease(ended(3, NodeLeaseState.LAPSED), T0 + S));
        assertFalse(keeper.valid(T0 + S));
        assertTrue(keeper.fenceDue(T0 + S), "ended by the registry: fence now");
        assertEquals("node-1 has no valid lease (epoch 3 lapsed)", keeper.refusal(T0 + S));
        assertEquals(0, keeper.heldEpochForRequest());
        keeper.requestSent("r2", T0 + 2 * S);
        assertEquals(LeaseKeeper.Change.NONE, keeper.onLease(grant(3, "r2"), T0 + 2 * S), "a lapsed epoch is never valid again");
        assertEquals(LeaseKeeper.Change.NEW_EPOCH, keeper.onLease(grant(4, "r2"), T0 + 2 * S));
        assertTrue(keeper.valid(T0 + 3 * S));
        assertEquals(LeaseKeeper.Change.NONE, keeper.onLease(ended(3, NodeLeaseState.LAPSED), T0 + 3 * S), "old news");
        assertTrue(keeper.valid(T0 + 3 * S));
    }

    @Test
    void commandsOfAnOlderEpochAreStale() {
        LeaseKeeper keeper = new LeaseKeeper("node-1");
        keeper.requestSent("r1", T0);
        keeper.onLease(grant(3, "r1"), T0);
        assertEquals("stale lease epoch 2 < 3", keeper.staleEpoch(2L));
        assertNull(keeper.staleEpoch(3L));
        assertNull(keeper.staleEpoch(null), "a sender that predates leases");
    }

    /** A fence a previous process recorded ends that epoch here too: commands of it are stale, nothing is valid. */
    @Test
    void aRestoredFenceEndsItsEpoch() {
        LeaseKeeper keeper = new LeaseKeeper("node-1");
        keeper.restoreFenced(5);
        assertFalse(keeper.valid(T0));
        assertFalse(keeper.fenceDue(T0));
        assertEquals("stale lease epoch 4 < 5", keeper.staleEpoch(4L));
        keeper.requestSent("r1", T0);
        assertEquals(LeaseKeeper.Change.NONE, keeper.onLease(grant(5, "r1"), T0));
        assertEquals(LeaseKeeper.Change.NEW_EPOCH, keeper.onLease(grant(6, "r1"), T0));
        assertTrue(keeper.valid(T0));
    }
}
