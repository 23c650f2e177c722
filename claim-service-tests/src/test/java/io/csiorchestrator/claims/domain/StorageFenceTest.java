package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.StorageFence.Decision;
import io.csiorchestrator.claims.domain.StorageFence.Facts;
import io.csiorchestrator.claims.domain.StorageFence.Fence;
import io.csiorchestrator.claims.domain.StorageFence.NotApplicable;
import io.csiorchestrator.claims.domain.StorageFence.Unavailable;
import io.csiorchestrator.claims.domain.StorageFence.Unreachable;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The storage-fence rule (issue 19 item 4): when a teardown on an unreachable node is ended by a ControllerUnpublish. */
class StorageFenceTest {

    /** A release unmounting on node-1, whose lease is not valid, of the storage-fencing plugin sf with controllers on node-1 and node-2. */
    static Facts base() {
        return new Facts("sf", List.of("sf"), Failover.FENCE, true, Phase.UNMOUNTING, false, "node-1", "ext-node-1",
                List.of("node-1", "node-2"), "node-1", false, Unreachable.LEASE_NOT_VALID);
    }

    static Facts with(Facts f, String pluginId, Failover failover, boolean controllerRequired, Phase phase,
                      boolean alreadyFailed, String external, List<String> controllers, boolean others, Unreachable why) {
        return new Facts(pluginId, f.storageFencingPlugins(), failover, controllerRequired, phase, alreadyFailed, f.nodeId(),
                external, controllers, f.previousController(), others, why);
    }

    @Test
    void anUnreachableWritersTeardownIsFencedThroughAControllerOnAnotherNode() {
        Decision d = StorageFence.decide(base());
        assertEquals(new Fence("node-2", "node-1 is unreachable (its lease is not valid): storage-fencing it by"
                + " ControllerUnpublish through the controller on node-2"), d);
        Facts timedOut = with(base(), "sf", Failover.FENCE, true, Phase.UNMOUNTING, false, "ext-node-1",
                List.of("node-3", "node-1", "node-2"), false, Unreachable.UNMOUNT_TIMED_OUT);
        assertEquals(new Fence("node-3", "node-1 is unreachable (its unmount got no answer within the command timeout):"
                + " storage-fencing it by ControllerUnpublish through the controller on node-3"), StorageFence.decide(timedOut));
    }

    /** Cases where the rule has nothing to do: the lease wait (or the node's unmount) alone frees the claim, said as before. */
    @Test
    void theRuleDoesNotApplyToReachableNodesOtherPluginsOtherPhasesManualVolumesOrASecondTry() {
        Facts b = base();
        List<Facts> none = List.of(
                with(b, "sf", Failover.FENCE, true, Phase.UNMOUNTING, false, "ext-node-1", b.healthyControllerNodes(), false,
                        Unreachable.REACHABLE),
                with(b, "other", Failover.FENCE, true, Phase.UNMOUNTING, false, "ext-node-1", b.healthyControllerNodes(), false,
                        Unreachable.LEASE_NOT_VALID),
                with(b, "sf", Failover.FENCE, true, Phase.READY, false, "ext-node-1", b.healthyControllerNodes(), false,
                        Unreachable.LEASE_NOT_VALID),
                with(b, "sf", Failover.FENCE, true, Phase.MOUNTING, false, "ext-node-1", b.healthyControllerNodes(), false,
                        Unreachable.LEASE_NOT_VALID),
                with(b, "sf", Failover.FENCE, true, Phase.CONTROLLER_UNPUBLISHING, false, "ext-node-1",
                        b.healthyControllerNodes(), false, Unreachable.LEASE_NOT_VALID),
                with(b, "sf", Failover.MANUAL, true, Phase.UNMOUNTING, false, "ext-node-1", b.healthyControllerNodes(), false,
                        Unreachable.LEASE_NOT_VALID),
                with(b, "sf", Failover.FENCE, true, Phase.UNMOUNTING, true, "ext-node-1", b.healthyControllerNodes(), false,
                        Unreachable.LEASE_NOT_VALID));
        for (Facts f : none) {
            assertEquals(new NotApplicable(), StorageFence.decide(f), f.toString());
        }
    }

