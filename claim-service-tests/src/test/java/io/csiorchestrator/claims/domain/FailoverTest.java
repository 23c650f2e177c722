package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The failover rule (issue 19 items 2, 3 and 7): what claim-service frees after a lapse must be what the node fences.
 */
class FailoverTest {

    /**
     * For both failovers, a lapse frees the node's claims of the volume exactly when the node fences the volume's
     * mounts on a lapse (never a claim freed whose mount may stay); fence does both, manual neither.
     */
    @Test
    void aLapseFreesExactlyTheClaimsWhoseMountsTheNodeFences() {
        for (Failover f : Failover.values()) {
            assertEquals(f.fencesMounts(), f.freedByLapse(), f.wire());
        }
        assertTrue(Failover.FENCE.fencesMounts());
        assertTrue(Failover.FENCE.freedByLapse());
        assertFalse(Failover.MANUAL.fencesMounts());
        assertFalse(Failover.MANUAL.freedByLapse());
    }

    /** No stored value means fence; the wire names round-trip; an unknown one is refused naming the allowed ones. */
    @Test
    void theDefaultIsFenceAndAnUnknownValueIsRefused() {
        assertEquals(Failover.FENCE, Failover.effective(null));
        for (Failover f : Failover.values()) {
            assertEquals(f, Failover.effective(f.wire()));
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Failover.fromWire("auto"));
        assertEquals("'auto' is not one of fence, manual", e.getMessage());
    }
}
