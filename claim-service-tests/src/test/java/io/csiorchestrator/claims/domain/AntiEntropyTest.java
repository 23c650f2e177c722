package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.AntiEntropy.ClaimView;
import io.csiorchestrator.claims.domain.AntiEntropy.Difference;
import io.csiorchestrator.claims.domain.AntiEntropy.Kind;
import io.csiorchestrator.claims.domain.AntiEntropy.Plan;
import io.csiorchestrator.claims.domain.AntiEntropy.Remount;
import io.csiorchestrator.claims.domain.AntiEntropy.UnmountOrphan;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.ReportedMount;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The pure anti-entropy comparison: which differences are repaired, and when it waits. */
class AntiEntropyTest {

    static final Instant T0 = Instant.parse("2026-11-24T12:00:00Z");
    static final Duration GRACE = Duration.ofSeconds(30);
    final AntiEntropy ae = new AntiEntropy(GRACE);

    static NodeStateReported report(Instant takenAt, ReportedMount state) {
        return new NodeStateReported("node-1", 1L, takenAt, List.of(new NodeStateReported.VolumeState("ns", "vol-1", "hp",
                "ext-1", ReportedMount.MOUNTED, List.of(new NodeStateReported.Publication("alloc-1",
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, state, "cmd-1")), List.of())));
    }

    static NodeStateReported empty(Instant takenAt) {
        return new NodeStateReported("node-1", 1L, takenAt, List.of());
    }

    static ClaimView claim(Phase phase, Instant lastTransition) {
        return new ClaimView("c-1", "ns", "vol-1", "alloc-1", phase, phase.past(), lastTransition);
    }

    static final Difference ORPHAN = new Difference(Kind.ORPHAN, "node-1", "ns", "vol-1", "alloc-1");
    static final Difference LOST = new Difference(Kind.MOUNT_LOST, "node-1", "ns", "vol-1", "alloc-1");

    @Test
    void anOrphanIsRepairedOnlyOnceItHasLastedTheGrace() {
        Plan first = ae.plan(report(T0, ReportedMount.MOUNTED), List.of(), Map.of());
        assertEquals(List.of(), first.repairs(), "first seen: waits");
        assertEquals(Map.of(ORPHAN, T0), first.pending());

        Plan early = ae.plan(report(T0.plusSeconds(29), ReportedMount.MOUNTED), List.of(), first.pending());
        assertEquals(List.of(), early.repairs(), "29 s < grace");
        assertEquals(Map.of(ORPHAN, T0), early.pending(), "first seen is kept");

        Plan due = ae.plan(report(T0.plusSeconds(30), ReportedMount.MOUNTED), List.of(), early.pending());
        assertEquals(1, due.repairs().size());
        UnmountOrphan repair = (UnmountOrphan) due.repairs().get(0);
        assertEquals(ORPHAN, repair.difference());
        assertEquals("hp", repair.pluginId());
        assertEquals("ext-1", repair.externalVolumeId());
        assertEquals(AccessMode.SINGLE_NODE_WRITER, repair.accessMode());
        assertTrue(repair.why().contains("holds no claim"), repair.why());
    }

    @Test
    void aRecordedPublicationMissingFromTheMountTableWithoutClaimIsAnOrphanToo() {
        Plan due = ae.plan(report(T0.plus(GRACE), ReportedMount.MISSING), List.of(), Map.of(ORPHAN, T0));
        assertEquals(List.of(ORPHAN), due.repairs().stream().map(AntiEntropy.Repair::difference).toList());
    }

    @Test
    void uncertainPublicationsAreNeverDifferences() {
        for (ReportedMount uncertain : List.of(ReportedMount.MOUNTING, ReportedMount.UNMOUNTING)) {
            Plan p = ae.plan(report(T0.plus(GRACE), uncertain), List.of(), Map.of(ORPHAN, T0));
            assertEquals(List.of(), p.repairs(), uncertain.wire());
            assertEquals(Map.of(), p.pending(), uncertain.wire());
        }
        // a READY claim whose publication is uncertain (an unmount in flight): no remount either
        Plan p = ae.plan(report(T0.plus(GRACE), ReportedMount.UNMOUNTING), List.of(claim(Phase.READY, T0.minusSeconds(60))),
                Map.of(LOST, T0));
        assertEquals(List.of(), p.repairs());
    }

    @Test
    void aMountHeldByACurrentClaimInAnyPhaseIsNoOrphan() {
        for (Phase phase : List.of(Phase.CONTROLLER_PUBLISHING, Phase.MOUNTING, Phase.READY, Phase.UNMOUNTING,
                Phase.CONTROLLER_UNPUBLISHING)) {
            Plan p = ae.plan(report(T0.plus(GRACE), ReportedMount.MOUNTED), List.of(claim(phase, T0.minusSeconds(60))),
                    Map.of(ORPHAN, T0));
            assertEquals(List.of(), p.repairs(), phase.name());
        }
    }

