package io.csiorchestrator.claims.domain;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.MountSupport;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The claim rules, in one place: whether a read or write claim of a volume by an allocation on a
 * node is accepted, from the volume's current claims, its access and attachment modes and its
 * plugin's health. Pure: no framework, no I/O. Every rejection names the volume, the allocation and
 * the mode, and says why in words an operator understands.
 *
 * <p>The rules (after Nomad's CSIVolume claim rules, with the checks Nomad leaves to mount time
 * made at claim time):
 * <ol>
 *   <li>the volume is not being deleted;</li>
 *   <li>the claim's sealed mount flags open with the keyring for this volume and are valid;</li>
 *   <li>the claim's attachment mode is the volume's; a block-device claim carries no mount options;</li>
 *   <li>the task driver can mount it: {@code none} mounts nothing, {@code host-only} mounts file
 *       systems but not raw block devices;</li>
 *   <li>the claim's access mode is within the volume's registered capability (see
 *       {@link #capabilityCovers}), and while the volume has claims it equals the mode the first
 *       claim fixed;</li>
 *   <li>the volume is schedulable: its plugin is known, has a healthy controller when it needs one,
 *       and a healthy node instance on the claiming node; the node is within the volume's topology.
 *       A node instance that was healthy and has been away (unhealthy, missing, its plugin removed) for less
 *       than the plugin grace is a short outage (a plugin restarting or being upgraded): the claim, if every
 *       other rule accepts it, waits for the instance ({@link WaitForPlugin}) instead of being rejected, and
 *       is rejected only once the instance stays away past the grace ({@link #pluginOutage} decides the
 *       steps of a claim that find the plugin away);</li>
 *   <li>the claim does not make its node hold more volumes of the plugin than the node instance's
 *       max_volumes_per_node, claims in flight included ({@link NodeLimits});</li>
 *   <li>a write claim needs a write access mode, and in the single-writer modes no other writer: one writer
 *       allocation in single-node-writer, multi-node-single-writer and single-node-single-writer (ReadWriteOncePod),
 *       several on the one node in single-node-multi-writer;</li>
 *   <li>in the single-node modes every claim is on one node.</li>
 * </ol>
 */
public final class ClaimRules {

    private ClaimRules() {
    }

    /**
     * A claim the volume holds now (including claims being published or released).
     *
     * @param releasing its release (or rollback) is under way: a claim it conflicts with waits for it
     *                  ({@link WaitForRelease}) instead of being rejected
     */
    public record HeldClaim(String allocationId, String nodeId, ClaimMode mode, boolean releasing) {
        public HeldClaim(String allocationId, String nodeId, ClaimMode mode) {
            this(allocationId, nodeId, mode, false);
        }
    }

    /**
     * The volume as the rules see it.
     *
     * @param capability       the access mode the volume was registered with (the most it allows)
     * @param fixedAccessMode  the access mode fixed by the first current claim; null without claims
     * @param deleting         a forced delete is releasing its claims
     */
    public record VolumeFacts(String namespace, String volumeId, String pluginId, AccessMode capability,
                              AttachmentMode attachmentMode, AccessMode fixedAccessMode,
                              Map<String, String> topology, boolean deleting, List<HeldClaim> claims) {
        public VolumeFacts {
            topology = topology == null ? Map.of() : Map.copyOf(topology);
            claims = List.copyOf(claims);
        }
    }

    /**
     * One node instance of a plugin.
     *
     * @param maxVolumes NodeGetInfo's max_volumes_per_node as plugin-status last carried it; 0 means no limit
     */
    public record NodeFacts(String nodeId, String externalNodeId, boolean healthy, Map<String, String> topology,
                            long maxVolumes) {
        public NodeFacts {
            topology = topology == null ? Map.of() : Map.copyOf(topology);
            if (maxVolumes < 0) {
                throw new IllegalArgumentException("maxVolumes of node " + nodeId + " is negative: " + maxVolumes);
            }
        }

        /** A node instance without a volume limit. */
        public NodeFacts(String nodeId, String externalNodeId, boolean healthy, Map<String, String> topology) {
            this(nodeId, externalNodeId, healthy, topology, 0);
        }
    }

    /**
     * A plugin as the claim-service last heard of it; {@link #unknown} when plugin-status never
     * named it (or removed it).
     *
     * @param outages by node id, since when a node instance that was healthy is not (unhealthy, missing, or
     *                its plugin removed); absent for healthy instances and for ones never healthy
     * @param volumesHeld by node id, how many volumes of the plugin the node holds (current claims, in flight
     *                included); given for the nodes whose limit a decision needs ({@link NodeLimits#needsCount})
     */
    public record PluginFacts(String pluginId, boolean known, boolean controllerRequired,
                              List<String> healthyControllerNodes, Map<String, NodeFacts> nodes,
                              Map<String, Instant> outages, Map<String, Long> volumesHeld) {
        public PluginFacts {
            healthyControllerNodes = List.copyOf(healthyControllerNodes);
            nodes = Map.copyOf(nodes);
            outages = outages == null ? Map.of() : Map.copyOf(outages);
            volumesHeld = volumesHeld == null ? Map.of() : Map.copyOf(volumesHeld);
        }

        public PluginFacts(String pluginId, boolean known, boolean controllerRequired,
                           List<String> healthyControllerNodes, Map<String, NodeFacts> nodes,
                           Map<String, Instant> outages) {
            this(pluginId, known, controllerRequired, healthyControllerNodes, nodes, outages, Map.of());
        }

        public PluginFacts(String pluginId, boolean known, boolean controllerRequired,
                           List<String> healthyControllerNodes, Map<String, NodeFacts> nodes) {
            this(pluginId, known, controllerRequired, healthyControllerNodes, nodes, Map.of());
        }

        /** This view with {@code nodeId} holding {@code count} volumes of the plugin. */
        public PluginFacts withVolumesHeld(String nodeId, long count) {
            Map<String, Long> held = new java.util.HashMap<>(volumesHeld);
            held.put(nodeId, count);
            return new PluginFacts(pluginId, known, controllerRequired, healthyControllerNodes, nodes, outages, held);
        }

        public static PluginFacts unknown(String pluginId) {
            return new PluginFacts(pluginId, false, false, List.of(), Map.of());
        }

        /** This view with {@code outages} (node id -> since when the instance, healthy before, is away). */
        public PluginFacts withOutages(Map<String, Instant> outages) {
            return new PluginFacts(pluginId, known, controllerRequired, healthyControllerNodes, nodes, outages, volumesHeld);
        }

        public boolean hasHealthyNode(String nodeId) {
            NodeFacts n = nodes.get(nodeId);
            return n != null && n.healthy();
        }

        public boolean anyHealthyNode() {
            return nodes.values().stream().anyMatch(NodeFacts::healthy);
        }
    }

    /**
     * What a read or write claim asks for.
     *
     * @param hasMountOptions    it asks for an fs type or mount flags (plain fs type or sealed flags)
     * @param mountFlagsProblem  why its sealed mount flags cannot be used (unknown key id, tampered,
     *                           sealed for another volume, invalid flags), without secret material;
     *                           null when they can (or there are none)
     */
    public record Request(String allocationId, String nodeId, ClaimMode mode, AccessMode accessMode,
                          AttachmentMode attachmentMode, MountSupport mountSupport, boolean hasMountOptions,
                          String mountFlagsProblem) {

        public Request(String allocationId, String nodeId, ClaimMode mode, AccessMode accessMode,
                       AttachmentMode attachmentMode, MountSupport mountSupport, boolean hasMountOptions) {
            this(allocationId, nodeId, mode, accessMode, attachmentMode, mountSupport, hasMountOptions, null);
        }
    }

    /** The outcome of {@link #decide}. */
    public sealed interface Decision permits Accept, Reject, AlreadyHeld, WaitForPlugin, WaitForRelease {
    }

    /**
     * Every rule accepts the claim except that it conflicts with {@code blocker}, a claim whose release is under way
     * (issue 19: the previous writer's release may wait for its node's lease to lapse): the claim is pending, decided
     * again when that release ends, rejected past the pending timeout. {@code reason} names both claims.
     */
    public record WaitForRelease(HeldClaim blocker, String reason) implements Decision {
    }

    /**
     * Every rule accepts the claim except that its node's plugin instance, healthy before, has been away since
     * {@code since} for less than the grace: the claim waits for it until {@code until}, then is decided again.
     */
    public record WaitForPlugin(Instant since, Instant until, String reason) implements Decision {
    }

    /** The grace a node's plugin instance gets to come back, and the time of the decision. */
    public record PluginGrace(Instant now, Duration grace) {
        /** No grace: a plugin away is away (the rules as they were). */
        public static PluginGrace none(Instant now) {
            return new PluginGrace(now, Duration.ZERO);
        }
    }

    /** The reason codes of a claim's node plugin instance being away (after {@link #unschedulable}). */
    private static final java.util.Set<String> INSTANCE_AWAY = java.util.Set.of("plugin-not-registered",
            "no-node-instance", "node-unhealthy");

    /** The reason code of a claim rejected (or a step given up) because its plugin stayed away past the grace. */
    public static final String PLUGIN_GONE = "plugin-gone";

    /** The claim is taken. */
    public record Accept(String reason) implements Decision {
    }

    /**
     * The claim is refused; {@code reason} names the volume, the allocation and the mode; {@code code}
     * is a short, stable reason code (kebab-case, no ids) for metrics.
     */
    public record Reject(String code, String reason) implements Decision {
    }

    /** The allocation already holds this claim: nothing changes (a repeated claim, not an error). */
    public record AlreadyHeld(HeldClaim claim) implements Decision {
    }

    public static Decision decide(VolumeFacts volume, PluginFacts plugin, Request request) {
        return decide(volume, plugin, request, PluginGrace.none(Instant.EPOCH));
    }

    /** {@link #decide(VolumeFacts, PluginFacts, Request)} with a grace for a node plugin instance that is briefly away. */
    public static Decision decide(VolumeFacts volume, PluginFacts plugin, Request request, PluginGrace grace) {
        Objects.requireNonNull(request.mode(), "mode");
        if (request.mode() == ClaimMode.RELEASE) {
            throw new IllegalArgumentException("a release is not decided by the claim rules");
        }
        String subject = "volume " + volume.namespace() + "/" + volume.volumeId() + ": " + request.mode().wire()
                + " claim by allocation " + request.allocationId() + " on node " + request.nodeId()
                + " (" + (request.accessMode() == null ? "?" : request.accessMode().wire()) + ", "
                + (request.attachmentMode() == null ? "?" : request.attachmentMode().wire()) + ")";

        for (HeldClaim held : volume.claims()) {
            if (held.allocationId().equals(request.allocationId())) {
                if (held.mode() == request.mode() && held.nodeId().equals(request.nodeId())) {
                    return new AlreadyHeld(held);
                }
                return new Reject("allocation-holds-other-claim", subject + " rejected: the allocation already holds a " + held.mode().wire()
                        + " claim on node " + held.nodeId() + "; release it first");
            }
        }
        if (volume.deleting()) {
            return new Reject("volume-deleting", subject + " rejected: the volume is being deleted");
        }
        if (request.mountFlagsProblem() != null) {
            return new Reject("mount-flags-unsealable", subject + " rejected: its sealedMountFlags cannot be used: "
                    + request.mountFlagsProblem());
        }
        if (request.attachmentMode() != volume.attachmentMode()) {
            return new Reject("attachment-mode-mismatch", subject + " rejected: the volume is registered for attachment mode "
                    + volume.attachmentMode().wire());
        }
        if (request.attachmentMode() == AttachmentMode.BLOCK_DEVICE && request.hasMountOptions()) {
            return new Reject("block-device-mount-options", subject + " rejected: a block-device volume takes no mount options (fs type or flags)");
        }
        if (request.mountSupport() == MountSupport.NONE) {
            return new Reject("driver-cannot-mount", subject + " rejected: the allocation's task driver cannot mount volumes (mount support: none)");
        }
        if (request.mountSupport() == MountSupport.HOST_ONLY && request.attachmentMode() == AttachmentMode.BLOCK_DEVICE) {
            return new Reject("driver-host-only", subject + " rejected: the allocation's task driver mounts host paths only and cannot use a raw block device; claim it as file-system or use a driver with full mount support");
        }
        if (!capabilityCovers(volume.capability(), request.accessMode())) {
            return new Reject("access-mode-not-allowed", subject + " rejected: the volume is registered as " + volume.capability().wire()
                    + ", which does not allow " + request.accessMode().wire());
        }
        if (!volume.claims().isEmpty() && volume.fixedAccessMode() != null && volume.fixedAccessMode() != request.accessMode()) {
            return new Reject("access-mode-fixed", subject + " rejected: the volume's current claims use access mode "
                    + volume.fixedAccessMode().wire() + " until every claim is released");
        }
        Unschedulable unhealthy = unschedulable(volume, plugin, request.nodeId());
        WaitForPlugin wait = null;
        if (unhealthy != null) {
            Instant since = INSTANCE_AWAY.contains(unhealthy.code()) ? plugin.outages().get(request.nodeId()) : null;
            if (since == null || grace.grace().isZero()) {
                return new Reject(unhealthy.code(), subject + " rejected: " + unhealthy.message());
            }
            Duration away = Duration.between(since, grace.now());
            if (away.compareTo(grace.grace()) >= 0) {
                return new Reject(PLUGIN_GONE, subject + " rejected: " + goneReason(volume.pluginId(), request.nodeId(),
                        away, grace.grace()));
            }
            // Decided by the other rules first: a claim they refuse is refused now, not after the wait.
            wait = new WaitForPlugin(since, since.plus(grace.grace()), subject + " waits for plugin " + volume.pluginId()
                    + " on node " + request.nodeId() + ", away for " + seconds(away) + " (" + unhealthy.message()
                    + "), up to the grace of " + seconds(grace.grace()));
        }
        if (unhealthy == null) {
            Unschedulable full = NodeLimits.overLimit(volume, plugin, request.nodeId());
            if (full != null) {
                return new Reject(full.code(), subject + " rejected: " + full.message());
            }
        }
        AccessMode mode = request.accessMode();
        // A conflicting claim whose release is under way makes the claim wait for it, not fail (issue 19).
        WaitForRelease pending = null;
        if (request.mode() == ClaimMode.WRITE) {
            if (!mode.allowsWrite()) {
                return new Reject("access-mode-read-only", subject + " rejected: access mode " + mode.wire() + " does not allow writers");
            }
            if (mode.singleWriter()) {
                for (HeldClaim held : volume.claims()) {
                    if (held.mode() != ClaimMode.WRITE) {
                        continue;
                    }
                    String conflict = "access mode " + mode.wire() + " allows a single writer and allocation "
                            + held.allocationId() + " on node " + held.nodeId() + " holds the write claim";
                    if (!held.releasing()) {
                        return new Reject("single-writer-held", subject + " rejected: " + conflict);
                    }
                    pending = pending != null ? pending
                            : new WaitForRelease(held, subject + " pending: " + conflict + ", being released");
                }
            }
        }
        if (!mode.multiNode()) {
            for (HeldClaim held : volume.claims()) {
                if (held.nodeId().equals(request.nodeId())) {
                    continue;
                }
                String conflict = "access mode " + mode.wire() + " allows one node only and allocation "
                        + held.allocationId() + " holds a " + held.mode().wire() + " claim on node " + held.nodeId();
                if (!held.releasing()) {
                    return new Reject("single-node-held", subject + " rejected: " + conflict);
                }
                pending = pending != null ? pending : new WaitForRelease(held, subject + " pending: " + conflict
                        + ", being released");
            }
        }
        if (pending != null) {
            return pending; // the plugin's health is decided again when the release ends
        }
        return wait != null ? wait : new Accept(subject + " accepted");
    }

    /** What a claim's node step does about its plugin instance being away ({@link #pluginOutage}). */
    public sealed interface PluginOutage permits Proceed, KeepWaiting, PluginGone {
    }

    /** The instance is healthy (as far as claim-service knows): send the step. */
    public record Proceed() implements PluginOutage {
    }

    /** Wait for the instance (woken when plugin-status says it is healthy) until {@code until}; waiting since {@code since}. */
    public record KeepWaiting(Instant since, Instant until, String reason) implements PluginOutage {
    }

    /** The instance stayed away past the grace: give the step up; {@code reason} names plugin, node and how long. */
    public record PluginGone(String code, String reason) implements PluginOutage {
    }

    /**
     * The rule for a claim's node step (mount, unmount) and its plugin instance being away, as Kubernetes retries a
     * mount until the plugin is back: the outage counts from the earliest of the claim's own wait ({@code waitingSince}),
     * the instance's outage in claim-service's view, and, for a step that just failed because the plugin did not answer
     * ({@code failedNow}), now. Within the grace the step waits; past it, it is given up.
     *
     * <p>A step that failed while claim-service still sees the instance healthy (the worker noticed first; the plugin
     * may be back before its health changes at all) is tried again after {@code retryDelay}, then after as long as it
     * has waited so far (doubling), within the grace; a wait that becomes due with the instance healthy proceeds.
     */
    public static PluginOutage pluginOutage(String pluginId, String nodeId, PluginFacts plugin, Instant waitingSince,
                                            boolean failedNow, PluginGrace grace, Duration retryDelay) {
        boolean healthy = plugin.hasHealthyNode(nodeId);
        if (!failedNow && healthy) {
            return new Proceed();
        }
        Instant now = grace.now();
        Instant since = earliest(earliest(waitingSince, healthy ? null : plugin.outages().get(nodeId)), failedNow ? now : null);
        if (since == null) {
            // Waiting, not failed, never healthy before and no wait of its own: nothing to wait for.
            return new PluginGone(PLUGIN_GONE, "plugin " + pluginId + " has no healthy node instance on node " + nodeId);
        }
        Duration away = Duration.between(since, now);
        if (away.compareTo(grace.grace()) >= 0) {
            return new PluginGone(PLUGIN_GONE, goneReason(pluginId, nodeId, away, grace.grace()));
        }
        Instant deadline = since.plus(grace.grace());
        if (healthy) {
            Duration delay = away.compareTo(retryDelay) > 0 ? away : retryDelay;
            Instant next = now.plus(delay).isBefore(deadline) ? now.plus(delay) : deadline;
            return new KeepWaiting(since, next, "plugin " + pluginId + " on node " + nodeId + " did not answer; retrying in "
                    + seconds(Duration.between(now, next)) + " (away for " + seconds(away) + ", grace " + seconds(grace.grace()) + ")");
        }
        return new KeepWaiting(since, deadline, "waiting for plugin " + pluginId + " on node " + nodeId + ", away for "
                + seconds(away) + ", up to the grace of " + seconds(grace.grace()));
    }

    private static String goneReason(String pluginId, String nodeId, Duration away, Duration grace) {
        return "plugin " + pluginId + " on node " + nodeId + " has been unavailable for " + seconds(away)
                + ", longer than the grace of " + seconds(grace);
    }

    private static Instant earliest(Instant a, Instant b) {
        if (a == null) {
            return b;
        }
        return b == null || a.isBefore(b) ? a : b;
    }

    /** A duration in whole seconds, rounded up ("0s" only for zero), for operators. */
    static String seconds(Duration d) {
        long ms = Math.max(0, d.toMillis());
        return ((ms + 999) / 1000) + "s";
    }

    /**
     * Why the volume cannot be used on {@code nodeId}, or null when it can. With a null node it is
     * the volume's general health: a known plugin, a healthy controller if required, and at least
     * one healthy node instance.
     */
    public static String unschedulableReason(VolumeFacts volume, PluginFacts plugin, String nodeId) {
        Unschedulable u = unschedulable(volume, plugin, nodeId);
        return u == null ? null : u.message();
    }

    /** Why a volume cannot be used: a reason code (for metrics) and the operator's message. */
    public record Unschedulable(String code, String message) {
    }

    /** {@link #unschedulableReason} with its reason code; null when the volume can be used. */
    public static Unschedulable unschedulable(VolumeFacts volume, PluginFacts plugin, String nodeId) {
        if (!plugin.known()) {
            return new Unschedulable("plugin-not-registered", "plugin " + volume.pluginId() + " is not registered (no plugin-status for it)");
        }
        if (plugin.controllerRequired() && plugin.healthyControllerNodes().isEmpty()) {
            return new Unschedulable("no-healthy-controller", "plugin " + volume.pluginId() + " requires a controller and has no healthy controller instance");
        }
        if (nodeId == null) {
            return plugin.anyHealthyNode() ? null
                    : new Unschedulable("no-healthy-node", "plugin " + volume.pluginId() + " has no healthy node instance");
        }
        NodeFacts node = plugin.nodes().get(nodeId);
        if (node == null) {
            return new Unschedulable("no-node-instance", "plugin " + volume.pluginId() + " has no node instance on node " + nodeId);
        }
        if (!node.healthy()) {
            return new Unschedulable("node-unhealthy", "plugin " + volume.pluginId() + " is unhealthy on node " + nodeId);
        }
        for (Map.Entry<String, String> segment : volume.topology().entrySet()) {
            if (!segment.getValue().equals(node.topology().get(segment.getKey()))) {
                // names both (issue 14 item 4): the volume's accessible topology and the node's instance's segments
                return new Unschedulable("outside-topology", "node " + nodeId + " is outside the volume's topology "
                        + new java.util.TreeMap<>(volume.topology()) + ": node " + nodeId + "'s plugin instance has "
                        + new java.util.TreeMap<>(node.topology()));
            }
        }
        return null;
    }

    /** Whether the volume (in general, on no particular node) is schedulable. */
    public static boolean schedulable(VolumeFacts volume, PluginFacts plugin) {
        return unschedulableReason(volume, plugin, null) == null;
    }

    /**
     * Whether a volume registered with {@code capability} may be claimed in {@code requested}: a
     * mode is covered by itself and by every mode that allows at least as much: more nodes
     * (multi-node covers single-node), more writers (multi-writer covers single-writer covers
     * reader-only).
     */
    public static boolean capabilityCovers(AccessMode capability, AccessMode requested) {
        if (capability == null || requested == null) {
            return false;
        }
        if (requested.multiNode() && !capability.multiNode()) {
            return false;
        }
        return writerRank(capability) >= writerRank(requested);
    }

    /**
     * The read-only setting of a ControllerPublishVolume. The controller publication is per (volume, node) and
     * shared by every claim of the volume on that node, so it is a property of the volume's access mode (the mode
     * every current claim of the volume uses, see rule 5), as in Kubernetes: read-only only for the reader-only
     * modes (a reader-only volume can be claimed only in them). A read claim of a writable mode is read-only on
     * its node publish (its own mount), not on the controller publication a writer on the same node shares.
     */
    public static boolean controllerPublishReadOnly(AccessMode accessMode) {
        return accessMode != null && writerRank(accessMode) == 0;
    }

    private static int writerRank(AccessMode mode) {
        return switch (mode) {
            case SINGLE_NODE_READER_ONLY, MULTI_NODE_READER_ONLY -> 0;
            case SINGLE_NODE_WRITER, MULTI_NODE_SINGLE_WRITER, SINGLE_NODE_SINGLE_WRITER -> 1;
            case MULTI_NODE_MULTI_WRITER, SINGLE_NODE_MULTI_WRITER -> 2;
        };
    }
}
