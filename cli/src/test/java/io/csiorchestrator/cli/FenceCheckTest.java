package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.cli.ChaosCheck.NodeEv;
import io.csiorchestrator.cli.ChaosCheck.Violation;
import io.csiorchestrator.cli.FenceCheck.DetachRun;
import io.csiorchestrator.cli.FenceCheck.FenceRun;
import io.csiorchestrator.cli.FenceCheck.MountSample;
import io.csiorchestrator.cli.FenceCheck.Timers;
import io.csiorchestrator.events.NodeEventKind;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link FenceCheck} over hand-made runs of issue 19's fencing faults: the floor and bound from the timers, and one
 * test per violation (two writers in the sampled mount table, overlapping publishes in the node events, failover
 * too slow or never, the old node acting or keeping its mount after the heal, a live node's claim freed while
 * mounted), each next to the clean run it differs from.
 */
class FenceCheckTest {

    private static final String V = "fence-0";
    private static final long BOUND = 60_000;
    private final List<MountSample> samples = new ArrayList<>();
    private final List<NodeEv> events = new ArrayList<>();

    private void mounted(long at, String node, String... targets) {
        samples.add(new MountSample(at, node, List.of(targets)));
    }

    private void event(String node, NodeEventKind kind, String alloc, long at) {
        events.add(new NodeEv(node, kind, V, alloc, true, at));
    }

    /** node-1 writes, the fault at 10 s, node-1 fenced (unmounted) at 25 s, node-2 mounted at 30 s, heal at 40 s. */
    private void fencedRun() {
        mounted(1_000, "node-1", "/w/node-1/root/per-alloc/a1/chaos/" + V);
        event("node-1", NodeEventKind.MOUNT, "a1", 1_000);
        mounted(25_000, "node-1");
        event("node-1", NodeEventKind.UNMOUNT, "a1", 25_000);
        event("node-2", NodeEventKind.MOUNT, "b1", 30_000);
        mounted(30_050, "node-2", "/w/node-2/root/per-alloc/b1/chaos/" + V);
    }

    private List<Violation> check(long readyAt) {
        return FenceCheck.check(new FenceRun("partition-node-1", V, "node-1", "node-2", 10_000, readyAt, 40_000,
                50_000, BOUND, samples, events));
    }

    private static List<String> kinds(List<Violation> violations) {
        return violations.stream().map(Violation::kind).toList();
    }

    /** The design's defaults: floor 46.5 s; bound = floor + command timeout 2 min + slack. */
    @Test
    void floorAndBoundFollowTheTimers() {
        Timers defaults = Timers.of(Map.of(), Duration.ofSeconds(30));
        assertEquals(46_500, defaults.floorMillis());
        assertEquals(46_500 + 120_000 + 30_000, defaults.boundMillis());
        Timers shortOnes = Timers.of(Map.of("CSI_FENCING_LEASE_TTL", "6s", "CSI_FENCING_BUDGET", "2s",
                "CSI_FENCING_MARGIN", "1s", "CSI_CLAIMS_COMMAND_TIMEOUT", "10s"), Duration.ofSeconds(20));
        assertEquals(6_300 + 2_000 + 1_000, shortOnes.floorMillis());
        assertEquals(9_300 + 10_000 + 20_000, shortOnes.boundMillis());
        assertTrue(shortOnes.toString().contains("floor 9.3 s = lease-ttl 6s x 1.05 + budget 2s + margin 1s"),
                shortOnes.toString());
        assertEquals(Duration.ofMillis(500), FenceCheck.duration("500ms"));
        assertEquals(Duration.ofMinutes(2), FenceCheck.duration("2m"));
        assertEquals(Duration.ofSeconds(30), FenceCheck.duration("PT30S"));
    }

    /** Fenced before the failover, ready within the bound, nothing after the heal: no violation. */
    @Test
    void aFencedFailoverWithinTheBoundIsClean() {
        fencedRun();
        assertEquals(List.of(), check(30_100));
    }

    /** node-2 mounted while node-1's target is still in the mount table: two-writers-sampled and the event overlap. */
    @Test
    void node2MountedWhileNode1StillIsIsTwoWriters() {
        mounted(1_000, "node-1", "/w/node-1/root/per-alloc/a1/chaos/" + V);
        event("node-1", NodeEventKind.MOUNT, "a1", 1_000);
        event("node-2", NodeEventKind.MOUNT, "b1", 30_000);
        mounted(30_050, "node-2", "/w/node-2/root/per-alloc/b1/chaos/" + V);
        // node-1 unmounts only after SIGCONT / heal
        mounted(41_000, "node-1");
        event("node-1", NodeEventKind.UNMOUNT, "a1", 41_000);
        List<Violation> violations = check(30_100);
        assertEquals(List.of("two-writers-sampled", "writable-publish-overlap"), kinds(violations));
        assertTrue(violations.get(0).detail().contains("from 1970-01-01T00:00:30.050Z to 1970-01-01T00:00:41Z (10950 ms)"), violations.get(0).detail());
    }

