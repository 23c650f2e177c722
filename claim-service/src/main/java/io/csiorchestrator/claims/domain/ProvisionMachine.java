package io.csiorchestrator.claims.domain;

import io.csiorchestrator.events.NodeCommandKind;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * The provisioning state machine of one volume (issue 14), beside {@link ClaimMachine}: CSI CreateVolume and
 * DeleteVolume through a healthy controller instance's node worker. Pure: phases in, phase and effects out.
 *
 * <pre>
 *   create ──▶ CREATING ──ok──▶ CREATED ──delete──▶ DELETING ──ok / NOT_FOUND──▶ DELETED (row and volume gone)
 *                 │  ▲ retryable: RetryLater, same name again      │  ▲ retryable: RetryLater
 *                 │  └──────────────────────────────────────────   │  └──────────────────
 *                 └─fatal / attempts spent─▶ CREATE_FAILED          └─fatal / attempts spent─▶ DELETE_FAILED
 *   CREATE_FAILED ──delete──▶ FINDING ──ok: the plugin's volume by that name──▶ DELETING      DELETE_FAILED ──delete──▶ DELETING
 *                              ├──fatal (no volume can have that name)──▶ DELETED (the record removed)
 *                              └──ALREADY_EXISTS / retries spent──▶ CREATE_FAILED (reported delete-failed; delete again)
 * </pre>
 *
 * FINDING is the adoption by name that CSI's idempotent CreateVolume makes natural: a create that gave up after
 * uncertain attempts (a timeout, UNAVAILABLE: the plugin may have made the volume, a crash between its call and the
 * record) has no plugin id to delete, so the delete of a failed create first sends CreateVolume again with the same
 * name and spec: a volume made by an earlier attempt comes back (then DeleteVolume with its id); a fatal answer means
 * the plugin holds no volume by that name (CSI: the same name and spec MUST return the existing volume) and the record
 * is removed. A failed create is never dropped on the assumption that nothing was created.
 *
 * The request is recorded (CREATING, with its CSI name) before the command leaves, in the same transaction as the
 * outbox row; a retry, a command timeout or a restart re-sends CreateVolume with the same name, which CSI makes
 * idempotent (the same name gives the same volume), so no crash between the plugin's call and the record leaks a
 * volume or records one that does not exist. The volume is registered only by the CREATED transition and
 * deregistered only by DELETED.
 *
 * <p>The CSI error table ({@link #retryable}): UNAVAILABLE, DEADLINE_EXCEEDED, CANCELED (the call may be in
 * progress), ABORTED (another operation on the volume is pending), RESOURCE_EXHAUSTED (no capacity or topology
 * now), the worker's own transient codes and SNAPSHOT_NOT_READY (a snapshot not ready_to_use yet: polled by re-sending
 * CreateSnapshot with the same name) are retried with backoff; FAILED_PRECONDITION is retried for a create
 * from a content source (the snapshot is not ready yet) and for a delete (the volume still has snapshots or is
 * still published), fatal otherwise; NOT_FOUND completes a delete; everything else (INVALID_ARGUMENT,
 * ALREADY_EXISTS for the name with another capacity or source, OUT_OF_RANGE, UNIMPLEMENTED, ...) is fatal.
 */
public final class ProvisionMachine {

    public enum Phase {
        CREATING, CREATED, CREATE_FAILED,
        /** A failed create's delete: CreateVolume again by name, to find (adopt) a volume an uncertain attempt made. */
        FINDING,
        DELETING, DELETE_FAILED, DELETED;

        /** Whether a command is owed or outstanding in this phase. */
        public boolean inProgress() {
            return this == CREATING || this == FINDING || this == DELETING;
        }
    }

    /** Codes retried with backoff for both create and delete. */
    static final Set<String> TRANSIENT = Set.of("UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELED", "ABORTED",
            "RESOURCE_EXHAUSTED", "PLUGIN_NOT_FOUND", "WORKER_ERROR", "WORKER_IO_ERROR", "STALE_LEASE_EPOCH", "SNAPSHOT_NOT_READY",
            "NO_VALID_LEASE");

