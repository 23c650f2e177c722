package io.csiorchestrator.worker.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseState;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Which commands the worker refuses before any plugin call (issue 19 items 2, 5), on a controlled monotonic clock. */
class LeaseGateTest {

    private static final long S = 1_000_000_000L;
    private static final Instant NOW = Instant.parse("2026-11-24T21:00:00Z");
    private final AtomicLong clock = new AtomicLong(5 * S);

    private static NodeCommand command(NodeCommandKind kind, Long epoch) {
        return new NodeCommand("cmd-" + kind.wire(), "node-1", kind, "default", "vol-1", "hostpath", "ext-1", "alloc-1",
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, Map.of(), Map.of(), null,
                NOW).withFencing(epoch, 7L, kind == NodeCommandKind.MOUNT);
    }

    private LeaseGate granted(long epoch) {
        LeaseGate gate = LeaseGate.enabled("node-1", clock::get);
        gate.requestSent("r1");
        gate.onLease(new NodeLease("node-1", epoch, NodeLeaseState.VALID, "r1", 30_000, 10_000, NOW));
        return gate;
    }

    @Test
    void aMountWithoutAnyLeaseIsRefusedAnUnmountRuns() {
        LeaseGate gate = LeaseGate.enabled("node-1", clock::get);
        MountDone refused = gate.refusal(command(NodeCommandKind.MOUNT, null), NOW).orElseThrow();
        assertFalse(refused.succeeded());
        assertEquals(LeaseGate.NO_VALID_LEASE, refused.errorCode());
        assertEquals("node-1 has no valid lease (none granted yet)", refused.errorMessage());
        assertEquals(7L, refused.claimGeneration());
        assertEquals(Optional.empty(), gate.refusal(command(NodeCommandKind.UNMOUNT, null), NOW));
        assertFalse(gate.valid());
    }

    @Test
    void aMountAfterTheFenceMomentIsRefusedWithTheEpoch() {
        LeaseGate gate = granted(3);
        assertEquals(Optional.empty(), gate.refusal(command(NodeCommandKind.MOUNT, 3L), NOW));
        assertTrue(gate.valid());
        clock.addAndGet(20 * S); // expiry - budget
        MountDone refused = gate.refusal(command(NodeCommandKind.MOUNT, 3L), NOW).orElseThrow();
        assertEquals("node-1 has no valid lease (epoch 3 expired)", refused.errorMessage());
        assertEquals(3L, refused.leaseEpoch());
        assertEquals(Optional.empty(), gate.refusal(command(NodeCommandKind.UNMOUNT, 3L), NOW), "unmounts still run");
    }

    @Test
    void aCommandOfAnOlderEpochIsRefusedWhateverItsKind() {
        LeaseGate gate = granted(3);
        for (NodeCommandKind kind : NodeCommandKind.values()) {
            MountDone refused = gate.refusal(command(kind, 2L), NOW).orElseThrow();
            assertEquals(LeaseGate.STALE_LEASE_EPOCH, refused.errorCode(), kind.wire());
            assertEquals("stale lease epoch 2 < 3", refused.errorMessage());
        }
        assertEquals(Optional.empty(), gate.refusal(command(NodeCommandKind.MOUNT, null), NOW), "no epoch: predates leases");
        assertEquals(3L, gate.epochOrNull());
    }

    @Test
    void aDisabledGateRefusesNothingAndStampsNoEpoch() {
        LeaseGate gate = LeaseGate.disabled("node-1");
        assertEquals(Optional.empty(), gate.refusal(command(NodeCommandKind.MOUNT, 2L), NOW));
        assertNull(gate.epochOrNull());
        assertTrue(gate.valid());
    }

    /** The fence begins once at expiry - budget (one fence per epoch), and a fenced epoch stays invalid. */
    @Test
    void theFenceBeginsOnceAtTheFenceMomentAndTheEpochStaysInvalid() {
        LeaseGate gate = granted(3);
        assertEquals(0, gate.beginFence(), "not due while valid");
        clock.addAndGet(20 * S);
        assertEquals(3, gate.beginFence());
        assertEquals(0, gate.beginFence(), "begun already");
        gate.fenceDone(3);
        assertFalse(gate.valid());
        assertEquals("node-1 has no valid lease (epoch 3 fenced)", gate.invalidReason());
    }

    /**
     * A new epoch granted while the previous one was never fenced (a worker frozen past its fence, the registry ended
     * the epoch and granted the next): that fence is overdue, the lease is not valid and mounts are refused until it
     * is done.
     */
    @Test
    void aNewEpochBeforeThePreviousWasFencedLeavesThatFenceOverdueAndMountsRefused() {
        LeaseGate gate = granted(3);
        clock.addAndGet(25 * S); // frozen past the fence moment, no tick ran
        gate.requestSent("r2");
        assertEquals(LeaseKeeper.Change.NEW_EPOCH,
                gate.onLease(new NodeLease("node-1", 4, NodeLeaseState.VALID, "r2", 30_000, 10_000, NOW)));
        assertFalse(gate.valid());
        MountDone refused = gate.refusal(command(NodeCommandKind.MOUNT, 4L), NOW).orElseThrow();
        assertEquals("node-1 has no valid lease (the fence of epoch 3 is not done yet)", refused.errorMessage());
        assertEquals(3, gate.beginFence());
        assertEquals(0, gate.beginFence());
        gate.fenceDone(3);
        assertTrue(gate.valid(), "epoch 4 once epoch 3 is fenced");
        assertEquals(4L, gate.epochOrNull());
    }
}
