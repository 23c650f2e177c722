package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ProvisionMachine.Deregister;
import io.csiorchestrator.claims.domain.ProvisionMachine.Phase;
import io.csiorchestrator.claims.domain.ProvisionMachine.Register;
import io.csiorchestrator.claims.domain.ProvisionMachine.Report;
import io.csiorchestrator.claims.domain.ProvisionMachine.RetryLater;
import io.csiorchestrator.claims.domain.ProvisionMachine.Send;
import io.csiorchestrator.claims.domain.ProvisionMachine.Snapshot;
import io.csiorchestrator.claims.domain.ProvisionMachine.Transition;
import io.csiorchestrator.events.NodeCommandKind;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** The provisioning state machine alone: its phases, the CSI error table and the delete refusals. */
class ProvisionMachineTest {

    private static final ProvisionMachine MACHINE = new ProvisionMachine(
            new ProvisionMachine.Policy(3, Duration.ofSeconds(1), Duration.ofSeconds(10)));

    private static Snapshot at(Phase phase, int attempt, boolean source) {
        return new Snapshot(phase, attempt, source);
    }

    /** create -> CREATING with the CreateVolume command; success -> CREATED, registered; delete -> DELETING; success -> DELETED, deregistered. */
    @Test
    void aCreateThenDeleteWalksThePhasesWithTheirCommandsAndRegistrations() {
        Transition created = MACHINE.create(false);
        assertEquals(at(Phase.CREATING, 1, false), created.next());
        assertEquals(List.of(new Send(NodeCommandKind.CREATE_VOLUME)), created.effects());

        Transition done = MACHINE.succeeded(created.next());
        assertEquals(Phase.CREATED, done.next().phase());
        assertTrue(done.effects().contains(new Register()), done.effects().toString());

        Transition deleting = MACHINE.delete(done.next());
        assertEquals(at(Phase.DELETING, 1, false), deleting.next());
        assertEquals(List.of(new Send(NodeCommandKind.DELETE_VOLUME)), deleting.effects());

        Transition deleted = MACHINE.succeeded(deleting.next());
        assertEquals(Phase.DELETED, deleted.next().phase());
        assertTrue(deleted.effects().contains(new Deregister()), deleted.effects().toString());
    }

    /**
     * The CSI error table, as retried (R) or fatal (F) for a create without source, a create from a snapshot and a
     * delete; a delete's NOT_FOUND is done (D).
     */
    @ParameterizedTest(name = "{0}: create {1}, create from source {2}, delete {3}")
    @CsvSource({
            "UNAVAILABLE,         R, R, R",
            "DEADLINE_EXCEEDED,   R, R, R",
            "CANCELED,            R, R, R",
            "ABORTED,             R, R, R",
            "RESOURCE_EXHAUSTED,  R, R, R",
            "PLUGIN_NOT_FOUND,    R, R, R",
            "SNAPSHOT_NOT_READY,  R, R, R",
            "FAILED_PRECONDITION, F, R, R",
            "NOT_FOUND,           F, F, D",
            "INVALID_ARGUMENT,    F, F, F",
            "ALREADY_EXISTS,      F, F, F",
            "OUT_OF_RANGE,        F, F, F",
            "UNIMPLEMENTED,       F, F, F",
            "INTERNAL,            F, F, F",
    })
    void theCsiErrorTableDecidesRetryFailureOrDone(String code, String create, String fromSource, String delete) {
        assertOutcome(create, at(Phase.CREATING, 1, false), code, Phase.CREATE_FAILED);
        assertOutcome(fromSource, at(Phase.CREATING, 1, true), code, Phase.CREATE_FAILED);
        assertOutcome(delete, at(Phase.DELETING, 1, false), code, Phase.DELETE_FAILED);
    }

    private static void assertOutcome(String expected, Snapshot s, String code, Phase failedPhase) {
        Transition t = MACHINE.failed(s, code, "the plugin's message");
        switch (expected) {
            case "R" -> {
                assertEquals(s, t.next(), code);
                assertTrue(t.effects().get(0) instanceof RetryLater r && r.lastError().contains(code)
                        && r.lastError().contains("the plugin's message"), code + ": " + t.effects());
            }
            case "F" -> {
                assertEquals(failedPhase, t.next().phase(), code);
                assertTrue(t.effects().get(0) instanceof Report r && r.reason().contains(code), code + ": " + t.effects());
            }
            case "D" -> {
                assertEquals(Phase.DELETED, t.next().phase(), code);
                assertTrue(t.effects().contains(new Deregister()), code + ": " + t.effects());
            }
            default -> throw new IllegalArgumentException(expected);
        }
    }

