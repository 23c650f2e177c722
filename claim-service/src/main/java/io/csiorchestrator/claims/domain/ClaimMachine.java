package io.csiorchestrator.claims.domain;

import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeCommandKind;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * The state machine of one claim, in one place. Pure: the caller loads the claim's checkpoint
 * ({@link Snapshot}), feeds one input, stores the returned checkpoint and carries out the effects
 * (node commands and claim-status events) in the same database transaction.
 *
 * <pre>
 * publish:  CONTROLLER_PUBLISHING (only when the plugin requires a controller) -> MOUNTING -> READY
 * release:  READY -> UNMOUNTING -> CONTROLLER_UNPUBLISHING (only when controller-published) -> FREED
 * node-local controller (issue 36: the claim's controller instance runs on the claiming node): one node command per
 *           attach and per detach; MOUNTING (ControllerPublish, NodeStage, NodePublish, each checkpointed by the worker)
 *           -> READY, UNMOUNTING (NodeUnpublish, NodeUnstage, ControllerUnpublish) -> FREED; the controller
 *           unpublish is owed from the moment the mount is sent
 *           (the controller publication is per (volume, node): its unpublish is skipped while another claim of the
 *           volume on that node needs it, and a controller-publish waits while another claim unpublishes it)
 * waiting:  PLUGIN_WAIT (accepted by every rule but its node's plugin is briefly away; nothing sent or answered)
 *           -> the publish path when the plugin is back, or REJECTED -> FAILED past the grace
 * storage fence: UNMOUNTING on an unreachable node of a storage-fencing plugin -> STORAGE_FENCING (ControllerUnpublish
 *           from another node's controller) -> FREED (or FAILED when rolling back); failed or no answer -> UNMOUNTING
 * pending:  RELEASE_WAIT (accepted by every rule but a conflicting claim is being released; PENDING status with the
 *           reason) -> the publish path when that release ended, or REJECTED -> FAILED past the pending timeout
 * rollback: a fatal failure while publishing -> failed status, then the same teardown -> FAILED
 * anti-entropy: READY whose mount the node reports gone -> MOUNTING (accepted status) -> READY, or failed and rolled back;
 *           an orphan mount (no claim) -> a new claim in UNMOUNTING (releasing status) -> ... -> FREED
 *           (a controller-publish given up after retryable errors is uncertain: controller-unpublished to be sure;
 *           a release that arrives before or during the rollback is answered RELEASED when it ends)
 * </pre>
 *
 * <p>Retries follow the CSI rules: UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, ABORTED (and
 * a command that got no answer in time) are retried with exponential backoff up to a limit;
 * everything else is fatal. NOT_FOUND from a teardown step means it is already done. A teardown step
 * that keeps failing is not declared done (the volume may still be attached): the claim stays held,
 * retried at the capped backoff, until the node is assumed detached (its lease lapsed at the claim's epoch and the
 * fence wait passed: {@link LeaseBook}) or an operator detaches it; meanwhile a release says why it waits
 * ({@link #fenceWait}).
 *
 * <p>A node step (mount, unmount) whose plugin instance is away waits for it ({@link #waitForPlugin}: no command in
 * flight, no attempt used), is sent again when it is back ({@link #pluginBack}) and given up past the grace
 * ({@link #pluginGone}); {@link ClaimRules#pluginOutage} decides which.
 */
public final class ClaimMachine {

    /** Where a claim is. FREED and FAILED are past claims. */
    public enum Phase {
        PLUGIN_WAIT,
        /** Pending: the claim waits for a conflicting claim's release to end ({@link ClaimRules.WaitForRelease}). */
        RELEASE_WAIT,
        CONTROLLER_PUBLISHING, MOUNTING, READY, UNMOUNTING, CONTROLLER_UNPUBLISHING, FREED, FAILED,
        /**
         * A teardown whose node is unreachable, ended by a ControllerUnpublish of the volume from that node sent to a
         * controller on another node ({@link StorageFence}): its success is the fence, its failure falls back to
         * UNMOUNTING and the lease wait.
         */
        STORAGE_FENCING;

        public boolean past() {
            return this == FREED || this == FAILED;
        }

        public boolean tearingDown() {
            return this == UNMOUNTING || this == CONTROLLER_UNPUBLISHING;
        }
    }

    /** The gRPC codes after which the same call is retried with backoff. */
    public static final Set<String> RETRYABLE = Set.of("UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "ABORTED");

    /**
     * The worker's lease refusals (issue 19), retried like {@link #RETRYABLE}: STALE_LEASE_EPOCH (the command carried an
     * older epoch than the worker's: sent again, with the node's newest epoch once node-leases brought it) and
     * NO_VALID_LEASE (the node holds no valid lease right now: it takes no mount until it is granted one) and
     * FENCE_GUARD_UNFED (the node's fence guard could not be given the new mount's path first: the worker starts the
     * guard again at its next lease poll).
     */
    public static final Set<String> LEASE_REFUSALS = Set.of("STALE_LEASE_EPOCH", "NO_VALID_LEASE", "FENCE_GUARD_UNFED");

    /** Retry and backoff settings. */
    public record Policy(int maxPublishAttempts, Duration baseBackoff, Duration maxBackoff) {
        public static final Policy DEFAULT = new Policy(3, Duration.ofSeconds(1), Duration.ofMinutes(1));

        public Duration backoff(int attempt) {
            long factor = 1L << Math.min(Math.max(attempt - 1, 0), 20);
            Duration d = baseBackoff.multipliedBy(factor);
            return d.compareTo(maxBackoff) > 0 ? maxBackoff : d;
        }
    }

    /**
     * A claim's checkpoint.
     *
     * @param attempt             attempts of the current step so far (1 = first)
     * @param controllerPublished the controller publish succeeded (so a controller-unpublish is owed)
     * @param releaseRequested    a release arrived while publishing; teardown follows the step in flight
     * @param rollingBack         the claim failed; the teardown ends in FAILED, not FREED
     * @param controllerLocal     the claim's controller instance runs on the claiming node: its mount and unmount
     *                            carry the controller steps (one node command per attach and per detach)
     */
    public record Snapshot(Phase phase, int attempt, boolean controllerRequired, boolean controllerPublished,
                           boolean releaseRequested, boolean rollingBack, boolean controllerLocal) {

        public Snapshot(Phase phase, int attempt, boolean controllerRequired, boolean controllerPublished,
                        boolean releaseRequested, boolean rollingBack) {
            this(phase, attempt, controllerRequired, controllerPublished, releaseRequested, rollingBack, false);
        }

        public static Snapshot fresh(boolean controllerRequired) {
            return fresh(controllerRequired, false);
        }

        /** @param controllerLocal a healthy controller instance of the plugin runs on the claiming node */
        public static Snapshot fresh(boolean controllerRequired, boolean controllerLocal) {
            return new Snapshot(null, 0, controllerRequired, false, false, false, controllerRequired && controllerLocal);
        }

        /** Whether this claim's mount and unmount carry the controller steps. */
        public boolean combined() {
            return controllerRequired && controllerLocal;
        }

        Snapshot to(Phase next) {
            return new Snapshot(next, 1, controllerRequired, controllerPublished, releaseRequested, rollingBack, controllerLocal);
        }

        Snapshot retrying() {
            return new Snapshot(phase, attempt + 1, controllerRequired, controllerPublished, releaseRequested, rollingBack,
                    controllerLocal);
        }

        Snapshot withControllerPublished() {
            return new Snapshot(phase, attempt, controllerRequired, true, releaseRequested, rollingBack, controllerLocal);
        }

        Snapshot withReleaseRequested() {
            return new Snapshot(phase, attempt, controllerRequired, controllerPublished, true, rollingBack, controllerLocal);
        }

        Snapshot withRollback() {
            return new Snapshot(phase, attempt, controllerRequired, controllerPublished, releaseRequested, true, controllerLocal);
        }
    }

    /** What the caller carries out. */
    public sealed interface Effect permits SendCommand, EmitStatus, RetryLater, Abandoned, WaitForPlugin, WaitForRelease {
    }

    /** Send nothing: the claim is pending until a conflicting release ends, decided again at {@code until} at the latest. */
    public record WaitForRelease(java.time.Instant until, String reason) implements Effect {
    }

    /**
     * Send nothing now: the node's plugin instance is away since {@code since}; the step ({@code kind}, null before
     * the claim started) is sent when it is healthy again, and decided again at {@code until} at the latest.
     */
    public record WaitForPlugin(NodeCommandKind kind, java.time.Instant since, java.time.Instant until, String reason)
            implements Effect {
    }

    /** Send this step's command (a new command id per attempt). */
    public record SendCommand(NodeCommandKind kind) implements Effect {
    }

    /** Publish a claim-status event. */
    public record EmitStatus(ClaimState state, String reason) implements Effect {
    }

    /** Send the current step again after {@code delay} (the reconciler does it). */
    public record RetryLater(NodeCommandKind kind, Duration delay, String lastError) implements Effect {
    }

    /** A step was given up on purpose (e.g. controller-unpublish for an unknown node); the reason goes out as an event. */
    public record Abandoned(NodeCommandKind kind, String reason) implements Effect {
    }

    /** The new checkpoint and what to do. */
    public record Transition(Snapshot next, List<Effect> effects) {
    }

    private final Policy policy;

    public ClaimMachine(Policy policy) {
        this.policy = policy;
    }

    /** An accepted claim starts publishing. */
    public Transition start(Snapshot fresh) {
        List<Effect> effects = new ArrayList<>();
        effects.add(new EmitStatus(ClaimState.ACCEPTED, null));
        if (fresh.combined()) {
            // One command: the worker controller-publishes, stages and publishes; the unpublish is owed from now on
            // (a publish whose answer is lost may have happened).
            effects.add(new SendCommand(NodeCommandKind.MOUNT));
            return new Transition(fresh.withControllerPublished().to(Phase.MOUNTING), effects);
        }
        if (fresh.controllerRequired()) {
            effects.add(new SendCommand(NodeCommandKind.CONTROLLER_PUBLISH));
            return new Transition(fresh.to(Phase.CONTROLLER_PUBLISHING), effects);
        }
        effects.add(new SendCommand(NodeCommandKind.MOUNT));
        return new Transition(fresh.to(Phase.MOUNTING), effects);
    }

    /**
     * The claim (fresh: {@code s} has no phase yet), or its current node step, waits for its node's plugin
     * instance. {@code announce}: the wait starts now; a release being torn down says so in a RELEASING status.
     */
    public Transition waitForPlugin(Snapshot s, java.time.Instant since, java.time.Instant until, String reason,
                                    boolean announce) {
        if (s.phase() == null) {
            return new Transition(s.to(Phase.PLUGIN_WAIT), List.of(new WaitForPlugin(null, since, until, reason)));
        }
        if (s.phase().past() || s.phase() == Phase.READY) {
            return new Transition(s, List.of());
        }
        List<Effect> effects = new ArrayList<>();
        effects.add(new WaitForPlugin(kindOf(s.phase()), since, until, reason));
        if (announce && s.phase().tearingDown() && s.releaseRequested() && !s.rollingBack()) {
            effects.add(new EmitStatus(ClaimState.RELEASING, reason));
        }
        return new Transition(s, effects);
    }

    /**
     * A fresh claim conflicts only with a claim being released ({@link ClaimRules.WaitForRelease}): it is pending
     * (PENDING with {@code reason}, nothing sent) until that release ends or {@code until}.
     */
    public Transition waitForRelease(Snapshot fresh, java.time.Instant until, String reason) {
        return new Transition(fresh.to(Phase.RELEASE_WAIT), List.of(new EmitStatus(ClaimState.PENDING, reason),
                new WaitForRelease(until, reason)));
    }

    /** The release a pending claim waited for ended and the rules accept it now: it starts. */
    public Transition releaseWaitOver(Snapshot s) {
        if (s.phase() != Phase.RELEASE_WAIT) {
            return new Transition(s, List.of());
        }
        return start(Snapshot.fresh(s.controllerRequired(), s.controllerLocal()));
    }

    /**
     * A pending claim is given up: the rules reject it now, or it waited past the pending timeout ({@code reason}
     * says for what). REJECTED, and RELEASED too when its release was asked meanwhile.
     */
    public Transition releaseWaitRejected(Snapshot s, String reason) {
        if (s.phase() != Phase.RELEASE_WAIT) {
            return new Transition(s, List.of());
        }
        List<Effect> effects = new ArrayList<>();
        effects.add(new EmitStatus(ClaimState.REJECTED, reason));
        if (s.releaseRequested()) {
            effects.add(new EmitStatus(ClaimState.RELEASED, "the claim was rejected before it started: " + reason));
        }
        return new Transition(s.to(Phase.FAILED), effects);
    }

    /** The node's plugin instance is back: a waiting claim starts, a waiting step is sent (same attempt). */
    public Transition pluginBack(Snapshot s) {
        if (s.phase() == Phase.PLUGIN_WAIT) {
            return start(Snapshot.fresh(s.controllerRequired(), s.controllerLocal()));
        }
        NodeCommandKind kind = s.phase() == null ? null : kindOf(s.phase());
        return kind == null ? new Transition(s, List.of()) : new Transition(s, List.of(new SendCommand(kind)));
    }

    /**
     * The node's plugin instance stayed away past the grace: a waiting claim is rejected; a publish step fails
     * (and is rolled back); a teardown step is not declared done (the volume may still be mounted) but retried
     * at the capped backoff like any failed teardown step, with a RELEASING status saying so when it is a release.
     */
    public Transition pluginGone(Snapshot s, String reason) {
        if (s.phase() == Phase.PLUGIN_WAIT) {
            List<Effect> effects = new ArrayList<>();
            effects.add(new EmitStatus(ClaimState.REJECTED, reason));
            if (s.releaseRequested()) {
                effects.add(new EmitStatus(ClaimState.RELEASED, "the claim was rejected before it started: " + reason));
            }
            return new Transition(s.to(Phase.FAILED), effects);
        }
        if (s.phase() == null || s.phase().past() || s.phase() == Phase.READY) {
            return new Transition(s, List.of());
        }
        if (s.phase().tearingDown()) {
            Transition t = failed(s, "UNAVAILABLE", reason);
            if (!s.releaseRequested() || s.rollingBack()) {
                return t;
            }
            List<Effect> effects = new ArrayList<>(t.effects());
            effects.add(new EmitStatus(ClaimState.RELEASING, reason + "; " + describe(s.phase())
                    + " is retried until the plugin is back or the node is assumed detached"));
            return new Transition(t.next(), effects);
        }
        return failed(s, "PLUGIN_NOT_FOUND", reason);
    }

    /** The current step's command succeeded. {@code hostPath} is the mount's. */
    public Transition succeeded(Snapshot s, String hostPath) {
        List<Effect> effects = new ArrayList<>();
        switch (s.phase()) {
            case CONTROLLER_PUBLISHING -> {
                Snapshot published = s.withControllerPublished();
                if (s.releaseRequested()) {
                    effects.add(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH));
                    return new Transition(published.to(Phase.CONTROLLER_UNPUBLISHING), effects);
                }
                effects.add(new SendCommand(NodeCommandKind.MOUNT));
                return new Transition(published.to(Phase.MOUNTING), effects);
            }
            case MOUNTING -> {
                if (s.releaseRequested()) {
                    effects.add(new SendCommand(NodeCommandKind.UNMOUNT));
                    return new Transition(s.to(Phase.UNMOUNTING), effects);
                }
                effects.add(new EmitStatus(ClaimState.READY, null));
                return new Transition(s.to(Phase.READY), effects);
            }
            case UNMOUNTING -> {
                // A node-local controller's unmount ended the controller publication too (or left it, on purpose, to
                // another claim of the volume on the node that still uses it).
                return s.combined() ? finish(s, effects, null) : afterNodeDetached(s, effects);
            }
            case CONTROLLER_UNPUBLISHING -> {
                return finish(s, effects, null);
            }
            case STORAGE_FENCING -> {
                return storageFenced(s, "storage-fenced by ControllerUnpublish");
            }
            default -> {
                return new Transition(s, List.of());
            }
        }
    }

    /** The current step's command failed with a CSI/gRPC or worker code. */
    public Transition failed(Snapshot s, String code, String message) {
        if (s.phase() == Phase.STORAGE_FENCING) {
            return storageFenceFailed(s, "storage fence by ControllerUnpublish failed: " + code + ": " + message);
        }
        String what = describe(s.phase()) + " failed: " + code + ": " + message;
        boolean teardown = s.phase().tearingDown();
        if (teardown && "NOT_FOUND".equals(code)) {
            return succeeded(s, null);
        }
        if (s.phase() == Phase.READY || s.phase().past()) {
            return new Transition(s, List.of());
        }
        boolean retryable = RETRYABLE.contains(code) || LEASE_REFUSALS.contains(code);
        if (teardown) {
            // The volume may still be attached: never declared done; retried at growing intervals.
            return new Transition(s.retrying(), List.of(new RetryLater(kindOf(s.phase()), policy.backoff(s.attempt()), what)));
        }
        if (retryable && s.attempt() < policy.maxPublishAttempts()) {
            return new Transition(s.retrying(), List.of(new RetryLater(kindOf(s.phase()), policy.backoff(s.attempt()), what)));
        }
        String reason = what + (retryable ? " (gave up after " + s.attempt() + " attempts)" : "");
        List<Effect> effects = new ArrayList<>();
        if (!s.releaseRequested()) {
            // A release while publishing answered the claim request already (release): not answered twice.
            effects.add(new EmitStatus(ClaimState.FAILED, reason));
        }
        Snapshot rolling = s.withRollback();
        if (s.phase() == Phase.MOUNTING) {
            // The node may have staged or partly mounted the volume: undo it before the controller side.
            effects.add(new SendCommand(NodeCommandKind.UNMOUNT));
            return new Transition(rolling.to(Phase.UNMOUNTING), effects);
        }
        // CONTROLLER_PUBLISHING: nothing happened on the node. After retryable codes (or no answer) the publish's
        // outcome is uncertain, it may still be in progress on the controller: the only way to cancel it is the
        // opposite call, so unpublish to be sure (NOT_FOUND counts as done). A definite refusal left nothing to undo.
        if (retryable) {
            effects.add(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH));
            return new Transition(rolling.withControllerPublished().to(Phase.CONTROLLER_UNPUBLISHING), effects);
        }
        // Nothing to undo: ends here, and a release that came meanwhile gets its RELEASED.
        return finish(rolling, effects, null);
    }

    /** A command of the current step got no answer within the timeout: like DEADLINE_EXCEEDED. */
    public Transition timedOut(Snapshot s) {
        return failed(s, "DEADLINE_EXCEEDED", "no answer from the node's worker within the command timeout");
    }

    /** The allocation released its claim, one never answered ready ({@link #release(Snapshot, boolean)}). */
    public Transition release(Snapshot s) {
        return release(s, false);
    }

    /**
     * The allocation released its claim. A claim still publishing (controller-publishing or mounting) is torn down
     * after the step in flight; its claim request, not answered yet, is answered FAILED at once ("released while
     * publishing"): a claim always ends answered (ready, rejected or failed), never only released under the release's
     * request id. {@code answeredReady}: the claim was answered ready before (anti-entropy mounts it again): its
     * request keeps that answer.
     */
    public Transition release(Snapshot s, boolean answeredReady) {
        List<Effect> effects = new ArrayList<>();
        switch (s.phase()) {
            case PLUGIN_WAIT -> {
                // Nothing was sent: the claim ends here, its request answered as well as the release.
                effects.add(new EmitStatus(ClaimState.REJECTED, "released before its node's plugin came back"));
                effects.add(new EmitStatus(ClaimState.RELEASED, "released while waiting for its node's plugin; nothing was mounted"));
                return new Transition(s.withReleaseRequested().to(Phase.FREED), effects);
            }
            case RELEASE_WAIT -> {
                effects.add(new EmitStatus(ClaimState.REJECTED, "released while pending"));
                effects.add(new EmitStatus(ClaimState.RELEASED, "released while pending; nothing was mounted"));
                return new Transition(s.withReleaseRequested().to(Phase.FREED), effects);
            }
            case CONTROLLER_PUBLISHING, MOUNTING -> {
                if (s.releaseRequested() || s.rollingBack()) {
                    return new Transition(s, List.of());
                }
                if (!answeredReady) {
                    effects.add(new EmitStatus(ClaimState.FAILED, "released while publishing (" + describe(s.phase())
                            + " in flight): the claim ends without being ready"));
                }
                effects.add(new EmitStatus(ClaimState.RELEASING, "release requested while publishing; teardown follows the step in flight"));
                return new Transition(s.withReleaseRequested(), effects);
            }
            case UNMOUNTING, CONTROLLER_UNPUBLISHING, STORAGE_FENCING -> {
                if (!s.rollingBack() || s.releaseRequested()) {
                    return new Transition(s, List.of());
                }
                // The failed claim is being rolled back: that teardown is the release, answered once it ends.
                effects.add(new EmitStatus(ClaimState.RELEASING, "release requested while the failed claim is rolled back;"
                        + " released once that ends"));
                return new Transition(s.withReleaseRequested(), effects);
            }
            case READY -> {
                effects.add(new EmitStatus(ClaimState.RELEASING, null));
                effects.add(new SendCommand(NodeCommandKind.UNMOUNT));
                return new Transition(s.withReleaseRequested().to(Phase.UNMOUNTING), effects);
            }
            default -> {
                return new Transition(s, List.of());
            }
        }
    }

    /**
     * The claiming node's lease lapsed and the fence wait passed ({@link LeaseBook}), or an operator forced a detach:
     * the node side is assumed detached (Nomad 13301, made safe by the lease), the controller side still gets its
     * unpublish. A claim not answered yet (controller-publishing or mounting, no release asked) fails with {@code why}
     * and is rolled back: a claim always ends answered (ready, rejected or failed), never only released under its own
     * request id; a ready claim is released with {@code why}.
     */
    public Transition nodeDetached(Snapshot s, String why) {
        if (s.phase().past()) {
            return new Transition(s, List.of());
        }
        List<Effect> effects = new ArrayList<>();
        Snapshot released = s;
        if (!s.rollingBack() && !s.releaseRequested()) {
            if (s.phase() == Phase.CONTROLLER_PUBLISHING || s.phase() == Phase.MOUNTING) {
                released = s.withRollback();
                effects.add(new EmitStatus(ClaimState.FAILED, why));
            } else {
                released = s.withReleaseRequested();
                effects.add(new EmitStatus(ClaimState.RELEASING, why));
            }
        }
        if (s.phase() == Phase.CONTROLLER_UNPUBLISHING) {
            return new Transition(released, effects);
        }
        if (s.phase() == Phase.CONTROLLER_PUBLISHING) {
            // The publish may have reached the controller: unpublish to be sure (NOT_FOUND counts as done).
            effects.add(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH));
            return new Transition(released.withControllerPublished().to(Phase.CONTROLLER_UNPUBLISHING), effects);
        }
        return afterNodeDetached(released, effects, why);
    }

    /**
     * The controller-unpublish that followed a node side assumed detached ({@link #nodeDetached}, {@link #fenced})
     * is done (succeeded, or NOT_FOUND): a release ends RELEASED with {@code note}, why the node side was assumed
     * detached ("node-1's lease epoch 3 lapsed and the fence wait passed: assumed detached"), as it does when no
     * controller-unpublish was owed; a rollback ends FAILED. Anything but CONTROLLER_UNPUBLISHING changes nothing.
     */
    public Transition controllerUnpublishedAfterDetach(Snapshot s, String note) {
        if (s.phase() != Phase.CONTROLLER_UNPUBLISHING) {
            return new Transition(s, List.of());
        }
        return finish(s, new ArrayList<>(), note);
    }

    /**
     * The claim's node is unreachable (its lease lapsed, or its unmount keeps failing) and it may not yet be assumed
     * detached: another node may write only once the node's lease surely lapsed and it fenced (issue 19). Nothing is
     * sent; a release being torn down says why it waits in a RELEASING status ({@code reason}, e.g. "waiting for
     * node-1's lease to lapse: 41 s left"). The caller announces each kind of wait once.
     */
    public Transition fenceWait(Snapshot s, String reason) {
        if (s.phase() == null || s.phase().past() || !s.releaseRequested() || s.rollingBack()) {
            return new Transition(s, List.of());
        }
        return new Transition(s, List.of(new EmitStatus(ClaimState.RELEASING, reason)));
    }

    /**
     * The claim's node reported it fenced itself (issue 19: a FENCED node event listing this claim's mount as removed):
     * the node side is gone. A claim not being released ends FAILED with {@code reason} ("node-1 fenced at epoch 3:
     * mount removed"); a release ends RELEASED with it as the note; either way the controller-unpublish follows when
     * owed. A claim still controller-publishing, waiting, unpublishing or past changes nothing (no mount to remove).
     */
    public Transition fenced(Snapshot s, String reason) {
        if (s.phase() == null || s.phase().past() || s.phase() == Phase.PLUGIN_WAIT || s.phase() == Phase.RELEASE_WAIT
                || s.phase() == Phase.CONTROLLER_PUBLISHING || s.phase() == Phase.CONTROLLER_UNPUBLISHING
                || s.phase() == Phase.STORAGE_FENCING) {
            return new Transition(s, List.of());
        }
        List<Effect> effects = new ArrayList<>();
        Snapshot next = s;
        if (!s.releaseRequested() && !s.rollingBack()) {
            effects.add(new EmitStatus(ClaimState.FAILED, reason));
            next = s.withRollback();
        }
        return afterNodeDetached(next, effects, reason);
    }

    /**
     * The claim's teardown is on an unreachable node of a storage-fencing plugin ({@link StorageFence#decide}): the
     * volume is cut off that node by a ControllerUnpublish (the caller sends it to a controller on another node)
     * instead of waiting for the node's lease. A release says so ({@code reason}) in a RELEASING status. Only from
     * UNMOUNTING; anything else changes nothing.
     */
    public Transition storageFence(Snapshot s, String reason) {
        if (s.phase() != Phase.UNMOUNTING) {
            return new Transition(s, List.of());
        }
        List<Effect> effects = new ArrayList<>();
        if (s.releaseRequested() && !s.rollingBack()) {
            effects.add(new EmitStatus(ClaimState.RELEASING, reason));
        }
        effects.add(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH));
        return new Transition(s.to(Phase.STORAGE_FENCING), effects);
    }

    /**
     * The storage fence's ControllerUnpublish succeeded: the node is cut off the volume, the node side counts as
     * detached and the controller side is done. A release ends RELEASED with {@code note} ("storage-fenced node-1 by
     * ControllerUnpublish"), a rollback FAILED.
     */
    public Transition storageFenced(Snapshot s, String note) {
        if (s.phase() != Phase.STORAGE_FENCING) {
            return new Transition(s, List.of());
        }
        Snapshot done = new Snapshot(s.phase(), s.attempt(), s.controllerRequired(), false, s.releaseRequested(),
                s.rollingBack(), s.controllerLocal());
        return finish(done, new ArrayList<>(), note);
    }

    /**
     * The storage fence's ControllerUnpublish failed or got no answer: never a fence. The teardown goes back to
     * UNMOUNTING (the unmount is sent again after the backoff) and the node is freed only by its own unmount or the
     * lease wait; a release says so ({@code reason}, with the lease wait's) in a RELEASING status.
     */
    public Transition storageFenceFailed(Snapshot s, String reason) {
        if (s.phase() != Phase.STORAGE_FENCING) {
            return new Transition(s, List.of());
        }
        List<Effect> effects = new ArrayList<>();
        if (s.releaseRequested() && !s.rollingBack()) {
            effects.add(new EmitStatus(ClaimState.RELEASING, reason));
        }
        effects.add(new RetryLater(NodeCommandKind.UNMOUNT, policy.backoff(1), reason));
        return new Transition(new Snapshot(Phase.UNMOUNTING, 2, s.controllerRequired(), s.controllerPublished(),
                s.releaseRequested(), s.rollingBack(), s.controllerLocal()), effects);
    }

    /**
     * Anti-entropy: the node reports the mount of this READY claim gone (unmounted behind the worker's back, or lost
     * from its record). The claim is mounted again on the same node: an ACCEPTED status with {@code why}, then the
     * publish path's MOUNT (its retries, and on a fatal failure the FAILED status and the rollback). Any other phase
     * (publishing, releasing, past) changes nothing: its own command or deadline drives it.
     */
    public Transition mountLost(Snapshot s, String why) {
        if (s.phase() != Phase.READY || s.releaseRequested() || s.rollingBack()) {
            return new Transition(s, List.of());
        }
        List<Effect> effects = new ArrayList<>();
        effects.add(new EmitStatus(ClaimState.ACCEPTED, why));
        effects.add(new SendCommand(NodeCommandKind.MOUNT));
        return new Transition(s.to(Phase.MOUNTING), effects);
    }

    /**
     * Anti-entropy: a node holds a mount no claim holds (its claim was lost). It is torn down like a release of a
     * claim that was READY: a RELEASING status with {@code why}, the UNMOUNT, then the controller-unpublish when
     * {@code controllerUnpublishOwed} (the plugin needs a controller) and, when it is due, no other claim of the
     * volume on that node still needs the publication ({@link #controllerPublicationNeeded}, checked by the caller as
     * for every controller-unpublish), then RELEASED.
     */
    public Transition orphanFound(boolean controllerRequired, boolean controllerUnpublishOwed, String why) {
        Snapshot s = new Snapshot(Phase.UNMOUNTING, 1, controllerRequired, controllerUnpublishOwed, true, false);
        List<Effect> effects = new ArrayList<>();
        effects.add(new EmitStatus(ClaimState.RELEASING, why));
        effects.add(new SendCommand(NodeCommandKind.UNMOUNT));
        return new Transition(s, effects);
    }

    /**
     * The controller-unpublish cannot be sent because the claiming node is unknown to the plugin
     * (no external node id): abandoned with an event instead of retried forever (Nomad 25349).
     */
    public Transition controllerUnpublishAbandoned(Snapshot s, String why) {
        if (s.phase() != Phase.CONTROLLER_UNPUBLISHING) {
            return new Transition(s, List.of());
        }
        List<Effect> effects = new ArrayList<>();
        effects.add(new Abandoned(NodeCommandKind.CONTROLLER_UNPUBLISH, why));
        return finish(s, effects, "controller-unpublish abandoned: " + why);
    }

    /**
     * Another current claim of the same volume, as the controller-publication rules see it.
     *
     * @param nodeId             the claiming node
     * @param phase              where the claim is
     * @param controllerRequired its plugin publishes through a controller
     */
    public record Peer(String nodeId, Phase phase, boolean controllerRequired) {

        /**
         * The claim uses (or is about to use) the controller publication of its (volume, node): not past, its plugin
         * needs a controller, and it is publishing, mounting, ready or unmounting (released or not).
         */
        public boolean needsControllerPublication() {
            return phase != null && !phase.past() && controllerRequired
                    && (phase == Phase.CONTROLLER_PUBLISHING || phase == Phase.MOUNTING || phase == Phase.READY
                    || phase == Phase.UNMOUNTING);
        }
    }

    /**
     * The controller publication is per (volume, node), not per claim (Kubernetes: one VolumeAttachment; Nomad:
     * controller-unpublish only when no claim of the volume remains on the node). Whether one of {@code others} (the
     * volume's other current claims) on {@code nodeId} still needs it: then a claim leaving that node must not
     * controller-unpublish (the other's mount would lose its attachment); the last claim to leave unpublishes.
     * Also the rule of the anti-entropy orphan teardown.
     */
    public static boolean controllerPublicationNeeded(String nodeId, Collection<Peer> others) {
        return others.stream().anyMatch(p -> p.nodeId().equals(nodeId) && p.needsControllerPublication());
    }

    /**
     * Whether one of {@code others} (the volume's other current claims) is controller-unpublishing the volume from
     * {@code nodeId}: a controller-publish for that (volume, node) must wait for it, not race it (whichever the
     * plugin ran last would win).
     */
    public static boolean controllerUnpublishPending(String nodeId, Collection<Peer> others) {
        return others.stream().anyMatch(p -> p.nodeId().equals(nodeId) && p.controllerRequired()
                && (p.phase() == Phase.CONTROLLER_UNPUBLISHING || p.phase() == Phase.STORAGE_FENCING));
    }

    /**
     * The controller-unpublish of this claim is not sent because another claim of the volume on the same node still
     * needs the (volume, node) publication ({@link #controllerPublicationNeeded}): the claim ends (released, or
     * failed when rolling back) with {@code why} as the note; the last claim to leave the node unpublishes.
     */
    public Transition controllerUnpublishSkipped(Snapshot s, String why) {
        if (s.phase() != Phase.CONTROLLER_UNPUBLISHING) {
            return new Transition(s, List.of());
        }
        return finish(s, new ArrayList<>(), "controller-unpublish skipped: " + why);
    }

    /**
     * The controller-publish of this claim waits: another claim is controller-unpublishing the volume from the same
     * node ({@link #controllerUnpublishPending}). Sent again after the base backoff; waiting uses up no attempt.
     */
    public Transition controllerPublishDeferred(Snapshot s, String why) {
        if (s.phase() == Phase.MOUNTING && s.combined()) {
            // the mount that carries the controller-publish waits the same way
            return new Transition(s, List.of(new RetryLater(NodeCommandKind.MOUNT, policy.backoff(1),
                    "mount with controller-publish waits: " + why)));
        }
        if (s.phase() != Phase.CONTROLLER_PUBLISHING) {
            return new Transition(s, List.of());
        }
        return new Transition(s, List.of(new RetryLater(NodeCommandKind.CONTROLLER_PUBLISH, policy.backoff(1),
                "controller-publish waits: " + why)));
    }

    private Transition afterNodeDetached(Snapshot s, List<Effect> effects) {
        return afterNodeDetached(s, effects, null);
    }

    private Transition afterNodeDetached(Snapshot s, List<Effect> effects, String why) {
        if (s.controllerPublished()) {
            effects.add(new SendCommand(NodeCommandKind.CONTROLLER_UNPUBLISH));
            return new Transition(s.to(Phase.CONTROLLER_UNPUBLISHING), effects);
        }
        return finish(s, effects, why);
    }

    private Transition finish(Snapshot s, List<Effect> effects, String note) {
        if (s.rollingBack()) {
            if (s.releaseRequested()) {
                // A release that arrived while publishing or rolling back gets its final answer too.
                effects.add(new EmitStatus(ClaimState.RELEASED, "the failed claim was rolled back"));
            }
            return new Transition(s.to(Phase.FAILED), effects);
        }
        effects.add(new EmitStatus(ClaimState.RELEASED, note));
        return new Transition(s.to(Phase.FREED), effects);
    }

    /** The command kind the phase waits on. */
    public static NodeCommandKind kindOf(Phase phase) {
        return switch (phase) {
            case CONTROLLER_PUBLISHING -> NodeCommandKind.CONTROLLER_PUBLISH;
            case MOUNTING -> NodeCommandKind.MOUNT;
            case UNMOUNTING -> NodeCommandKind.UNMOUNT;
            case CONTROLLER_UNPUBLISHING, STORAGE_FENCING -> NodeCommandKind.CONTROLLER_UNPUBLISH;
            default -> null;
        };
    }

    private static String describe(Phase phase) {
        NodeCommandKind kind = kindOf(phase);
        return kind == null ? phase.name().toLowerCase() : kind.wire();
    }
}
