package io.csiorchestrator.claims.domain;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ClaimMachine.Abandoned;
import io.csiorchestrator.claims.domain.ClaimMachine.EmitStatus;
import io.csiorchestrator.claims.domain.ClaimMachine.Peer;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.claims.domain.ClaimMachine.RetryLater;
import io.csiorchestrator.claims.domain.ClaimMachine.SendCommand;
import io.csiorchestrator.claims.domain.ClaimMachine.Snapshot;
import io.csiorchestrator.claims.domain.ClaimMachine.Transition;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeCommandKind;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ClaimMachineTest {

    final ClaimMachine machine = new ClaimMachine(new ClaimMachine.Policy(3, Duration.ofSeconds(1), Duration.ofSeconds(10)));

    @Test
    void publishAndReleaseWithController() {
        Transition t = machine.start(Snapshot.fresh(true));
        assertEquals(List.of(new EmitStatus(ClaimState.ACCEPTED, null), new SendCommand(NodeCommandKind.CONTROLLER_PUBLISH)), t.effects());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.MOUNTING, t.next().phase());
        assertTrue(t.next().controllerPublished());
        assertEquals(List.of(new SendCommand(NodeCommandKind.MOUNT)), t.effects());
        t = machine.succeeded(t.next(), "/host");
        assertEquals(Phase.READY, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.READY, null)), t.effects());
        t = machine.release(t.next());
        assertEquals(Phase.UNMOUNTING, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING, null), new SendCommand(NodeCommandKind.UNMOUNT)), t.effects());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, null)), t.effects());
    }

    /**
     * Issue 36 item 1: with the controller instance on the claiming node, an attach is one mount command (the worker
     * controller-publishes, stages and publishes) and a detach one unmount command (it unpublishes, unstages and
     * controller-unpublishes): four claim steps instead of six, one honest phase per command in flight.
     */
    @Test
    void aNodeLocalControllerMakesOneCommandPerAttachAndPerDetach() {
        Transition t = machine.start(Snapshot.fresh(true, true));
        assertEquals(List.of(new EmitStatus(ClaimState.ACCEPTED, null), new SendCommand(NodeCommandKind.MOUNT)), t.effects());
        assertEquals(Phase.MOUNTING, t.next().phase());
        assertTrue(t.next().controllerPublished(), "from the moment the mount is sent, a controller-unpublish is owed");
        t = machine.succeeded(t.next(), "/host");
        assertEquals(Phase.READY, t.next().phase());
        t = machine.release(t.next());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING, null), new SendCommand(NodeCommandKind.UNMOUNT)), t.effects());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FREED, t.next().phase(), "the unmount carried the controller-unpublish");
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, null)), t.effects());

        assertFalse(Snapshot.fresh(false, true).combined(), "a plugin without a controller has no controller steps");
        assertFalse(Snapshot.fresh(true, false).combined());
    }

    /**
     * A failed attach of a node-local controller (e.g. NodePublish INTERNAL) fails the claim with the plugin's message
     * and rolls back with one unmount that carries the controller-unpublish (NodeUnstage, then ControllerUnpublish, in
     * the worker); retryable codes send the same mount again (the worker resumes at the first step not done).
     */
    @Test
    void aFailedNodeLocalAttachRollsBackWithOneDetach() {
        Snapshot mounting = machine.start(Snapshot.fresh(true, true)).next();
        Transition t = machine.failed(mounting, "UNAVAILABLE", "plugin busy");
        assertEquals(Phase.MOUNTING, t.next().phase());
        assertEquals(NodeCommandKind.MOUNT, ((RetryLater) t.effects().get(0)).kind());
        t = machine.failed(mounting, "INTERNAL", "publish failed: disk on fire");
        assertEquals(new EmitStatus(ClaimState.FAILED, "mount failed: INTERNAL: publish failed: disk on fire"), t.effects().get(0));
        assertEquals(new SendCommand(NodeCommandKind.UNMOUNT), t.effects().get(1));
        assertEquals(Phase.UNMOUNTING, t.next().phase());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(), t.effects(), "no separate controller-unpublish");
    }

    /**
     * A node-local attach waits while another claim controller-unpublishes the volume from the same node (a claim of
     * the two-step path), like a controller-publish does; a node detached while attaching still gets its
     * controller-unpublish, as its own command (to a controller elsewhere: the node is cut off).
     */
    @Test
    void aNodeLocalAttachWaitsForAPendingUnpublishAndADetachedNodeIsControllerUnpublishedApart() {
        Snapshot mounting = machine.start(Snapshot.fresh(true, true)).next();
        Transition t = machine.controllerPublishDeferred(mounting, "another claim unpublishes");
        assertEquals(mounting, t.next());
        assertEquals(NodeCommandKind.MOUNT, ((RetryLater) t.effects().get(0)).kind());
        t = machine.nodeDetached(mounting, "node-1's lease lapsed");
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        assertTrue(t.effects().contains(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)), t.effects().toString());
    }

    @Test
    void withoutControllerTheControllerStepsAreSkipped() {
        Transition t = machine.start(Snapshot.fresh(false));
        assertEquals(Phase.MOUNTING, t.next().phase());
        t = machine.succeeded(t.next(), "/host");
        t = machine.release(t.next());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FREED, t.next().phase());
    }

    @Test
    void retryableErrorsAreRetriedWithBackoffThenRolledBack() {
        Snapshot s = machine.start(Snapshot.fresh(false)).next();
        for (String code : ClaimMachine.RETRYABLE) {
            Transition t = machine.failed(s, code, "x");
            assertEquals(List.of(new RetryLater(NodeCommandKind.MOUNT, Duration.ofSeconds(1), "mount failed: " + code + ": x")), t.effects());
        }
        Transition t = machine.failed(s, "UNAVAILABLE", "down");
        t = machine.failed(t.next(), "UNAVAILABLE", "down");
        assertEquals(Duration.ofSeconds(2), ((RetryLater) t.effects().get(0)).delay());
        t = machine.failed(t.next(), "UNAVAILABLE", "down");
        EmitStatus failed = (EmitStatus) t.effects().get(0);
        assertEquals(ClaimState.FAILED, failed.state());
        assertTrue(failed.reason().contains("gave up after 3 attempts"), failed.reason());
        assertEquals(new SendCommand(NodeCommandKind.UNMOUNT), t.effects().get(1));
        assertEquals(Phase.UNMOUNTING, t.next().phase());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(), t.effects(), "no released status after a failure");
    }

    @Test
    void fatalErrorsRollBackAtOnce() {
        Snapshot publishing = machine.start(Snapshot.fresh(true)).next();
        Transition t = machine.failed(publishing, "INVALID_ARGUMENT", "bad");
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(ClaimState.FAILED, ((EmitStatus) t.effects().get(0)).state());
        Snapshot mounting = machine.succeeded(publishing, null).next();
        t = machine.failed(mounting, "ALREADY_EXISTS", "incompatible");
        assertEquals(Phase.UNMOUNTING, t.next().phase());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase(), "the controller side is undone too");
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FAILED, t.next().phase());
    }

    @Test
    void teardownTreatsNotFoundAsDoneAndNeverGivesUpOnItsOwn() {
        Snapshot ready = machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next();
        ready = machine.succeeded(ready, "/h").next();
        Snapshot unmounting = machine.release(ready).next();
        Transition t = machine.failed(unmounting, "NOT_FOUND", "gone");
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        Snapshot s = unmounting;
        for (int i = 0; i < 10; i++) {
            t = machine.failed(s, "INTERNAL", "broken");
            assertTrue(t.effects().get(0) instanceof RetryLater, t.effects().toString());
            s = t.next();
        }
        assertEquals(Duration.ofSeconds(10), ((RetryLater) t.effects().get(0)).delay(), "capped backoff");
        t = machine.controllerUnpublishAbandoned(machine.succeeded(unmounting, null).next(), "node n is unknown");
        assertEquals(Phase.FREED, t.next().phase());
        assertTrue(t.effects().get(0) instanceof Abandoned);
        assertTrue(((EmitStatus) t.effects().get(1)).reason().contains("abandoned"));
    }

    /**
     * A release while publishing answers the claim request FAILED at once (it will never be ready) and the release
     * RELEASING; the teardown follows the step in flight: a controller-publish that succeeds is unpublished, a mount
     * that succeeds is unmounted, and the end is RELEASED for the release only (no READY, no second FAILED).
     */
    @Test
    void aReleaseWhilePublishingAnswersTheClaimFailedAndTearsDownAfterTheStepInFlight() {
        Snapshot publishing = machine.start(Snapshot.fresh(true)).next();
        Transition t = machine.release(publishing);
        assertEquals(List.of(new EmitStatus(ClaimState.FAILED, "released while publishing (controller-publish in flight):"
                        + " the claim ends without being ready"),
                new EmitStatus(ClaimState.RELEASING, "release requested while publishing; teardown follows the step in flight")),
                t.effects());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        assertEquals(List.of(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)), t.effects());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, null)), t.effects());

        Snapshot mounting = machine.start(Snapshot.fresh(false)).next();
        t = machine.release(mounting);
        assertEquals(new EmitStatus(ClaimState.FAILED, "released while publishing (mount in flight): the claim ends"
                + " without being ready"), t.effects().get(0));
        t = machine.succeeded(t.next(), "/h");
        assertEquals(Phase.UNMOUNTING, t.next().phase());
        assertEquals(List.of(new SendCommand(NodeCommandKind.UNMOUNT)), t.effects(), "no READY after the release");
    }

    /**
     * After a release while publishing (the claim request answered FAILED), a fatal failure of the step in flight
     * answers nothing twice: a failed mount is rolled back (UNMOUNT) and a refused controller-publish ends at once,
     * each with RELEASED "the failed claim was rolled back" for the release (the refused publish's release was never
     * answered before). A claim answered ready before (mounted again by anti-entropy) keeps its answer: its release
     * says only RELEASING.
     */
    @Test
    void aFailureAfterAReleaseWhilePublishingAnswersTheReleaseOnlyAndAReadyClaimKeepsItsAnswer() {
        Snapshot mounting = machine.release(machine.start(Snapshot.fresh(false)).next()).next();
        Transition t = machine.failed(mounting, "INTERNAL", "broken");
        assertEquals(List.of(new SendCommand(NodeCommandKind.UNMOUNT)), t.effects());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, "the failed claim was rolled back")), t.effects());

        Snapshot publishing = machine.release(machine.start(Snapshot.fresh(true)).next()).next();
        t = machine.failed(publishing, "INVALID_ARGUMENT", "refused");
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, "the failed claim was rolled back")), t.effects());

        Snapshot ready = machine.succeeded(machine.start(Snapshot.fresh(false)).next(), "/h").next();
        Snapshot remounting = machine.mountLost(ready, "mount gone").next();
        t = machine.release(remounting, true);
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING,
                "release requested while publishing; teardown follows the step in flight")), t.effects());
    }

    @Test
    void aGoneNodeIsAssumedDetached() {
        Snapshot ready = machine.succeeded(machine.start(Snapshot.fresh(false)).next(), "/h").next();
        Transition t = machine.nodeDetached(ready, "node gone");
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING, "node gone"), new EmitStatus(ClaimState.RELEASED, "node gone")), t.effects());
        Snapshot withController = machine.succeeded(machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next(), "/h").next();
        t = machine.nodeDetached(withController, "node gone");
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        assertEquals(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH), t.effects().get(1));
    }

    /**
     * A claim not answered yet whose node is assumed detached while controller-publishing fails with the reason (its
     * request answered), and is controller-unpublished to be sure; the rollback ends FAILED with no second answer.
     */
    @Test
    void aNodeDetachedWhileControllerPublishingFailsTheClaimAndIsControllerUnpublishedToBeSure() {
        Snapshot publishing = machine.start(Snapshot.fresh(true)).next();
        Transition t = machine.nodeDetached(publishing, "node gone");
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        assertTrue(t.next().controllerPublished(), "the publish may have reached the controller");
        assertEquals(List.of(new EmitStatus(ClaimState.FAILED, "node gone"), new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)),
                t.effects());
        t = machine.failed(t.next(), "NOT_FOUND", "never published");
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(), t.effects());
    }

    /**
     * A node assumed detached while mounting or unmounting is sent nothing; a mounting claim (not answered yet) fails
     * with the reason, so its request is answered (a claim never ends only released); an unmounting one is released.
     */
    @Test
    void aNodeDetachedWhileMountingOrUnmountingSendsNothingToTheNode() {
        Snapshot mounting = machine.start(Snapshot.fresh(false)).next();
        Transition t = machine.nodeDetached(mounting, "node gone");
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.FAILED, "node gone")), t.effects());

        Snapshot unmounting = machine.release(machine.succeeded(mounting, "/h").next()).next();
        assertEquals(Phase.UNMOUNTING, unmounting.phase());
        t = machine.nodeDetached(unmounting, "node gone");
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, "node gone")), t.effects(), "the release already announced RELEASING");

        Snapshot published = machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next();
        t = machine.nodeDetached(published, "node gone");
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase(), "the controller side is still unpublished");
        assertEquals(List.of(new EmitStatus(ClaimState.FAILED, "node gone"), new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)),
                t.effects());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(), t.effects(), "answered once: failed");

        Snapshot rollingBack = machine.failed(machine.start(Snapshot.fresh(false)).next(), "INTERNAL", "x").next();
        assertEquals(Phase.UNMOUNTING, rollingBack.phase());
        t = machine.nodeDetached(rollingBack, "node gone");
        assertEquals(Phase.FAILED, t.next().phase(), "a rollback ends failed, not released");
        assertEquals(List.of(), t.effects());
    }

    /**
     * A release whose node is assumed detached with a controller publication left: the controller-unpublish is sent,
     * and once done the RELEASED carries why the node side was freed; a rollback ends FAILED with no second answer;
     * any phase but controller-unpublishing changes nothing.
     */
    @Test
    void theControllerUnpublishAfterADetachEndsTheReleaseWithTheDetachsReason() {
        Snapshot ready = machine.succeeded(machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next(), "/h")
                .next();
        Snapshot unmounting = machine.release(ready).next();
        Transition t = machine.nodeDetached(unmounting, "node-1's lease epoch 3 lapsed and the fence wait passed: assumed detached");
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        assertEquals(List.of(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)), t.effects());
        t = machine.controllerUnpublishedAfterDetach(t.next(),
                "node-1's lease epoch 3 lapsed and the fence wait passed: assumed detached");
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED,
                "node-1's lease epoch 3 lapsed and the fence wait passed: assumed detached")), t.effects());

        Snapshot published = machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next();
        t = machine.nodeDetached(published, "node gone");
        t = machine.controllerUnpublishedAfterDetach(t.next(), "node gone");
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(), t.effects(), "answered once: failed");

        assertEquals(new Transition(ready, List.of()), machine.controllerUnpublishedAfterDetach(ready, "node gone"));
    }

    @Test
    void aLateFailureAfterReadyOrAfterTheEndChangesNothing() {
        Snapshot ready = machine.succeeded(machine.start(Snapshot.fresh(false)).next(), "/h").next();
        assertEquals(new Transition(ready, List.of()), machine.failed(ready, "INTERNAL", "late"));
        assertEquals(new Transition(ready, List.of()), machine.failed(ready, "UNAVAILABLE", "late"));
        Snapshot freed = machine.succeeded(machine.release(ready).next(), null).next();
        assertEquals(Phase.FREED, freed.phase());
        assertEquals(new Transition(freed, List.of()), machine.failed(freed, "INTERNAL", "late"));
        Snapshot failed = machine.failed(machine.start(Snapshot.fresh(true)).next(), "INVALID_ARGUMENT", "x").next();
        assertEquals(Phase.FAILED, failed.phase());
        assertEquals(new Transition(failed, List.of()), machine.failed(failed, "INTERNAL", "late"));
    }

    /**
     * A release while the failed claim is rolled back starts no second teardown, but is remembered: answered
     * RELEASING now and RELEASED when the rollback ends FAILED (before, it never got a final answer). A second
     * release, and any release while a release is under way, changes nothing.
     */
    @Test
    void aReleaseDuringRollbackIsAnsweredWhenItEndsAndASecondReleaseStartsNothing() {
        Snapshot rollingBack = machine.failed(machine.start(Snapshot.fresh(false)).next(), "INTERNAL", "x").next();
        Transition t = machine.release(rollingBack);
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING,
                "release requested while the failed claim is rolled back; released once that ends")), t.effects());
        assertEquals(Phase.UNMOUNTING, t.next().phase());
        assertEquals(new Transition(t.next(), List.of()), machine.release(t.next()));
        Transition done = machine.succeeded(t.next(), null);
        assertEquals(Phase.FAILED, done.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, "the failed claim was rolled back")), done.effects());
        Transition unreleased = machine.succeeded(rollingBack, null);
        assertEquals(Phase.FAILED, unreleased.next().phase());
        assertEquals(List.of(), unreleased.effects(), "a rollback nobody released ends without RELEASED");
        Snapshot releasing = machine.release(machine.succeeded(machine.start(Snapshot.fresh(false)).next(), "/h").next()).next();
        assertEquals(new Transition(releasing, List.of()), machine.release(releasing));
        Snapshot releasingWhilePublishing = machine.release(machine.start(Snapshot.fresh(true)).next()).next();
        assertEquals(new Transition(releasingWhilePublishing, List.of()), machine.release(releasingWhilePublishing));
    }

    /**
     * Retryable codes and a missing answer leave the publish uncertain (it may still be in progress on the
     * controller): once the attempts are used up the claim fails and the publish is cancelled with the opposite call,
     * a controller-unpublish (NOT_FOUND counts as done); the rollback then ends FAILED.
     */
    @Test
    void retriesExhaustedWhileControllerPublishingFailTheClaimAndUnpublishToBeSure() {
        Snapshot s = machine.start(Snapshot.fresh(true)).next();
        for (int attempt = 1; attempt < 3; attempt++) {
            Transition t = machine.failed(s, "UNAVAILABLE", "busy");
            assertEquals(List.of(new RetryLater(NodeCommandKind.CONTROLLER_PUBLISH, Duration.ofSeconds(1L << (attempt - 1)),
                    "controller-publish failed: UNAVAILABLE: busy")), t.effects());
            s = t.next();
        }
        Transition t = machine.failed(s, "UNAVAILABLE", "busy");
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        assertTrue(t.next().rollingBack() && t.next().controllerPublished(), t.next().toString());
        assertEquals(List.of(new EmitStatus(ClaimState.FAILED, "controller-publish failed: UNAVAILABLE: busy (gave up after 3 attempts)"),
                new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)), t.effects());
        t = machine.failed(t.next(), "NOT_FOUND", "was never published");
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(), t.effects(), "no released status after a failure");

        Snapshot timedOut = machine.start(Snapshot.fresh(true)).next();
        t = machine.timedOut(timedOut);
        assertEquals(List.of(new RetryLater(NodeCommandKind.CONTROLLER_PUBLISH, Duration.ofSeconds(1),
                "controller-publish failed: DEADLINE_EXCEEDED: no answer from the node's worker within the command timeout")), t.effects());
        t = machine.timedOut(machine.timedOut(t.next()).next());
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        assertEquals(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH), t.effects().get(1));

        // A definite refusal (not retryable) leaves nothing to undo.
        t = machine.failed(machine.start(Snapshot.fresh(true)).next(), "FAILED_PRECONDITION", "published on another node");
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(1, t.effects().size(), t.effects().toString());
    }

    @Test
    void anAbandonedControllerUnpublishEndsTheClaimWithItsReason() {
        Snapshot ready = machine.succeeded(machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next(), "/h").next();
        Snapshot unpublishing = machine.succeeded(machine.release(ready).next(), null).next();
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, unpublishing.phase());
        Transition t = machine.controllerUnpublishAbandoned(unpublishing, "node n1 is unknown");
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(new Abandoned(NodeCommandKind.CONTROLLER_UNPUBLISH, "node n1 is unknown"),
                new EmitStatus(ClaimState.RELEASED, "controller-unpublish abandoned: node n1 is unknown")), t.effects());
        assertEquals(new Transition(ready, List.of()), machine.controllerUnpublishAbandoned(ready, "x"), "only in controller-unpublishing");
    }

    @Test
    void aLostMountOfAReadyClaimIsMountedAgainAndOnlyFromReady() {
        Snapshot ready = new Snapshot(Phase.READY, 1, true, true, false, false);
        Transition t = machine.mountLost(ready, "gone");
        assertEquals(Phase.MOUNTING, t.next().phase());
        assertEquals(1, t.next().attempt());
        assertTrue(t.next().controllerPublished(), "the controller side is kept");
        assertEquals(List.of(new EmitStatus(ClaimState.ACCEPTED, "gone"), new SendCommand(NodeCommandKind.MOUNT)), t.effects());
        assertEquals(Phase.READY, machine.succeeded(t.next(), "/host").next().phase());
        Transition failed = machine.failed(t.next(), "NOT_FOUND", "volume gone");
        assertEquals(Phase.UNMOUNTING, failed.next().phase(), "a fatal failure rolls the claim back");
        assertEquals(ClaimState.FAILED, ((EmitStatus) failed.effects().get(0)).state());

        for (Snapshot other : List.of(new Snapshot(Phase.MOUNTING, 1, true, true, false, false),
                new Snapshot(Phase.UNMOUNTING, 1, true, true, true, false),
                new Snapshot(Phase.READY, 1, true, true, true, false),
                new Snapshot(Phase.FREED, 1, true, false, true, false))) {
            assertEquals(List.of(), machine.mountLost(other, "gone").effects(), other.toString());
        }
    }

    @Test
    void anOrphanIsTornDownLikeAReleaseWithTheControllerUnpublishOnlyWhenOwed() {
        Transition t = machine.orphanFound(true, true, "orphan");
        assertEquals(Phase.UNMOUNTING, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING, "orphan"), new SendCommand(NodeCommandKind.UNMOUNT)), t.effects());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        t = machine.succeeded(t.next(), null);
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(ClaimState.RELEASED, ((EmitStatus) t.effects().get(0)).state());

        Transition notOwed = machine.succeeded(machine.orphanFound(true, false, "orphan").next(), null);
        assertEquals(Phase.FREED, notOwed.next().phase(), "another claim of the volume on the node: no controller-unpublish");
    }

    /**
     * Waiting for the node's plugin: a fresh claim waits in PLUGIN_WAIT with nothing sent and no status, starts (ACCEPTED,
     * controller publish) when the plugin is back, or is REJECTED (past, FAILED) past the grace; released while waiting it
     * ends at once (REJECTED, RELEASED). A waiting mount keeps its phase and attempt and is sent again when the plugin is
     * back, or fails (rolled back with an unmount) past the grace. A waiting unmount of a release says so once in a
     * RELEASING status, and past the grace is not declared done: retried later, with a RELEASING status saying why.
     */
    @Test
    void aClaimOrAStepWaitsForItsPluginThenGoesOnOrIsGivenUp() {
        java.time.Instant since = java.time.Instant.parse("2026-11-24T17:00:00Z");
        java.time.Instant until = since.plusSeconds(30);
        Transition t = machine.waitForPlugin(Snapshot.fresh(true), since, until, "waiting for plugin p on node n", true);
        assertEquals(Phase.PLUGIN_WAIT, t.next().phase());
        assertEquals(List.of(new ClaimMachine.WaitForPlugin(null, since, until, "waiting for plugin p on node n")), t.effects());
        Snapshot waiting = t.next();

        t = machine.pluginBack(waiting);
        assertEquals(Phase.CONTROLLER_PUBLISHING, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.ACCEPTED, null), new SendCommand(NodeCommandKind.CONTROLLER_PUBLISH)),
                t.effects());

        t = machine.pluginGone(waiting, "plugin p on node n has been unavailable for 30s");
        assertEquals(Phase.FAILED, t.next().phase());
        assertTrue(t.next().phase().past());
        assertEquals(List.of(new EmitStatus(ClaimState.REJECTED, "plugin p on node n has been unavailable for 30s")), t.effects());

        t = machine.release(waiting);
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(ClaimState.REJECTED, ClaimState.RELEASED),
                t.effects().stream().map(e -> ((EmitStatus) e).state()).toList());

        Snapshot mounting = machine.start(Snapshot.fresh(false)).next();
        t = machine.waitForPlugin(mounting, since, until, "away", true);
        assertEquals(mounting, t.next(), "same phase, same attempt");
        assertEquals(List.of(new ClaimMachine.WaitForPlugin(NodeCommandKind.MOUNT, since, until, "away")), t.effects());
        assertEquals(List.of(new SendCommand(NodeCommandKind.MOUNT)), machine.pluginBack(mounting).effects());
        t = machine.pluginGone(mounting, "gone");
        assertEquals(Phase.UNMOUNTING, t.next().phase());
        assertTrue(t.next().rollingBack());
        assertEquals(new EmitStatus(ClaimState.FAILED, "mount failed: PLUGIN_NOT_FOUND: gone"), t.effects().get(0));

        Snapshot ready = machine.succeeded(mounting, "/host").next();
        Snapshot unmounting = machine.release(ready).next();
        t = machine.waitForPlugin(unmounting, since, until, "waiting for plugin p on node n", true);
        assertEquals(List.of(new ClaimMachine.WaitForPlugin(NodeCommandKind.UNMOUNT, since, until, "waiting for plugin p on node n"),
                new EmitStatus(ClaimState.RELEASING, "waiting for plugin p on node n")), t.effects());
        assertEquals(1, machine.waitForPlugin(unmounting, since, until, "again", false).effects().size(), "announced once");
        t = machine.pluginGone(unmounting, "plugin p on node n has been unavailable for 30s");
        assertEquals(Phase.UNMOUNTING, t.next().phase(), "a teardown step is never declared done");
        assertTrue(t.effects().get(0) instanceof RetryLater, t.effects().toString());
        assertEquals(ClaimState.RELEASING, ((EmitStatus) t.effects().get(1)).state());
        assertTrue(((EmitStatus) t.effects().get(1)).reason().contains("unavailable for 30s; unmount is retried"),
                t.effects().toString());
    }

    /**
     * The controller publication is per (volume, node): another claim of the volume on the same node needs it while it
     * is controller-publishing, mounting, ready or unmounting with a controller-requiring plugin; not when it is on
     * another node, past, controller-unpublishing, or its plugin has no controller.
     */
    @Test
    void anotherClaimOnTheSameNodeNeedsTheControllerPublicationWhilePublishingMountingReadyOrUnmounting() {
        for (Phase phase : List.of(Phase.CONTROLLER_PUBLISHING, Phase.MOUNTING, Phase.READY, Phase.UNMOUNTING)) {
            assertTrue(ClaimMachine.controllerPublicationNeeded("n1", List.of(new Peer("n1", phase, true))), phase.name());
            assertFalse(ClaimMachine.controllerPublicationNeeded("n1", List.of(new Peer("n2", phase, true))), phase.name());
            assertFalse(ClaimMachine.controllerPublicationNeeded("n1", List.of(new Peer("n1", phase, false))), phase.name());
        }
        for (Phase phase : List.of(Phase.CONTROLLER_UNPUBLISHING, Phase.FREED, Phase.FAILED)) {
            assertFalse(ClaimMachine.controllerPublicationNeeded("n1", List.of(new Peer("n1", phase, true))), phase.name());
        }
        assertFalse(ClaimMachine.controllerPublicationNeeded("n1", List.of()));
        assertTrue(ClaimMachine.controllerPublicationNeeded("n1",
                List.of(new Peer("n2", Phase.READY, true), new Peer("n1", Phase.FREED, true), new Peer("n1", Phase.READY, true))));
    }

    /** A controller-unpublish of the same (volume, node) by another claim is pending only in CONTROLLER_UNPUBLISHING on that node. */
    @Test
    void aControllerUnpublishIsPendingOnlyForAnotherClaimControllerUnpublishingOnTheSameNode() {
        assertTrue(ClaimMachine.controllerUnpublishPending("n1", List.of(new Peer("n1", Phase.CONTROLLER_UNPUBLISHING, true))));
        assertFalse(ClaimMachine.controllerUnpublishPending("n1", List.of(new Peer("n2", Phase.CONTROLLER_UNPUBLISHING, true))));
        for (Phase phase : List.of(Phase.CONTROLLER_PUBLISHING, Phase.MOUNTING, Phase.READY, Phase.UNMOUNTING, Phase.FREED, Phase.FAILED)) {
            assertFalse(ClaimMachine.controllerUnpublishPending("n1", List.of(new Peer("n1", phase, true))), phase.name());
        }
    }

    /**
     * A skipped controller-unpublish ends the claim with the reason as the RELEASED note (FAILED without a RELEASED
     * when rolling back unasked); outside CONTROLLER_UNPUBLISHING it changes nothing.
     */
    @Test
    void aSkippedControllerUnpublishEndsTheClaimWithItsReason() {
        Snapshot unpublishing = new Snapshot(Phase.CONTROLLER_UNPUBLISHING, 1, true, true, true, false);
        Transition t = machine.controllerUnpublishSkipped(unpublishing, "shared");
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, "controller-unpublish skipped: shared")), t.effects());
        Transition rolledBack = machine.controllerUnpublishSkipped(new Snapshot(Phase.CONTROLLER_UNPUBLISHING, 1, true, true, false, true), "shared");
        assertEquals(Phase.FAILED, rolledBack.next().phase());
        assertEquals(List.of(), rolledBack.effects());
        Snapshot ready = new Snapshot(Phase.READY, 1, true, true, false, false);
        assertEquals(new Transition(ready, List.of()), machine.controllerUnpublishSkipped(ready, "shared"));
    }

    /** A deferred controller-publish stays in CONTROLLER_PUBLISHING at the same attempt and is retried after the base backoff. */
    @Test
    void aDeferredControllerPublishWaitsWithoutUsingAnAttempt() {
        Snapshot publishing = machine.start(Snapshot.fresh(true)).next();
        Transition t = machine.controllerPublishDeferred(publishing, "unpublish pending");
        assertEquals(publishing, t.next());
        assertEquals(List.of(new RetryLater(NodeCommandKind.CONTROLLER_PUBLISH, Duration.ofSeconds(1),
                "controller-publish waits: unpublish pending")), t.effects());
        Snapshot mounting = new Snapshot(Phase.MOUNTING, 1, true, true, false, false);
        assertEquals(new Transition(mounting, List.of()), machine.controllerPublishDeferred(mounting, "x"));
    }

    /**
     * A release whose node is unreachable and not yet surely fenced waits: the wait is said in a RELEASING status and
     * nothing is sent, the claim keeps its phase (it is not freed); a claim that is not being released, or is rolled
     * back, or is past, says nothing.
     */
    @Test
    void aReleaseWaitingForTheFenceSaysWhyAndSendsNothing() {
        Snapshot unmounting = machine.release(machine.succeeded(machine.start(Snapshot.fresh(false)).next(), "/h").next()).next();
        Transition t = machine.fenceWait(unmounting, "waiting for node-1's lease to lapse: 41 s left");
        assertEquals(unmounting, t.next());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING, "waiting for node-1's lease to lapse: 41 s left")), t.effects());
        Snapshot ready = machine.succeeded(machine.start(Snapshot.fresh(false)).next(), "/h").next();
        assertEquals(new Transition(ready, List.of()), machine.fenceWait(ready, "x"));
        Snapshot rollingBack = machine.failed(machine.start(Snapshot.fresh(false)).next(), "INTERNAL", "x").next();
        assertEquals(new Transition(rollingBack, List.of()), machine.fenceWait(rollingBack, "x"));
        Snapshot freed = machine.succeeded(unmounting, null).next();
        assertEquals(Phase.FREED, freed.phase());
        assertEquals(new Transition(freed, List.of()), machine.fenceWait(freed, "x"));
    }

    /**
     * The node reported it fenced itself and removed the claim's mount: a READY claim fails with the reason (the
     * controller side still unpublished when owed, ending FAILED); a release ends RELEASED with the reason as its note;
     * a claim with nothing mounted yet (controller-publishing) or past changes nothing.
     */
    @Test
    void aFencedMountEndsTheClaimWithoutAnUnmount() {
        String why = "node-1 fenced at epoch 3: mount removed";
        Snapshot ready = machine.succeeded(machine.start(Snapshot.fresh(false)).next(), "/h").next();
        Transition t = machine.fenced(ready, why);
        assertEquals(Phase.FAILED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.FAILED, why)), t.effects());

        Snapshot readyWithController = machine.succeeded(machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next(),
                "/h").next();
        t = machine.fenced(readyWithController, why);
        assertEquals(Phase.CONTROLLER_UNPUBLISHING, t.next().phase());
        assertTrue(t.next().rollingBack());
        assertEquals(List.of(new EmitStatus(ClaimState.FAILED, why), new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)),
                t.effects());
        assertEquals(Phase.FAILED, machine.succeeded(t.next(), null).next().phase());

        Snapshot releasing = machine.release(ready).next();
        t = machine.fenced(releasing, why);
        assertEquals(Phase.FREED, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, why)), t.effects());

        Snapshot publishing = machine.start(Snapshot.fresh(true)).next();
        assertEquals(new Transition(publishing, List.of()), machine.fenced(publishing, why));
        Snapshot freed = machine.succeeded(releasing, null).next();
        assertEquals(new Transition(freed, List.of()), machine.fenced(freed, why));
    }

    /** The worker's lease refusals of a mount are retried with backoff like UNAVAILABLE, then given up and rolled back. */
    @Test
    void aMountRefusedForItsLeaseIsRetriedLikeUnavailable() {
        assertEquals(java.util.Set.of("STALE_LEASE_EPOCH", "NO_VALID_LEASE", "FENCE_GUARD_UNFED"), ClaimMachine.LEASE_REFUSALS);
        for (String code : ClaimMachine.LEASE_REFUSALS) {
            Snapshot mounting = machine.start(Snapshot.fresh(false)).next();
            Transition t = machine.failed(mounting, code, "stale lease epoch 1 < 2");
            assertEquals(List.of(new RetryLater(NodeCommandKind.MOUNT, Duration.ofSeconds(1),
                    "mount failed: " + code + ": stale lease epoch 1 < 2")), t.effects(), code);
            assertEquals(2, t.next().attempt());
        }
    }

    /**
     * The storage fence (issue 19 item 4): a release unmounting goes to STORAGE_FENCING, says why and sends the
     * ControllerUnpublish; its success ends the release RELEASED with the note and nothing else sent (the controller side
     * is done); its failure goes back to UNMOUNTING with the unmount retried and the reason said; a rollback is fenced
     * without a RELEASING status and ends FAILED; from any other phase nothing happens.
     */
    @Test
    void aStorageFenceEndsTheTeardownOnlyWhenItsControllerUnpublishSucceeded() {
        Snapshot ready = machine.succeeded(machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next(), "/h").next();
        Snapshot unmounting = machine.release(ready).next();
        Transition t = machine.storageFence(unmounting, "node-1 is unreachable: storage-fencing it");
        assertEquals(Phase.STORAGE_FENCING, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING, "node-1 is unreachable: storage-fencing it"),
                new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)), t.effects());
        Snapshot fencing = t.next();

        Transition ok = machine.storageFenced(fencing, "storage-fenced node-1 by ControllerUnpublish");
        assertEquals(Phase.FREED, ok.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASED, "storage-fenced node-1 by ControllerUnpublish")), ok.effects());
        assertEquals(Phase.FREED, machine.succeeded(fencing, null).next().phase());

        Transition failed = machine.storageFenceFailed(fencing, "storage fence failed: waiting for the lease");
        assertEquals(Phase.UNMOUNTING, failed.next().phase());
        assertTrue(failed.next().controllerPublished(), "the controller-unpublish is still owed after a failed fence");
        assertEquals(List.of(new EmitStatus(ClaimState.RELEASING, "storage fence failed: waiting for the lease"),
                new RetryLater(NodeCommandKind.UNMOUNT, Duration.ofSeconds(1), "storage fence failed: waiting for the lease")),
                failed.effects());
        for (String code : List.of("NOT_FOUND", "DEADLINE_EXCEEDED", "INTERNAL")) {
            assertEquals(Phase.UNMOUNTING, machine.failed(fencing, code, "x").next().phase(), code + " is never a fence");
        }
        assertEquals(Phase.UNMOUNTING, machine.timedOut(fencing).next().phase());

        Snapshot rollingBack = machine.failed(machine.succeeded(machine.start(Snapshot.fresh(true)).next(), null).next(),
                "INTERNAL", "x").next();
        assertEquals(Phase.UNMOUNTING, rollingBack.phase());
        Transition rb = machine.storageFence(rollingBack, "x");
        assertEquals(List.of(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH)), rb.effects());
        assertEquals(Phase.FAILED, machine.storageFenced(rb.next(), "n").next().phase());

        assertEquals(new Transition(ready, List.of()), machine.storageFence(ready, "x"));
        assertEquals(new Transition(unmounting, List.of()), machine.storageFenced(unmounting, "x"));
        assertTrue(ClaimMachine.controllerUnpublishPending("node-1", List.of(new Peer("node-1", Phase.STORAGE_FENCING, true))),
                "a controller-publish to the fenced node waits for the fence");
    }

    /**
     * A pending claim (issue 19 item 2): PENDING with the reason and nothing sent; when the release it waits for ended it
     * starts like a new claim (ACCEPTED, then its first command); given up it is REJECTED (and RELEASED when its release
     * was asked meanwhile); a release of it while pending ends it at once, nothing mounted.
     */
    @Test
    void aPendingClaimWaitsSendingNothingAndStartsOrIsRejected() {
        java.time.Instant until = java.time.Instant.parse("2026-01-01T00:02:00Z");
        Transition t = machine.waitForRelease(Snapshot.fresh(true), until, "waiting for node-1's lease to lapse: 41 s left");
        assertEquals(Phase.RELEASE_WAIT, t.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.PENDING, "waiting for node-1's lease to lapse: 41 s left"),
                new ClaimMachine.WaitForRelease(until, "waiting for node-1's lease to lapse: 41 s left")), t.effects());
        Snapshot pending = t.next();

        Transition started = machine.releaseWaitOver(pending);
        assertEquals(Phase.CONTROLLER_PUBLISHING, started.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.ACCEPTED, null), new SendCommand(NodeCommandKind.CONTROLLER_PUBLISH)),
                started.effects());

        Transition rejected = machine.releaseWaitRejected(pending, "still pending after 2m");
        assertEquals(Phase.FAILED, rejected.next().phase());
        assertEquals(List.of(new EmitStatus(ClaimState.REJECTED, "still pending after 2m")), rejected.effects());

        Transition released = machine.release(pending);
        assertEquals(Phase.FREED, released.next().phase());
        assertEquals(List.of(ClaimState.REJECTED, ClaimState.RELEASED),
                released.effects().stream().map(e -> ((EmitStatus) e).state()).toList());
        Snapshot ready = machine.succeeded(machine.start(Snapshot.fresh(false)).next(), "/h").next();
        assertEquals(new Transition(ready, List.of()), machine.releaseWaitOver(ready));
        assertEquals(new Transition(ready, List.of()), machine.releaseWaitRejected(ready, "x"));
    }
}