    /** Retries back off exponentially; the attempt after the last allowed one fails and says it gave up. */
    @Test
    void retriesBackOffAndStopAfterTheLastAttempt() {
        Transition first = MACHINE.failed(at(Phase.CREATING, 1, false), "ABORTED", "busy");
        assertEquals(Duration.ofSeconds(1), ((RetryLater) first.effects().get(0)).delay());
        Transition due = MACHINE.retryDue(first.next());
        assertEquals(at(Phase.CREATING, 2, false), due.next());
        assertEquals(List.of(new Send(NodeCommandKind.CREATE_VOLUME)), due.effects());
        assertEquals(Duration.ofSeconds(2), ((RetryLater) MACHINE.failed(due.next(), "ABORTED", "busy").effects().get(0)).delay());

        Transition last = MACHINE.timedOut(at(Phase.CREATING, 3, false), Duration.ofSeconds(30));
        assertEquals(Phase.CREATE_FAILED, last.next().phase());
        String reason = ((Report) last.effects().get(0)).reason();
        assertTrue(reason.contains("DEADLINE_EXCEEDED") && reason.contains("gave up after 3 attempts"), reason);
    }

    /**
     * A claimed volume and one still being created are not deleted; a failed create's delete first finds the volume
     * by name (CreateVolume again, FINDING) instead of dropping the record.
     */
    @Test
    void aDeleteIsRefusedWhileClaimedOrCreatingAndAFailedCreateIsLookedUpByNameFirst() {
        String claimed = ProvisionMachine.deleteRefusal(at(Phase.CREATED, 1, false), "default/v", List.of("alloc-1"));
        assertTrue(claimed != null && claimed.contains("alloc-1") && claimed.contains("default/v"), claimed);
        String creating = ProvisionMachine.deleteRefusal(at(Phase.CREATING, 2, false), "default/v", List.of());
        assertTrue(creating != null && creating.contains("being created"), creating);
        assertNull(ProvisionMachine.deleteRefusal(at(Phase.CREATED, 1, false), "default/v", List.of()));

        Transition finding = MACHINE.delete(at(Phase.CREATE_FAILED, 3, false));
        assertEquals(at(Phase.FINDING, 1, false), finding.next());
        assertEquals(List.of(new Send(NodeCommandKind.CREATE_VOLUME)), finding.effects());
        assertEquals(List.of(), MACHINE.delete(finding.next()).effects(), "a second delete while finding changes nothing");
        assertEquals(List.of(new Send(NodeCommandKind.DELETE_VOLUME)), MACHINE.delete(at(Phase.DELETE_FAILED, 2, false)).effects());
    }

    // ------------------------------------------------------------------ expansion (issue 14 item 3)

    /**
     * expand -> EXPANDING with ControllerExpandVolume; the controller's success with node expansion required and claims
     * on n2 and n1 (n1 twice) -> NODE_EXPANDING, NodeExpandVolume to n1 first, then n2; after n2 -> CREATED.
     */
    @Test
    void anExpansionRunsTheControllerThenEachClaimedNodeOnceInOrderThenIsCreatedAgain() {
        Transition expanding = MACHINE.expand(at(Phase.CREATED, 1, false));
        assertEquals(at(Phase.EXPANDING, 1, false), expanding.next());
        assertEquals(List.of(new Send(NodeCommandKind.CONTROLLER_EXPAND)), expanding.effects());

        Transition n1 = MACHINE.controllerExpanded(expanding.next(), true, List.of("n2", "n1", "n1"));
        assertEquals(new Snapshot(Phase.NODE_EXPANDING, 1, false, List.of("n1", "n2")), n1.next());
        assertEquals("n1", n1.next().expandNode());
        assertEquals(List.of(new Send(NodeCommandKind.NODE_EXPAND)), n1.effects());

        Transition n2 = MACHINE.succeeded(n1.next());
        assertEquals(new Snapshot(Phase.NODE_EXPANDING, 1, false, List.of("n2")), n2.next());
        assertEquals(List.of(new Send(NodeCommandKind.NODE_EXPAND)), n2.effects());

        Transition done = MACHINE.succeeded(n2.next());
        assertEquals(at(Phase.CREATED, 1, false), done.next());
        assertTrue(done.effects().stream().allMatch(e -> e instanceof Report r && r.phase() == Phase.CREATED), done.effects().toString());
    }

