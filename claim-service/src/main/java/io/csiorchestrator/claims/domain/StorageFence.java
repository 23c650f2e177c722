package io.csiorchestrator.claims.domain;

import java.util.Collection;
import java.util.List;

/**
 * Storage-level fencing (issue 19 item 4). Pure: whether a claim's teardown on an unreachable node X is ended by a
 * ControllerUnpublishVolume(volume, X) sent to a healthy controller instance of the plugin on another node, instead of
 * waiting for X's lease to lapse and its fence wait to pass.
 *
 * <p>Only for plugins listed in {@code csi.fencing.storage-fencing-plugins}: plugins whose ControllerUnpublish really
 * cuts a node off the volume (cloud detach, Ceph blocklist, SCSI/NVMe reservation preemption, the hostpath plugin's
 * {@code --fence-on-controller-unpublish}). A successful ControllerUnpublish is the fence; a failed or timed-out one
 * never is: the claim falls back to the lease wait ({@link LeaseBook#verdict}). It knowingly breaks the CSI order
 * (ControllerUnpublish after NodeUnpublish/NodeUnstage), as Kubernetes' non-graceful shutdown does: the node cannot
 * be asked.
 *
 * <p>X counts as unreachable when its lease is not valid (received LAPSED or FENCED, or VALID but not renewed for
 * lease-ttl x (1 + clock-drift)) or when the teardown's unmount got no answer within the command timeout. A node of
 * which no lease is known is not unreachable by its lease alone.
 */
public final class StorageFence {

    private StorageFence() {
    }

    /** Why the claim's node is unreachable, or {@link #REACHABLE}. */
    public enum Unreachable {
        REACHABLE(null),
        LEASE_NOT_VALID("its lease is not valid"),
        UNMOUNT_TIMED_OUT("its unmount got no answer within the command timeout");

        private final String text;

        Unreachable(String text) {
            this.text = text;
        }

        public String text() {
            return text;
        }
    }

    /**
     * What the rule looks at.
     *
     * @param pluginId                 the volume's plugin
     * @param storageFencingPlugins    {@code csi.fencing.storage-fencing-plugins}
     * @param failover                 the volume's failover ({@link Failover#MANUAL} is never fenced automatically)
     * @param controllerRequired       the plugin publishes through a controller
     * @param phase                    the claim's phase (only a teardown in {@link ClaimMachine.Phase#UNMOUNTING} is fenced)
     * @param alreadyFailed            a storage fence of this claim was tried and failed (tried once per teardown)
     * @param nodeId                   X, the claim's node
     * @param externalNodeId           X's id as the plugin knows it (null: unknown)
     * @param healthyControllerNodes   the nodes with a healthy controller instance of the plugin
     * @param previousController       the controller node the claim used so far (preferred when healthy and not X)
     * @param othersNeedPublication    another current claim of the volume on X still uses the (volume, X) publication
     *                                 (a reader on X would be cut off too)
     * @param unreachable              why X is unreachable, or {@link Unreachable#REACHABLE}
     */
    public record Facts(String pluginId, Collection<String> storageFencingPlugins, Failover failover,
                        boolean controllerRequired, ClaimMachine.Phase phase, boolean alreadyFailed, String nodeId,
                        String externalNodeId, List<String> healthyControllerNodes, String previousController,
                        boolean othersNeedPublication, Unreachable unreachable) {
    }

    /** The outcome of {@link #decide}. */
    public sealed interface Decision permits Fence, NotApplicable, Unavailable {
    }

    /** Send ControllerUnpublish(volume, X) to {@code controllerNode} now; {@code reason} says so (a RELEASING status). */
    public record Fence(String controllerNode, String reason) implements Decision {
    }

    /** The rule does not apply (plugin not listed, node reachable, not a teardown, tried already): nothing to say. */
    public record NotApplicable() implements Decision {
    }

    /** The plugin is a storage-fencing one and X is unreachable, but it cannot be fenced now; {@code reason} says why. */
    public record Unavailable(String reason) implements Decision {
    }

    public static Decision decide(Facts f) {
        if (f.unreachable() == Unreachable.REACHABLE || !f.storageFencingPlugins().contains(f.pluginId())
                || f.phase() != ClaimMachine.Phase.UNMOUNTING || f.alreadyFailed() || f.failover() == Failover.MANUAL) {
            return new NotApplicable();
        }
        String cannot = "no storage fence of " + f.nodeId() + ": ";
        if (!f.controllerRequired()) {
            return new Unavailable(cannot + "plugin " + f.pluginId() + " has no controller (no ControllerUnpublish)");
        }
        if (f.externalNodeId() == null) {
            return new Unavailable(cannot + "it is unknown to plugin " + f.pluginId() + " (no external node id)");
        }
        if (f.othersNeedPublication()) {
            return new Unavailable(cannot + "another claim of the volume on " + f.nodeId()
                    + " still uses its controller publication");
        }
        String controller = controllerFor(f.healthyControllerNodes(), f.previousController(), f.nodeId());
        if (controller == null) {
            return new Unavailable(cannot + "plugin " + f.pluginId() + " has no healthy controller instance on another node");
        }
        return new Fence(controller, f.nodeId() + " is unreachable (" + f.unreachable().text()
                + "): storage-fencing it by ControllerUnpublish through the controller on " + controller);
    }

    /** A healthy controller node other than {@code fenced}: the previous one when it qualifies, else the first. */
    public static String controllerFor(List<String> healthyControllerNodes, String previous, String fenced) {
        if (previous != null && !previous.equals(fenced) && healthyControllerNodes.contains(previous)) {
            return previous;
        }
        return healthyControllerNodes.stream().filter(n -> !n.equals(fenced)).findFirst().orElse(null);
    }

    /**
     * The controller for a claim's controller publish or unpublish: the previous one while it is healthy and its node
     * reachable ({@code reachable}: its lease valid), else the first healthy reachable one, else (none reachable) the
     * previous healthy one or the first healthy one as before; null when none is healthy. A command to a controller on
     * a node cut off (e.g. the old writer's own node in a partition) would only time out again and again while the
     * next writer waits for the teardown (issue 19).
     */
    public static String controllerFor(List<String> healthyControllerNodes, String previous,
                                       java.util.function.Predicate<String> reachable) {
        if (previous != null && healthyControllerNodes.contains(previous) && reachable.test(previous)) {
            return previous;
        }
        return healthyControllerNodes.stream().filter(reachable).findFirst()
                .orElse(previous != null && healthyControllerNodes.contains(previous) ? previous
                        : healthyControllerNodes.isEmpty() ? null : healthyControllerNodes.get(0));
    }

    /**
     * Whether the node's lease is valid at {@code nowNanos}: received VALID (newest epoch) and renewed within
     * lease-ttl x (1 + clock-drift). Null (no lease known) counts as valid: unknown is not unreachable.
     */
    public static boolean leaseValid(LeaseBook.Entry lease, FenceTimers timers, long nowNanos) {
        if (lease == null) {
            return true;
        }
        return lease.state() == LeaseBook.State.VALID
                && nowNanos - lease.lastValidNanos() <= timers.driftedTtl().toNanos();
    }

    /** The RELEASED note of a successful fence. */
    public static String fencedNote(String nodeId) {
        return "storage-fenced " + nodeId + " by ControllerUnpublish";
    }

    /** Why a failed ControllerUnpublish is no fence; the caller appends the lease wait's reason. */
    public static String failedReason(String nodeId, String code, String message) {
        return "storage fence of " + nodeId + " by ControllerUnpublish failed (" + code + ": " + message
                + "): not a fence, falling back to the lease wait";
    }
}