    /** Retry settings: attempts per create or delete, exponential backoff between them. */
    public record Policy(int maxAttempts, Duration baseBackoff, Duration maxBackoff) {
        public static final Policy DEFAULT = new Policy(8, Duration.ofSeconds(1), Duration.ofMinutes(1));

        public Policy {
            if (maxAttempts < 1) {
                throw new IllegalArgumentException("maxAttempts must be at least 1, got " + maxAttempts);
            }
        }

        public Duration backoff(int attempt) {
            long factor = 1L << Math.min(Math.max(attempt - 1, 0), 20);
            Duration d = baseBackoff.multipliedBy(factor);
            return d.compareTo(maxBackoff) > 0 ? maxBackoff : d;
        }
    }

    /**
     * A provision's checkpoint.
     *
     * @param attempt       the attempt of the current create or delete, from 1
     * @param contentSource whether the volume is created from a snapshot or a volume
     */
    public record Snapshot(Phase phase, int attempt, boolean contentSource) {
        Snapshot with(Phase next, int nextAttempt) {
            return new Snapshot(next, nextAttempt, contentSource);
        }
    }

    public sealed interface Effect permits Send, RetryLater, Register, Deregister, Report {
    }

    /** Write the node command of the current attempt (a new command id) to the outbox. */
    public record Send(NodeCommandKind kind) implements Effect {
    }

    /** No command outstanding; send again after {@code delay}. */
    public record RetryLater(Duration delay, String lastError) implements Effect {
    }

    /** Register the created volume (from the plugin's answer). */
    public record Register() implements Effect {
    }

    /** Deregister the volume and forget the provision. */
    public record Deregister() implements Effect {
    }

    /** A result for operators and schedulers: the phase reached and why. */
    public record Report(Phase phase, String reason) implements Effect {
    }

    public record Transition(Snapshot next, List<Effect> effects) {
        public Transition {
            effects = List.copyOf(effects);
        }
    }

    private final Policy policy;

    public ProvisionMachine(Policy policy) {
        this.policy = policy;
    }

    /** A new create request: CREATING, attempt 1, the CreateVolume command. */
    public Transition create(boolean contentSource) {
        return new Transition(new Snapshot(Phase.CREATING, 1, contentSource), List.of(new Send(NodeCommandKind.CREATE_VOLUME)));
    }

    /** The plugin's command succeeded (for a delete: or answered NOT_FOUND, which the worker reports as success). */
    public Transition succeeded(Snapshot s) {
        return switch (s.phase()) {
            case CREATING -> new Transition(s.with(Phase.CREATED, s.attempt()),
                    List.of(new Register(), new Report(Phase.CREATED, "created by the plugin and registered")));
            case DELETING -> new Transition(s.with(Phase.DELETED, s.attempt()),
                    List.of(new Deregister(), new Report(Phase.DELETED, "deleted by the plugin and deregistered")));
            // the plugin gave back the volume an earlier attempt made: delete it by its id
            case FINDING -> new Transition(s.with(Phase.DELETING, 1), List.of(new Send(NodeCommandKind.DELETE_VOLUME)));
            default -> new Transition(s, List.of());
        };
    }

    /** The command failed with {@code code} (a CSI status code name or a worker code). */
    public Transition failed(Snapshot s, String code, String message) {
        if (!s.phase().inProgress()) {
            return new Transition(s, List.of());
        }
        if (s.phase() == Phase.FINDING) {
            return findFailed(s, code, message);
        }
        boolean create = s.phase() == Phase.CREATING;
        String what = create ? "CreateVolume" : "DeleteVolume";
        if (!create && "NOT_FOUND".equals(code)) {
            return succeeded(s);
        }
        String error = what + " failed with " + code + ": " + message;
        if (retryable(create ? NodeCommandKind.CREATE_VOLUME : NodeCommandKind.DELETE_VOLUME, code, s.contentSource())) {
            if (s.attempt() < policy.maxAttempts()) {
                return new Transition(s, List.of(new RetryLater(policy.backoff(s.attempt()), error)));
            }
            error = error + " (gave up after " + s.attempt() + " attempts)";
        }
        Phase failed = create ? Phase.CREATE_FAILED : Phase.DELETE_FAILED;
        return new Transition(s.with(failed, s.attempt()), List.of(new Report(failed, error)));
    }

