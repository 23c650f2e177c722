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
 *
 *   CREATED / EXPAND_FAILED ──expand──▶ EXPANDING ──ok, node expansion required and nodes to expand──▶ NODE_EXPANDING
 *                                           │  └──ok, otherwise──▶ CREATED (the new capacity recorded)     │
 *                                           └─fatal / attempts spent─▶ EXPAND_FAILED      one node at a time: ok──▶ next
 *                                                                                         node, after the last CREATED;
 *                                                                                         fatal (FAILED_PRECONDITION: never
 *                                                                                         retried) ─▶ EXPAND_FAILED
 *   CREATED ──a claim ready on a node not node-expanded yet──▶ NODE_EXPANDING (that node; resize on mount)
 *   NODE_EXPANDING ──a claim ready on a node not node-expanded yet──▶ the node appended to the nodes still to expand
 * </pre>
 *
 * Expansion (issue 14 item 3): ControllerExpandVolume through a healthy controller instance's node, then, when the
 * plugin answers node_expansion_required, NodeExpandVolume on each node where a claim of the volume is ready (the
 * volume is published there) and whose node expansion has not reached the new capacity, one node after the other (at
 * most one call in flight per volume, so never two expansions of the volume at once on a node), each on that node's
 * worker. The claims keep working throughout (online expansion). An EXPAND_FAILED volume stays registered and usable;
 * expanding it again starts over with the controller (ControllerExpandVolume is idempotent: a volume as large already
 * answers its capacity). Each end of an expansion (CREATED again, EXPAND_FAILED) is a {@link Report} marked
 * {@link Report#expansion()}: claim-service's result for schedulers.
 *
 * <p>Resize on mount (as Kubernetes' kubelet expands a volume's file system when a pod mounts it after a controller
 * expansion): a claim that becomes ready on a node whose node expansion is behind the capacity the plugin asked nodes
 * to expand to ({@link #claimReady}) gets NodeExpandVolume there: from CREATED a NODE_EXPANDING run of that node
 * ({@link Snapshot#onMount()}), within NODE_EXPANDING the node is appended (again, when its call is the one in flight:
 * that call may have run before the new mount); while EXPANDING nothing (the controller's answer takes the node in, its
 * claim being ready then); in EXPAND_FAILED nothing (the next expansion request takes it in).
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
 * ALREADY_EXISTS for the name with another capacity or source, OUT_OF_RANGE, UNIMPLEMENTED, ...) is fatal. For an
 * expansion, FAILED_PRECONDITION is fatal too (never retried from NodeExpandVolume, as CSI demands).
 */
public final class ProvisionMachine {

    public enum Phase {
        CREATING, CREATED, CREATE_FAILED,
        /** A failed create's delete: CreateVolume again by name, to find (adopt) a volume an uncertain attempt made. */
        FINDING,
        DELETING, DELETE_FAILED, DELETED, EXPANDING, NODE_EXPANDING, EXPAND_FAILED;

        /** Whether a command is owed or outstanding in this phase. */
        public boolean inProgress() {
            return this == CREATING || this == FINDING || this == DELETING || expanding();
        }

        /** Whether an expansion's command (controller or node) is owed or outstanding. */
        public boolean expanding() {
            return this == EXPANDING || this == NODE_EXPANDING;
        }

        /** The command this phase sends (and sends again on a retry); null for a phase that sends none. */
        NodeCommandKind command() {
            return switch (this) {
                case CREATING, FINDING -> NodeCommandKind.CREATE_VOLUME;
                case DELETING -> NodeCommandKind.DELETE_VOLUME;
                case EXPANDING -> NodeCommandKind.CONTROLLER_EXPAND;
                case NODE_EXPANDING -> NodeCommandKind.NODE_EXPAND;
                default -> null;
            };
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
     * @param attempt       the attempt of the current create, delete or expansion step, from 1
     * @param contentSource whether the volume is created from a snapshot or a volume
     * @param expandNodes   in NODE_EXPANDING: the nodes still to run NodeExpandVolume, the first one's command
     *                      outstanding or due; empty otherwise
     * @param onMount       in NODE_EXPANDING: the run was started by a claim that became ready on a node not expanded
     *                      yet (resize on mount), not by an expansion request
     */
    public record Snapshot(Phase phase, int attempt, boolean contentSource, List<String> expandNodes, boolean onMount) {
        public Snapshot {
            expandNodes = expandNodes == null ? List.of() : List.copyOf(expandNodes);
            onMount = onMount && phase == Phase.NODE_EXPANDING;
        }

        public Snapshot(Phase phase, int attempt, boolean contentSource, List<String> expandNodes) {
            this(phase, attempt, contentSource, expandNodes, false);
        }

        public Snapshot(Phase phase, int attempt, boolean contentSource) {
            this(phase, attempt, contentSource, List.of());
        }

        Snapshot with(Phase next, int nextAttempt) {
            boolean nodes = next == Phase.NODE_EXPANDING;
            return new Snapshot(next, nextAttempt, contentSource, nodes ? expandNodes : List.of(), nodes && onMount);
        }

        Snapshot withExpandNodes(List<String> nodes) {
            return new Snapshot(phase, attempt, contentSource, nodes, onMount);
        }

        /** The node whose NodeExpandVolume is outstanding or due; null outside NODE_EXPANDING. */
        public String expandNode() {
            return expandNodes.isEmpty() ? null : expandNodes.get(0);
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

    /**
     * A result for operators and schedulers: the phase reached and why; {@code expansion} for the end of an expansion
     * (CREATED again: expanded; EXPAND_FAILED), not of a create or delete.
     */
    public record Report(Phase phase, String reason, boolean expansion) implements Effect {
        public Report(Phase phase, String reason) {
            this(phase, reason, phase == Phase.EXPAND_FAILED);
        }
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
            case NODE_EXPANDING -> nodeExpanded(s);
            // the plugin gave back the volume an earlier attempt made: delete it by its id
            case FINDING -> new Transition(s.with(Phase.DELETING, 1), List.of(new Send(NodeCommandKind.DELETE_VOLUME)));
            default -> new Transition(s, List.of());
        };
    }

    /**
     * ControllerExpandVolume succeeded: when the plugin asks for node expansion and {@code nodesToExpand} (the nodes
     * where a claim of the volume is ready and whose node expansion is behind the new capacity) is not empty,
     * NODE_EXPANDING with NodeExpandVolume to the first of them (sorted, each once); otherwise the expansion is done
     * (CREATED).
     */
    public Transition controllerExpanded(Snapshot s, boolean nodeExpansionRequired, List<String> nodesToExpand) {
        if (s.phase() != Phase.EXPANDING) {
            return new Transition(s, List.of());
        }
        List<String> nodes = nodesToExpand.stream().distinct().sorted().toList();
        if (!nodeExpansionRequired || nodes.isEmpty()) {
            return new Transition(s.with(Phase.CREATED, s.attempt()), List.of(new Report(Phase.CREATED,
                    nodeExpansionRequired ? "expanded by the controller; no node where it is published needs node expansion"
                            + " now (a claim that becomes ready later is node-expanded then)"
                            : "expanded by the controller; the plugin needs no node expansion", true)));
        }
        return new Transition(new Snapshot(Phase.NODE_EXPANDING, 1, s.contentSource(), nodes, false),
                List.of(new Send(NodeCommandKind.NODE_EXPAND)));
    }

    /**
     * A claim of the volume became ready on {@code node}, whose node expansion is behind the capacity the plugin asked
     * nodes to expand to (the caller checked): from CREATED, a NODE_EXPANDING run of that node (resize on mount);
     * within NODE_EXPANDING the node is appended unless it is among the nodes still to expand after the one in flight
     * (a node whose call is in flight is appended again: that call may have run before the new mount, and finding the
     * volume not published there it expanded nothing). Nothing in any other phase: EXPANDING takes the node in when
     * the controller answers, EXPAND_FAILED with the next expansion request.
     */
    public Transition claimReady(Snapshot s, String node) {
        if (s.phase() == Phase.CREATED) {
            return new Transition(new Snapshot(Phase.NODE_EXPANDING, 1, s.contentSource(), List.of(node), true),
                    List.of(new Send(NodeCommandKind.NODE_EXPAND)));
        }
        if (s.phase() == Phase.NODE_EXPANDING && !s.expandNodes().isEmpty()
                && !s.expandNodes().subList(1, s.expandNodes().size()).contains(node)) {
            List<String> nodes = new java.util.ArrayList<>(s.expandNodes());
            nodes.add(node);
            return new Transition(s.withExpandNodes(nodes), List.of());
        }
        return new Transition(s, List.of());
    }

    /** NodeExpandVolume succeeded on the first pending node: the next node, or, after the last, CREATED. */
    private Transition nodeExpanded(Snapshot s) {
        List<String> rest = s.expandNodes().isEmpty() ? List.of() : s.expandNodes().subList(1, s.expandNodes().size());
        if (rest.isEmpty()) {
            return new Transition(s.with(Phase.CREATED, s.attempt()), List.of(new Report(Phase.CREATED, s.onMount()
                    ? "expanded on the nodes where claims became ready after the volume was expanded (resize on mount)"
                    : "expanded by the controller and on every node where it is published", true)));
        }
        return new Transition(new Snapshot(Phase.NODE_EXPANDING, 1, s.contentSource(), rest, s.onMount()),
                List.of(new Send(NodeCommandKind.NODE_EXPAND)));
    }

    /**
     * Why an expansion to {@code requestedBytes} is refused now, or null. {@link ExpandRefusal#field} names what is
     * wrong: {@code capacity} (not larger than the volume: the plugin does not shrink), {@code plugin} (it does not
     * advertise EXPAND_VOLUME), or {@code volume} (a create, delete or another expansion is in progress: a conflict).
     *
     * @param currentBytes the capacity the plugin last reported (null: unknown)
     */
    public static ExpandRefusal expandRefusal(Snapshot s, String volumeKey, String pluginId, boolean pluginExpands,
                                              Long currentBytes, long requestedBytes) {
        if (requestedBytes < 1) {
            return new ExpandRefusal("capacity", Long.toString(requestedBytes), "must be at least 1 byte", false);
        }
        if (!pluginExpands) {
            return new ExpandRefusal("plugin", pluginId, "does not advertise the EXPAND_VOLUME controller capability;"
                    + " its volumes cannot be expanded", false);
        }
        if (s.phase() != Phase.CREATED && s.phase() != Phase.EXPAND_FAILED) {
            return new ExpandRefusal("volume", volumeKey, "is " + s.phase().name().toLowerCase(java.util.Locale.ROOT)
                    .replace('_', '-') + " (attempt " + s.attempt() + "); expand it once that is over", true);
        }
        if (currentBytes != null && requestedBytes < currentBytes) {
            return new ExpandRefusal("capacity", Long.toString(requestedBytes), "is smaller than the volume's "
                    + currentBytes + " bytes; volumes are never shrunk", false);
        }
        return null;
    }

    /** Whether an expansion to {@code requestedBytes} has nothing to do: the volume is CREATED with that capacity already. */
    public static boolean alreadyExpanded(Snapshot s, Long currentBytes, long requestedBytes) {
        return s.phase() == Phase.CREATED && currentBytes != null && currentBytes == requestedBytes;
    }

    /**
     * Why an expansion is refused because the plugin expands only volumes published nowhere (its VolumeExpansion
     * capability is OFFLINE) and the volume has claims ({@code claims}: each "allocation on node", non-empty), or null.
     * A conflict (409) naming the plugin, the volume, the claims and what to do.
     */
    public static ExpandRefusal offlineRefusal(String volumeKey, String pluginId, boolean offlineOnly, List<String> claims) {
        if (!offlineOnly || claims.isEmpty()) {
            return null;
        }
        return new ExpandRefusal("volume", volumeKey, "plugin " + pluginId + " expands volumes offline only (its"
                + " VolumeExpansion capability is OFFLINE), and volume " + volumeKey + " is claimed by "
                + String.join(", ", claims) + "; release the claims first (the volume must be published on no node),"
                + " then expand it", true);
    }

    /** A refused expansion: the field and value at fault, why, and whether it is a conflict (409) rather than a bad request (400). */
    public record ExpandRefusal(String field, String value, String reason, boolean conflict) {
    }

    /** An expansion the caller checked with {@link #expandRefusal}: EXPANDING, attempt 1, ControllerExpandVolume. */
    public Transition expand(Snapshot s) {
        if (s.phase() != Phase.CREATED && s.phase() != Phase.EXPAND_FAILED) {
            return new Transition(s, List.of());
        }
        return new Transition(s.with(Phase.EXPANDING, 1), List.of(new Send(NodeCommandKind.CONTROLLER_EXPAND)));
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
        NodeCommandKind kind = s.phase().command();
        String what = switch (s.phase()) {
            case CREATING -> "CreateVolume";
            case DELETING -> "DeleteVolume";
            case EXPANDING -> "ControllerExpandVolume";
            default -> "NodeExpandVolume on node " + s.expandNode();
        };
        if (s.phase() == Phase.DELETING && "NOT_FOUND".equals(code)) {
            return succeeded(s);
        }
        String error = what + " failed with " + code + ": " + message;
        if (retryable(kind, code, s.contentSource())) {
            if (s.attempt() < policy.maxAttempts()) {
                return new Transition(s, List.of(new RetryLater(policy.backoff(s.attempt()), error)));
            }
            error = error + " (gave up after " + s.attempt() + " attempts)";
        } else if (kind == NodeCommandKind.NODE_EXPAND && "FAILED_PRECONDITION".equals(code)) {
            error = error + " (not retried: CSI forbids retrying NodeExpandVolume after FAILED_PRECONDITION; the volume"
                    + " stays usable at its former size on that node; expand it again once the cause is fixed)";
        }
        Phase failed = create ? Phase.CREATE_FAILED : s.phase() == Phase.DELETING ? Phase.DELETE_FAILED : Phase.EXPAND_FAILED;
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
        return new Transition(s.with(s.phase(), s.attempt() + 1), List.of(new Send(s.phase().command())));
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
        if (s.phase().expanding()) {
            return "volume " + volumeKey + " is being expanded (attempt " + s.attempt() + ")";
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
            case CREATED, DELETE_FAILED, EXPAND_FAILED -> new Transition(s.with(Phase.DELETING, 1), List.of(new Send(NodeCommandKind.DELETE_VOLUME)));
            case CREATE_FAILED -> new Transition(s.with(Phase.FINDING, 1), List.of(new Send(NodeCommandKind.CREATE_VOLUME)));
            default -> new Transition(s, List.of());
        };
    }

    /**
     * The CSI error table: whether {@code code} from the {@code kind} call is retried with backoff. FAILED_PRECONDITION
     * from NodeExpandVolume never is (CSI: "the CO MUST NOT retry"), nor from ControllerExpandVolume (an offline-only
     * plugin's "the volume is published": retrying cannot change that).
     */
    public static boolean retryable(NodeCommandKind kind, String code, boolean contentSource) {
        if (TRANSIENT.contains(code)) {
            return true;
        }
        if (kind == NodeCommandKind.CONTROLLER_EXPAND || kind == NodeCommandKind.NODE_EXPAND) {
            return false;
        }
        if ("FAILED_PRECONDITION".equals(code)) {
            return kind == NodeCommandKind.DELETE_VOLUME || contentSource;
        }
        return false;
    }
}