    /**
     * Resize on mount (issue 14): a claim ready on a node behind the node expansion starts a NODE_EXPANDING run of that
     * node from CREATED (marked onMount, its end reported as an expansion with "resize on mount"); within a run the
     * node is appended once, and appended again when it is the node whose call is in flight (that call may have found
     * nothing published); while EXPANDING, in EXPAND_FAILED or any other phase nothing happens. Every end of an
     * expansion is a Report marked as one (create and delete results are not).
     */
    @Test
    void aClaimReadyOnANodeBehindStartsOrJoinsANodeExpansionRunAndNothingElse() {
        Transition start = MACHINE.claimReady(at(Phase.CREATED, 3, false), "n3");
        assertEquals(new Snapshot(Phase.NODE_EXPANDING, 1, false, List.of("n3"), true), start.next());
        assertEquals(List.of(new Send(NodeCommandKind.NODE_EXPAND)), start.effects());
        Transition joined = MACHINE.claimReady(start.next(), "n1");
        assertEquals(new Snapshot(Phase.NODE_EXPANDING, 1, false, List.of("n3", "n1"), true), joined.next());
        assertEquals(List.of(), joined.effects(), "one call in flight per volume: the node waits its turn");
        assertEquals(joined.next(), MACHINE.claimReady(joined.next(), "n1").next(), "queued once");
        assertEquals(List.of("n3", "n1", "n3"), MACHINE.claimReady(joined.next(), "n3").next().expandNodes(),
                "the node in flight is queued again");
        Transition next = MACHINE.succeeded(joined.next());
        assertEquals(new Snapshot(Phase.NODE_EXPANDING, 1, false, List.of("n1"), true), next.next());
        Transition done = MACHINE.succeeded(next.next());
        assertEquals(at(Phase.CREATED, 1, false), done.next());
        Report report = (Report) done.effects().get(0);
        assertTrue(report.expansion() && report.reason().contains("resize on mount"), report.toString());
        for (Phase other : List.of(Phase.EXPANDING, Phase.EXPAND_FAILED, Phase.CREATING, Phase.DELETING, Phase.DELETE_FAILED)) {
            Transition none = MACHINE.claimReady(at(other, 2, false), "n1");
            assertEquals(at(other, 2, false), none.next(), other.name());
            assertEquals(List.of(), none.effects(), other.name());
        }
        Transition byRequest = MACHINE.controllerExpanded(at(Phase.EXPANDING, 1, false), true, List.of("n1"));
        assertTrue(!byRequest.next().onMount(), "a run started by an expansion request is not on mount");
        Report expanded = (Report) MACHINE.succeeded(byRequest.next()).effects().get(0);
        assertTrue(expanded.expansion() && !expanded.reason().contains("resize on mount"), expanded.toString());
        assertTrue(((Report) MACHINE.failed(byRequest.next(), "FAILED_PRECONDITION", "busy").effects().get(0)).expansion());
        assertTrue(MACHINE.succeeded(at(Phase.CREATING, 1, false)).effects().stream()
                .noneMatch(e -> e instanceof Report r && r.expansion()), "a create's result is no expansion's");
    }

    /**
     * A plugin that expands offline only refuses the expansion of a claimed volume: a conflict naming the plugin, the
     * volume, each claim and what to do; unclaimed, or an online plugin: no refusal.
     */
    @Test
    void anOfflineOnlyPluginsExpansionOfAClaimedVolumeIsAConflictSayingToReleaseTheClaims() {
        ProvisionMachine.ExpandRefusal refusal = ProvisionMachine.offlineRefusal("ns/v", "hp", true,
                List.of("alloc-1 on node n1", "alloc-2 on node n2"));
        assertTrue(refusal.conflict());
        assertEquals("volume", refusal.field());
        assertEquals("ns/v", refusal.value());
        assertTrue(refusal.reason().contains("plugin hp expands volumes offline only")
                && refusal.reason().contains("alloc-1 on node n1, alloc-2 on node n2")
                && refusal.reason().contains("release the claims first"), refusal.reason());
        assertNull(ProvisionMachine.offlineRefusal("ns/v", "hp", true, List.of()));
        assertNull(ProvisionMachine.offlineRefusal("ns/v", "hp", false, List.of("alloc-1 on node n1")));
    }

