package io.csiorchestrator.csi;

import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.csi.v1.PluginCapability;

import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What a CSI plugin says about itself: identity, readiness, and the capabilities that decide the
 * orchestrator's call sequence.
 *
 * @param name                   GetPluginInfo name, e.g. {@code hostpath.csi.csiorchestrator.io}
 * @param vendorVersion          GetPluginInfo vendor version
 * @param manifest               GetPluginInfo manifest
 * @param ready                  Probe's answer (an unset ready counts as ready)
 * @param pluginCapabilities     GetPluginCapabilities service types
 * @param controllerCapabilities ControllerGetCapabilities RPC types; empty without a controller service
 * @param node                   the node service's answers; empty for a plugin without one
 * @param volumeExpansion        GetPluginCapabilities' VolumeExpansion type: ONLINE, OFFLINE (OFFLINE when it
 *                               names both), or UNKNOWN when it advertises none
 */
public record PluginFingerprint(
        String name,
        String vendorVersion,
        Map<String, String> manifest,
        boolean ready,
        Set<PluginCapability.Service.Type> pluginCapabilities,
        Set<ControllerServiceCapability.RPC.Type> controllerCapabilities,
        Optional<NodeFingerprint> node,
        PluginCapability.VolumeExpansion.Type volumeExpansion) {

    public PluginFingerprint {
        manifest = Map.copyOf(manifest);
        pluginCapabilities = Set.copyOf(pluginCapabilities);
        controllerCapabilities = Set.copyOf(controllerCapabilities);
        volumeExpansion = volumeExpansion == null || volumeExpansion == PluginCapability.VolumeExpansion.Type.UNRECOGNIZED
                ? PluginCapability.VolumeExpansion.Type.UNKNOWN : volumeExpansion;
    }

    /** A fingerprint without a VolumeExpansion capability. */
    public PluginFingerprint(String name, String vendorVersion, Map<String, String> manifest, boolean ready,
                             Set<PluginCapability.Service.Type> pluginCapabilities,
                             Set<ControllerServiceCapability.RPC.Type> controllerCapabilities,
                             Optional<NodeFingerprint> node) {
        this(name, vendorVersion, manifest, ready, pluginCapabilities, controllerCapabilities, node,
                PluginCapability.VolumeExpansion.Type.UNKNOWN);
    }

    /**
     * The node service's answers.
     *
     * @param nodeId            NodeGetInfo node id, the id to pass to ControllerPublishVolume
     * @param maxVolumesPerNode 0 for no limit
     * @param topology          NodeGetInfo accessible topology segments
     * @param capabilities      NodeGetCapabilities RPC types
     */
    public record NodeFingerprint(String nodeId, long maxVolumesPerNode, Map<String, String> topology,
                                  Set<NodeServiceCapability.RPC.Type> capabilities) {
        public NodeFingerprint {
            topology = Map.copyOf(topology);
            capabilities = Set.copyOf(capabilities);
        }

        /** Whether NodeStageVolume/NodeUnstageVolume must be called. */
        public boolean requiresStaging() {
            return capabilities.contains(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME);
        }
    }

    public boolean hasControllerService() {
        return pluginCapabilities.contains(PluginCapability.Service.Type.CONTROLLER_SERVICE);
    }

    /** Whether ControllerPublishVolume/ControllerUnpublishVolume must be called. */
    public boolean requiresControllerPublish() {
        return controllerCapabilities.contains(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME);
    }

    public boolean requiresStaging() {
        return node.map(NodeFingerprint::requiresStaging).orElse(false);
    }
}