    /**
     * FINDING's CreateVolume failed: retried like a create's; ALREADY_EXISTS (a volume has the name with another spec)
     * or the attempts spent leave the record CREATE_FAILED and report the delete failed; any other fatal code means the
     * plugin holds no volume by that name, so the record goes.
     */
    private Transition findFailed(Snapshot s, String code, String message) {
        String error = "CreateVolume by name (to find the volume before deleting it) failed with " + code + ": " + message;
        boolean retry = retryable(NodeCommandKind.CREATE_VOLUME, code, s.contentSource());
        if (retry && s.attempt() < policy.maxAttempts()) {
            return new Transition(s, List.of(new RetryLater(policy.backoff(s.attempt()), error)));
        }
        if (retry || "ALREADY_EXISTS".equals(code)) {
            String reason = error + (retry ? " (gave up after " + s.attempt() + " attempts)" : "")
                    + "; the plugin may hold a volume by this name: delete again";
            return new Transition(s.with(Phase.CREATE_FAILED, s.attempt()), List.of(new Report(Phase.DELETE_FAILED, reason)));
        }
        return new Transition(s.with(Phase.DELETED, s.attempt()), List.of(new Deregister(), new Report(Phase.DELETED,
                "the failed create's record removed: the plugin holds no volume by this name (" + error + ")")));
    }

    /** The outstanding command got no answer in time: DEADLINE_EXCEEDED (the call may be in progress). */
    public Transition timedOut(Snapshot s, Duration after) {
        return failed(s, "DEADLINE_EXCEEDED", "no answer from the controller's node within " + after);
    }

    /** The plugin has no healthy controller instance now: wait with backoff, counted as an attempt. */
    public Transition noController(Snapshot s, String pluginId) {
        return failed(s, "PLUGIN_NOT_FOUND", "plugin " + pluginId + " has no healthy controller instance");
    }

    /** A retry is due: the next attempt of the same call. */
    public Transition retryDue(Snapshot s) {
        if (!s.phase().inProgress()) {
            return new Transition(s, List.of());
        }
        return new Transition(s.with(s.phase(), s.attempt() + 1),
                List.of(new Send(s.phase() == Phase.DELETING ? NodeCommandKind.DELETE_VOLUME : NodeCommandKind.CREATE_VOLUME)));
    }

    /**
     * Why a delete is refused now, or null: a volume with claims, or one whose create or delete is in progress.
     *
     * @param volumeKey for the message
     * @param claims    the allocations holding a claim on it now
     */
    public static String deleteRefusal(Snapshot s, String volumeKey, List<String> claims) {
        if (!claims.isEmpty()) {
            return "volume " + volumeKey + " is claimed by " + String.join(", ", claims) + "; release the claims first";
        }
        if (s.phase() == Phase.CREATING) {
            return "volume " + volumeKey + " is still being created (attempt " + s.attempt() + ")";
        }
        return null;
    }

    /**
     * A delete the caller checked with {@link #deleteRefusal}: DELETING with the DeleteVolume command, or, for a
     * volume whose create failed (an uncertain attempt may have made it), FINDING with CreateVolume by the same name;
     * a delete in progress stays as it is.
     */
    public Transition delete(Snapshot s) {
        return switch (s.phase()) {
            case CREATED, DELETE_FAILED -> new Transition(s.with(Phase.DELETING, 1), List.of(new Send(NodeCommandKind.DELETE_VOLUME)));
            case CREATE_FAILED -> new Transition(s.with(Phase.FINDING, 1), List.of(new Send(NodeCommandKind.CREATE_VOLUME)));
            default -> new Transition(s, List.of());
        };
    }

    /** The CSI error table: whether {@code code} from the {@code kind} call is retried with backoff. */
    public static boolean retryable(NodeCommandKind kind, String code, boolean contentSource) {
        if (TRANSIENT.contains(code)) {
            return true;
        }
        if ("FAILED_PRECONDITION".equals(code)) {
            return kind == NodeCommandKind.DELETE_VOLUME || contentSource;
        }
        return false;
    }
}