    /** The overlap is found in the mount table alone, when no node event says so (e.g. events lost or late). */
    @Test
    void theSampledOverlapNeedsNoNodeEvent() {
        mounted(1_000, "node-1", "/t1");
        mounted(30_050, "node-2", "/t2");
        List<Violation> violations = check(30_100);
        assertEquals(List.of("two-writers-sampled", "stale-mount-after-heal"), kinds(violations));
        assertTrue(violations.get(0).detail().contains("to the end of the run"), violations.get(0).detail());
    }

    /** Ready after the bound, or never: failover-too-slow, failover-not-ready. */
    @Test
    void liveness() {
        fencedRun();
        assertEquals(List.of("failover-too-slow"), kinds(check(10_000 + BOUND + 1)));
        assertEquals(List.of(), check(10_000 + BOUND));
        assertEquals(List.of("failover-not-ready"), kinds(check(-1)));
    }

    /** After the heal node-1 mounts the volume again (a stale command acted on): stale-node-acted, from both sources. */
    @Test
    void node1MountingAfterTheHealIsAStaleAct() {
        fencedRun();
        event("node-1", NodeEventKind.MOUNT, "a1", 41_000);
        mounted(41_000, "node-1", "/w/node-1/root/per-alloc/a1/chaos/" + V);
        mounted(42_000, "node-1");
        List<Violation> violations = check(30_100);
        assertTrue(kinds(violations).contains("stale-node-acted"), violations.toString());
        assertEquals(2, kinds(violations).stream().filter("stale-node-acted"::equals).count(), violations.toString());
    }

    /** node-1 keeps its mount to the end of the watch after the heal: stale-mount-after-heal. */
    @Test
    void aMountLeftOnNode1AfterTheHealIsAViolation() {
        mounted(1_000, "node-1", "/t1");
        event("node-2", NodeEventKind.MOUNT, "b1", 30_000);
        List<Violation> violations = check(30_100);
        assertEquals(List.of("stale-mount-after-heal"), kinds(violations));
    }

    /** Operator detach of a live node: freed after the unmount is clean; freed while mounted, refused, or never is not. */
    @Test
    void detachOfALiveNodeFreesOnlyAfterTheUnmount() {
        assertEquals(List.of(), FenceCheck.check(new DetachRun("detach-live-node-2", V, "node-2", 1_000, 1_800,
                List.of(), 202)));
        List<Violation> early = FenceCheck.check(new DetachRun("detach-live-node-2", V, "node-2", 1_000, 1_050,
                List.of("/w/node-2/root/per-alloc/b1/chaos/" + V), 200));
        assertEquals(List.of("freed-while-mounted"), kinds(early));
        assertTrue(early.get(0).detail().contains("50 ms after the detach"), early.get(0).detail());
        assertEquals(List.of("detach-refused", "detach-not-done"), kinds(FenceCheck.check(new DetachRun(
                "detach-live-node-2", V, "node-2", 1_000, -1, List.of(), 409))));
    }

    /** --env parses NAME=VALUE pairs and refuses anything else. */
    @Test
    void envOption() {
        assertEquals(Map.of("CSI_FENCING_LEASE_TTL", "6s", "CSI_FENCING_BUDGET", "2s"),
                Chaos.env("CSI_FENCING_LEASE_TTL=6s,CSI_FENCING_BUDGET=2s"));
        assertEquals(Map.of(), Chaos.env(null));
        assertThrows(Args.UsageException.class, () -> Chaos.env("lower=1"));
    }

    /**
     * node-1's writer removed by its self-fence (a FENCED node event naming the publication, at the fence's time)
     * before node-2's mount is no overlap; without that event node-2's mount overlaps node-1's.
     */
    @Test
    void aFencedPublicationEndsTheOldNodesWriterInTheNodeEvents() {
        mounted(1_000, "node-1", "/w/node-1/root/per-alloc/a1/chaos/" + V);
        event("node-1", NodeEventKind.MOUNT, "a1", 1_000);
        mounted(25_000, "node-1");
        event("node-2", NodeEventKind.MOUNT, "b1", 30_000);
        mounted(30_050, "node-2", "/w/node-2/root/per-alloc/b1/chaos/" + V);
        assertEquals(List.of("writable-publish-overlap"), kinds(check(32_000)));
        event("node-1", NodeEventKind.FENCED, "a1", 25_000);
        assertEquals(List.of(), check(32_000));
    }

