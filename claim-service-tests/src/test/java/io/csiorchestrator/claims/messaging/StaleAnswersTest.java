package io.csiorchestrator.claims.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ClaimMachine;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommandKind;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Which mount-done answers of an older lease epoch than their node's newest are taken (pure logic). */
class StaleAnswersTest {

    private static MountDone answer(NodeCommandKind kind, boolean success, String code) {
        return new MountDone("c-1", "node-1", kind, "ns1", "vol-1", "alloc-1", success, code, success ? null : "no",
                Map.of(), null, null, Instant.EPOCH).withFencing(1L, 1L);
    }

    @Test
    void aMountRefusedBeforeAnyPluginCallIsTakenWhateverItsEpoch() {
        assertTrue(StaleAnswers.takenWhateverEpoch(answer(NodeCommandKind.MOUNT, false, "NO_VALID_LEASE")));
        assertTrue(StaleAnswers.takenWhateverEpoch(answer(NodeCommandKind.MOUNT, false, "STALE_LEASE_EPOCH")));
    }

    @Test
    void controllerAnswersAreTakenWhateverTheirEpochAndOutcome() {
        for (NodeCommandKind kind : new NodeCommandKind[] {NodeCommandKind.CONTROLLER_PUBLISH,
                NodeCommandKind.CONTROLLER_UNPUBLISH}) {
            assertTrue(StaleAnswers.takenWhateverEpoch(answer(kind, true, null)), kind.wire());
            assertTrue(StaleAnswers.takenWhateverEpoch(answer(kind, false, "UNAVAILABLE")), kind.wire());
        }
    }

    @Test
    void whatTheNodeDidOrMayHaveDoneStaysRefusedWhenStale() {
        assertFalse(StaleAnswers.takenWhateverEpoch(answer(NodeCommandKind.MOUNT, true, null)), "a mount made");
        assertFalse(StaleAnswers.takenWhateverEpoch(answer(NodeCommandKind.UNMOUNT, true, null)), "an unmount made");
        // a failure after the plugin was called may have left a staged or partly made mount
        assertFalse(StaleAnswers.takenWhateverEpoch(answer(NodeCommandKind.MOUNT, false, "INTERNAL")));
        assertFalse(StaleAnswers.takenWhateverEpoch(answer(NodeCommandKind.MOUNT, false, "FENCE_GUARD_UNFED")),
                "refused after the usage was recorded and rolled back: not before any call");
        assertFalse(StaleAnswers.takenWhateverEpoch(answer(NodeCommandKind.MOUNT, false, null)));
        // an unmount refused is no unmount: the claim must not take it as one of the old epoch either
        assertFalse(StaleAnswers.takenWhateverEpoch(answer(NodeCommandKind.UNMOUNT, false, "STALE_LEASE_EPOCH")));
    }

    @Test
    void theRefusalsTakenAreLeaseRefusalsTheClaimRetries() {
        // taken, they must lead to the mount sent again (ClaimMachine retries lease refusals), not to a final answer
        assertTrue(ClaimMachine.LEASE_REFUSALS.containsAll(StaleAnswers.REFUSED_BEFORE_ANY_CALL));
        assertEquals(Set.of("NO_VALID_LEASE", "STALE_LEASE_EPOCH"), StaleAnswers.REFUSED_BEFORE_ANY_CALL);
    }
}