    /** A storage-fencing plugin whose node is unreachable but cannot be fenced now: the reason says why (lease wait then). */
    @Test
    void aFenceThatCannotBeSentSaysWhy() {
        Facts b = base();
        assertEquals(new Unavailable("no storage fence of node-1: plugin sf has no controller (no ControllerUnpublish)"),
                StorageFence.decide(with(b, "sf", Failover.FENCE, false, Phase.UNMOUNTING, false, "ext-node-1",
                        b.healthyControllerNodes(), false, Unreachable.LEASE_NOT_VALID)));
        assertEquals(new Unavailable("no storage fence of node-1: it is unknown to plugin sf (no external node id)"),
                StorageFence.decide(with(b, "sf", Failover.FENCE, true, Phase.UNMOUNTING, false, null,
                        b.healthyControllerNodes(), false, Unreachable.LEASE_NOT_VALID)));
        assertEquals(new Unavailable("no storage fence of node-1: another claim of the volume on node-1 still uses its"
                        + " controller publication"),
                StorageFence.decide(with(b, "sf", Failover.FENCE, true, Phase.UNMOUNTING, false, "ext-node-1",
                        b.healthyControllerNodes(), true, Unreachable.LEASE_NOT_VALID)));
        assertEquals(new Unavailable("no storage fence of node-1: plugin sf has no healthy controller instance on another"
                        + " node"),
                StorageFence.decide(with(b, "sf", Failover.FENCE, true, Phase.UNMOUNTING, false, "ext-node-1",
                        List.of("node-1"), false, Unreachable.LEASE_NOT_VALID)));
    }

    @Test
    void theControllerIsNeverTheFencedNode() {
        assertEquals("node-2", StorageFence.controllerFor(List.of("node-1", "node-2"), "node-1", "node-1"));
        assertEquals("node-3", StorageFence.controllerFor(List.of("node-2", "node-3"), "node-3", "node-1"));
        assertEquals("node-2", StorageFence.controllerFor(List.of("node-2", "node-3"), "node-9", "node-1"));
        assertNull(StorageFence.controllerFor(List.of("node-1"), null, "node-1"));
        assertNull(StorageFence.controllerFor(List.of(), null, "node-1"));
    }

    /**
     * A controller publish or unpublish goes to a healthy controller on a reachable node (lease valid): the previous one
     * only while reachable, else the first reachable one; with none reachable the previous healthy (or first healthy)
     * one as before; none healthy: null.
     */
    @Test
    void theControllerOfACommandIsOnAReachableNodeWhenThereIsOne() {
        java.util.function.Predicate<String> node1CutOff = n -> !n.equals("node-1");
        assertEquals("node-2", StorageFence.controllerFor(List.of("node-1", "node-2"), "node-1", node1CutOff));
        assertEquals("node-2", StorageFence.controllerFor(List.of("node-1", "node-2"), null, node1CutOff));
        assertEquals("node-3", StorageFence.controllerFor(List.of("node-1", "node-2", "node-3"), "node-3", node1CutOff));
        assertEquals("node-1", StorageFence.controllerFor(List.of("node-1", "node-2"), "node-1", n -> true));
        assertEquals("node-2", StorageFence.controllerFor(List.of("node-1", "node-2"), "node-2", n -> false));
        assertEquals("node-1", StorageFence.controllerFor(List.of("node-1"), null, node1CutOff));
        assertNull(StorageFence.controllerFor(List.of(), "node-1", node1CutOff));
    }

    /** A lease is valid when received VALID and renewed within lease-ttl x (1 + drift); LAPSED/FENCED never; unknown counts as valid. */
    @Test
    void aLeaseIsValidOnlyWhileRenewed() {
        FenceTimers t = FenceTimers.DEFAULT; // drifted ttl 31.5 s
        long s = Duration.ofSeconds(1).toNanos();
        LeaseBook.Entry valid = new LeaseBook.Entry(3, LeaseBook.State.VALID, 10 * s, -1);
        assertTrue(StorageFence.leaseValid(valid, t, 10 * s + Duration.ofMillis(31_500).toNanos()));
        assertFalse(StorageFence.leaseValid(valid, t, 10 * s + Duration.ofMillis(31_501).toNanos()));
        assertFalse(StorageFence.leaseValid(new LeaseBook.Entry(3, LeaseBook.State.LAPSED, 10 * s, 11 * s), t, 11 * s));
        assertFalse(StorageFence.leaseValid(new LeaseBook.Entry(3, LeaseBook.State.FENCED, 10 * s, 11 * s), t, 11 * s));
        assertTrue(StorageFence.leaseValid(null, t, 100 * s));
    }
}