    /** Without node expansion required, or with no claimed node, the controller's success ends the expansion (CREATED, no command). */
    @Test
    void anExpansionWithoutNodeWorkEndsAtTheController() {
        Snapshot expanding = at(Phase.EXPANDING, 2, false);
        Transition noNodeWork = MACHINE.controllerExpanded(expanding, false, List.of("n1"));
        assertEquals(Phase.CREATED, noNodeWork.next().phase());
        assertTrue(noNodeWork.effects().stream().noneMatch(e -> e instanceof Send), noNodeWork.effects().toString());
        Transition unclaimed = MACHINE.controllerExpanded(expanding, true, List.of());
        assertEquals(Phase.CREATED, unclaimed.next().phase());
        assertTrue(unclaimed.effects().stream().noneMatch(e -> e instanceof Send), unclaimed.effects().toString());
    }

    /**
     * The CSI error table for the expansion calls: transient codes are retried with backoff (the same step again:
     * the same node for NodeExpandVolume); FAILED_PRECONDITION from NodeExpandVolume is never retried and names the
     * node, the code, the plugin's message and that it was not retried; other codes are fatal (EXPAND_FAILED).
     */
    @ParameterizedTest(name = "{0}: controller {1}, node {2}")
    @CsvSource({
            "UNAVAILABLE,         R, R",
            "DEADLINE_EXCEEDED,   R, R",
            "ABORTED,             R, R",
            "RESOURCE_EXHAUSTED,  R, R",
            "PLUGIN_NOT_FOUND,    R, R",
            "FAILED_PRECONDITION, F, F",
            "OUT_OF_RANGE,        F, F",
            "INVALID_ARGUMENT,    F, F",
            "NOT_FOUND,           F, F",
            "UNIMPLEMENTED,       F, F"
    })
    void expansionErrorsFollowTheCsiTable(String code, char controller, char node) {
        assertOutcome(MACHINE.failed(at(Phase.EXPANDING, 1, false), code, "m"), controller, Phase.EXPANDING);
        Snapshot nodeStep = new Snapshot(Phase.NODE_EXPANDING, 1, false, List.of("n1", "n2"));
        Transition t = MACHINE.failed(nodeStep, code, "the file system is busy");
        assertOutcome(t, node, Phase.NODE_EXPANDING);
        if (node == 'R') {
            assertEquals(nodeStep, t.next(), "the same node's call is retried");
            Transition again = MACHINE.retryDue(t.next());
            assertEquals(new Snapshot(Phase.NODE_EXPANDING, 2, false, List.of("n1", "n2")), again.next());
            assertEquals(List.of(new Send(NodeCommandKind.NODE_EXPAND)), again.effects());
        } else {
            Report report = (Report) t.effects().get(0);
            assertTrue(report.reason().startsWith("NodeExpandVolume on node n1 failed with " + code + ": the file system is busy"),
                    report.reason());
            assertEquals("FAILED_PRECONDITION".equals(code), report.reason().contains("not retried"), report.reason());
            assertEquals(List.of(), t.next().expandNodes(), "a failed expansion keeps no nodes to expand");
        }
    }

    private static void assertOutcome(Transition t, char expected, Phase phase) {
        if (expected == 'R') {
            assertEquals(phase, t.next().phase());
            assertTrue(t.effects().get(0) instanceof RetryLater, t.effects().toString());
        } else {
            assertEquals(Phase.EXPAND_FAILED, t.next().phase());
            assertTrue(t.effects().get(0) instanceof Report r && r.phase() == Phase.EXPAND_FAILED, t.effects().toString());
        }
    }