    @Test
    void aReportOlderThanTheClaimsLastTransitionChangesNothing() {
        Instant taken = T0.plus(GRACE);
        // a claim released (past) at or after the report was taken: the report still shows its mount
        Plan released = ae.plan(report(taken, ReportedMount.MOUNTED), List.of(claim(Phase.FREED, taken)), Map.of(ORPHAN, T0));
        assertEquals(List.of(), released.repairs());
        assertEquals(Map.of(), released.pending(), "not even counted as seen");
        // a claim that became READY after the report was taken: the report does not have its mount yet
        Plan granted = ae.plan(empty(taken), List.of(claim(Phase.READY, taken.plusMillis(1))), Map.of(LOST, T0));
        assertEquals(List.of(), granted.repairs());
        assertEquals(Map.of(), granted.pending());
    }

    @Test
    void aPastClaimThatEndedBeforeTheReportLeavesARealOrphan() {
        Plan p = ae.plan(report(T0.plus(GRACE), ReportedMount.MOUNTED), List.of(claim(Phase.FREED, T0.minusSeconds(1))),
                Map.of(ORPHAN, T0));
        assertEquals(List.of(ORPHAN), p.repairs().stream().map(AntiEntropy.Repair::difference).toList());
    }

    @Test
    void aReadyClaimWhoseMountIsMissingOrGoneIsRemountedAfterTheGrace() {
        ClaimView ready = claim(Phase.READY, T0.minusSeconds(60));
        for (NodeStateReported first : List.of(report(T0, ReportedMount.MISSING), empty(T0))) {
            Plan seen = ae.plan(first, List.of(ready), Map.of());
            assertEquals(List.of(), seen.repairs());
            assertEquals(Map.of(LOST, T0), seen.pending());
            NodeStateReported later = new NodeStateReported("node-1", 2L, T0.plus(GRACE), first.volumes());
            Plan due = ae.plan(later, List.of(ready), seen.pending());
            assertEquals(List.of(new Remount(LOST, "c-1", ((Remount) due.repairs().get(0)).why())), due.repairs());
        }
    }

    @Test
    void theGraceOfALostMountCountsFromTheClaimsLastTransitionWhenThatIsLater() {
        // seen first at T0, but the claim became READY (again) at T0 + 10 s, before this report: 30 s from then
        ClaimView ready = claim(Phase.READY, T0.plusSeconds(10));
        Plan p = ae.plan(new NodeStateReported("node-1", 3L, T0.plusSeconds(35), List.of()), List.of(ready), Map.of(LOST, T0));
        assertEquals(List.of(), p.repairs());
        Plan due = ae.plan(new NodeStateReported("node-1", 4L, T0.plusSeconds(40), List.of()), List.of(ready), p.pending());
        assertEquals(1, due.repairs().size());
    }

    @Test
    void aMountedReadyClaimAndClaimsInTransitionAreNoDifference() {
        assertEquals(List.of(), ae.plan(report(T0, ReportedMount.MOUNTED), List.of(claim(Phase.READY, T0.minusSeconds(60))),
                Map.of()).pending().keySet().stream().toList());
        for (Phase phase : List.of(Phase.CONTROLLER_PUBLISHING, Phase.MOUNTING, Phase.UNMOUNTING)) {
            Plan p = ae.plan(empty(T0.plus(GRACE)), List.of(claim(phase, T0.minusSeconds(60))), Map.of(LOST, T0));
            assertEquals(List.of(), p.repairs(), phase.name());
        }
    }

    @Test
    void aDifferenceThatWentAwayIsForgotten() {
        Plan p = ae.plan(report(T0.plus(GRACE), ReportedMount.MOUNTED), List.of(claim(Phase.READY, T0.minusSeconds(60))),
                Map.of(LOST, T0, ORPHAN, T0));
        assertEquals(List.of(), p.repairs());
        assertEquals(Map.of(), p.pending());
    }

    @Test
    void anotherNodesOrAllocationsClaimDoesNotHoldTheMount() {
        ClaimView otherAlloc = new ClaimView("c-2", "ns", "vol-1", "alloc-2", Phase.READY, false, T0.minusSeconds(60));
        Plan p = ae.plan(report(T0.plus(GRACE), ReportedMount.MOUNTED), List.of(otherAlloc), Map.of(ORPHAN, T0));
        assertTrue(p.repairs().stream().anyMatch(r -> r.difference().equals(ORPHAN)), p.toString());
    }
}
