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
