package io.csiorchestrator.claims.domain;

import io.csiorchestrator.claims.domain.ClaimRules.HeldClaim;
import io.csiorchestrator.claims.domain.ClaimRules.NodeFacts;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.claims.domain.ClaimRules.Unschedulable;
import io.csiorchestrator.claims.domain.ClaimRules.VolumeFacts;

/**
 * The node volume limit at claim time (issue 34 item 1): a node instance of a plugin that reports
 * {@code max_volumes_per_node} (NodeGetInfo, as plugin-status last carried it) takes no claim that would make the node
 * hold more volumes of that plugin than the limit. What the node holds counts every volume of the plugin with a current
 * claim on the node, claims in flight (being published, waiting, being released) included: the plugin sees them
 * mounted or about to be. A claim of a volume the node already holds adds no volume and is never refused for the limit.
 * A limit of 0 means none (the CSI spec). Pure: no framework, no I/O. Kubernetes' scheduler (NodeVolumeLimits) and
 * Nomad's feasibility check (CSIVolumeChecker, MaxVolumes) decide the same before placing.
 */
public final class NodeLimits {

    /** The reason code of a claim refused for the node's volume limit. */
    public static final String NODE_VOLUME_LIMIT = "node-volume-limit";

    private NodeLimits() {
    }

    /** Whether {@code nodeId} needs the count of the plugin's volumes it holds to decide a claim of {@code volume}. */
    public static boolean needsCount(VolumeFacts volume, PluginFacts plugin, String nodeId) {
        NodeFacts node = plugin.nodes().get(nodeId);
        return node != null && node.maxVolumes() > 0 && !holdsVolume(volume, nodeId);
    }

    /**
     * Why a claim of {@code volume} on {@code nodeId} would break the node's limit, or null when it would not. The
     * count comes from {@link PluginFacts#volumesHeld()}; a limited node without a count there is a caller's mistake.
     */
    public static Unschedulable overLimit(VolumeFacts volume, PluginFacts plugin, String nodeId) {
        if (!needsCount(volume, plugin, nodeId)) {
            return null;
        }
        long limit = plugin.nodes().get(nodeId).maxVolumes();
        Long held = plugin.volumesHeld().get(nodeId);
        if (held == null) {
            throw new IllegalArgumentException("the volumes of plugin " + plugin.pluginId() + " held on node " + nodeId
                    + " were not counted (the node has a limit of " + limit + ")");
        }
        if (held < limit) {
            return null;
        }
        return new Unschedulable(NODE_VOLUME_LIMIT, "node " + nodeId + " has reached its limit of volumes of plugin "
                + plugin.pluginId() + ": limit " + limit + " (max_volumes_per_node), held " + held
                + " (claims in flight included)");
    }

    private static boolean holdsVolume(VolumeFacts volume, String nodeId) {
        for (HeldClaim c : volume.claims()) {
            if (c.nodeId().equals(nodeId)) {
                return true;
            }
        }
        return false;
    }
}