    // ------------------------------------------------------------------ the registry's restart

    private static final Timers TTL_30 = Timers.of(Map.of(), Duration.ofSeconds(30));

    /** Leases of node-1 (epoch 3) and node-2 (epoch 1) renewed every 5 s from 0 to {@code until}, none in the gap. */
    private static List<FenceCheck.LeaseEv> renewals(long gapFrom, long gapTo, long until) {
        List<FenceCheck.LeaseEv> out = new ArrayList<>();
        for (long at = 0; at <= until; at += 5_000) {
            if (at >= gapFrom && at < gapTo) {
                continue;
            }
            out.add(new FenceCheck.LeaseEv("node-1", 3, "valid", at));
            out.add(new FenceCheck.LeaseEv("node-2", 1, "valid", at + 100));
        }
        return out;
    }

    /**
     * One of two registries killed (dead) at 20 s, the survivor renewing from 30 s; the killed one started again at
     * 40 s, watched until 40 + 31.5 + 10 + 2 = 83.5 s.
     */
    private static List<Violation> restart(List<FenceCheck.LeaseEv> leases, List<NodeEv> events,
                                           List<ChaosCheck.Answer> answers) {
        return FenceCheck.check(new FenceCheck.RegistryRestart("registry-kill", List.of("node-1", "node-2"), 20_000,
                40_000, 83_500, TTL_30, leases, events, answers));
    }

    /**
     * A clean takeover (no lapse, renewals by the survivor and after the restart with the same epochs, nothing
     * fenced) has no violation; a lapse declared before kill + ttl x (1 + drift) is {@code lapse-before-floor}, one
     * after it (the workers were renewing) {@code lease-lapsed}; a new epoch after the kill {@code epoch-changed};
     * no grant between the kill and the restart {@code not-taken-over}; none after the restart
     * {@code renewals-not-resumed}; a FENCED node event or a claim failed for a fence in the window
     * {@code failed-over}.
     */
    @Test
    void aRegistryReplicasKillKeepsEveryLeaseItsEpochAndEveryClaim() {
        assertEquals(List.of(), restart(renewals(20_000, 30_000, 83_500), List.of(), List.of()));

        List<FenceCheck.LeaseEv> early = new ArrayList<>(renewals(20_000, 30_000, 83_500));
        early.add(new FenceCheck.LeaseEv("node-1", 3, "lapsed", 25_000));
        assertEquals(List.of("lapse-before-floor"), kinds(restart(early, List.of(), List.of())));

        List<FenceCheck.LeaseEv> late = new ArrayList<>(renewals(20_000, 30_000, 83_500));
        late.add(new FenceCheck.LeaseEv("node-2", 1, "lapsed", 60_000));
        assertEquals(List.of("lease-lapsed"), kinds(restart(late, List.of(), List.of())));

        List<FenceCheck.LeaseEv> newEpoch = new ArrayList<>(renewals(20_000, 90_000, 83_500));
        for (long at : new long[] {31_000, 45_000}) {
            newEpoch.add(new FenceCheck.LeaseEv("node-1", 4, "valid", at));
            newEpoch.add(new FenceCheck.LeaseEv("node-2", 1, "valid", at));
        }
        assertEquals(List.of("epoch-changed"), kinds(restart(newEpoch, List.of(), List.of())));

        List<FenceCheck.LeaseEv> notTakenOver = new ArrayList<>(renewals(20_000, 40_000, 83_500));
        assertEquals(List.of("not-taken-over", "not-taken-over"), kinds(restart(notTakenOver, List.of(), List.of())));

        List<FenceCheck.LeaseEv> stopped = new ArrayList<>(renewals(20_000, 30_000, 39_000));
        stopped.add(new FenceCheck.LeaseEv("node-2", 1, "valid", 45_000));
        assertEquals(List.of("renewals-not-resumed"), kinds(restart(stopped, List.of(), List.of())));

        List<FenceCheck.LeaseEv> silent = new ArrayList<>(renewals(20_000, 90_000, 83_500));
        for (long at : new long[] {31_000, 45_000}) {
            silent.add(new FenceCheck.LeaseEv("node-2", 1, "valid", at));
        }
        assertEquals(List.of("not-taken-over", "renewals-not-resumed"), kinds(restart(silent, List.of(), List.of())));

        List<Violation> fenced = restart(renewals(20_000, 30_000, 83_500),
                List.of(new NodeEv("node-1", NodeEventKind.FENCED, null, null, true, 40_000)),
                List.of(new ChaosCheck.Answer("r1", io.csiorchestrator.events.ClaimState.FAILED,
                        "node-1 fenced at epoch 3: mount removed", 41_000)));
        assertEquals(List.of("failed-over", "failed-over"), kinds(fenced));
    }
}