    /**
     * Expansion refusals: a capacity below the volume's (400, field capacity), a plugin without EXPAND_VOLUME (400,
     * field plugin), a volume being created, deleted or expanded (409); a CREATED or EXPAND_FAILED volume with a
     * capacity at least its own is accepted, the same capacity on a CREATED one is already done; the delete of a
     * volume being expanded is refused.
     */
    @Test
    void expansionRefusalsNameTheFieldAndValueAndConflictsAreTold() {
        Snapshot created = at(Phase.CREATED, 1, false);
        ProvisionMachine.ExpandRefusal smaller = ProvisionMachine.expandRefusal(created, "default/v", "hp", true, 2048L, 1024);
        assertEquals(new ProvisionMachine.ExpandRefusal("capacity", "1024",
                "is smaller than the volume's 2048 bytes; volumes are never shrunk", false), smaller);
        ProvisionMachine.ExpandRefusal plugin = ProvisionMachine.expandRefusal(created, "default/v", "hp", false, 1024L, 2048);
        assertEquals("plugin", plugin.field());
        assertEquals("hp", plugin.value());
        assertTrue(!plugin.conflict() && plugin.reason().contains("EXPAND_VOLUME"), plugin.toString());
        for (Phase busy : List.of(Phase.CREATING, Phase.DELETING, Phase.EXPANDING, Phase.NODE_EXPANDING)) {
            ProvisionMachine.ExpandRefusal r = ProvisionMachine.expandRefusal(at(busy, 2, false), "default/v", "hp", true, 1024L, 2048);
            assertTrue(r != null && r.conflict() && "volume".equals(r.field()), busy + ": " + r);
        }
        assertNull(ProvisionMachine.expandRefusal(created, "default/v", "hp", true, 1024L, 2048));
        assertNull(ProvisionMachine.expandRefusal(at(Phase.EXPAND_FAILED, 1, false), "default/v", "hp", true, 2048L, 2048));
        assertTrue(ProvisionMachine.alreadyExpanded(created, 2048L, 2048));
        assertTrue(!ProvisionMachine.alreadyExpanded(at(Phase.EXPAND_FAILED, 1, false), 2048L, 2048),
                "a failed expansion to the same size runs again");
        assertEquals(Phase.EXPANDING, MACHINE.expand(at(Phase.EXPAND_FAILED, 3, false)).next().phase());
        assertTrue(ProvisionMachine.deleteRefusal(at(Phase.NODE_EXPANDING, 1, false), "default/v", List.of())
                .contains("being expanded"));
        assertEquals(Phase.DELETING, MACHINE.delete(at(Phase.EXPAND_FAILED, 1, false)).next().phase());
    }

    /**
     * Adoption by name (issue 14 item 1): a create that gave up after timeouts (the plugin may have made the volume)
     * is deleted by finding it: the CreateVolume by the same name answers with the volume, which is then deleted by
     * its id (DELETING, attempt 1), never dropped unseen. A fatal answer (no volume can have that name) removes the
     * record; a retryable one is retried as FINDING; ALREADY_EXISTS or spent attempts keep the record (CREATE_FAILED)
     * and report the delete failed.
     */
    @Test
    void aFailedCreatesDeleteAdoptsTheVolumeByNameThenDeletesIt() {
        Snapshot gaveUp = MACHINE.timedOut(at(Phase.CREATING, 3, false), Duration.ofSeconds(30)).next();
        assertEquals(Phase.CREATE_FAILED, gaveUp.phase());
        Snapshot finding = MACHINE.delete(gaveUp).next();

        Transition found = MACHINE.succeeded(finding);
        assertEquals(at(Phase.DELETING, 1, false), found.next());
        assertEquals(List.of(new Send(NodeCommandKind.DELETE_VOLUME)), found.effects());
        assertEquals(Phase.DELETED, MACHINE.succeeded(found.next()).next().phase());

        Transition none = MACHINE.failed(finding, "INVALID_ARGUMENT", "parameter 'tier' is unknown");
        assertEquals(Phase.DELETED, none.next().phase());
        assertTrue(none.effects().contains(new Deregister()), none.effects().toString());
        Report removed = (Report) none.effects().get(1);
        assertTrue(removed.reason().contains("holds no volume by this name") && removed.reason().contains("INVALID_ARGUMENT"),
                removed.reason());

        Transition busy = MACHINE.failed(finding, "UNAVAILABLE", "restarting");
        assertTrue(busy.effects().get(0) instanceof RetryLater, busy.effects().toString());
        Transition again = MACHINE.retryDue(busy.next());
        assertEquals(at(Phase.FINDING, 2, false), again.next());
        assertEquals(List.of(new Send(NodeCommandKind.CREATE_VOLUME)), again.effects());

        Transition other = MACHINE.failed(finding, "ALREADY_EXISTS", "exists with another capacity");
        assertEquals(Phase.CREATE_FAILED, other.next().phase());
        assertEquals(Phase.DELETE_FAILED, ((Report) other.effects().get(0)).phase());
        Transition spent = MACHINE.timedOut(at(Phase.FINDING, 3, false), Duration.ofSeconds(30));
        assertEquals(Phase.CREATE_FAILED, spent.next().phase());
        Report failed = (Report) spent.effects().get(0);
        assertEquals(Phase.DELETE_FAILED, failed.phase());
        assertTrue(failed.reason().contains("gave up") && failed.reason().contains("delete again"), failed.reason());
    }
}
