package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;

/**
 * The fingerprint and health of one CSI plugin instance on one node, sent by the node's worker
 * on every health transition and as a periodic heartbeat. Topic {@code plugin-health}, key:
 * {@code pluginId/nodeId}.
 *
 * @param type                   controller, node or monolith
 * @param healthDescription      why it is (un)healthy, for operators
 * @param pluginCapabilities     GetPluginCapabilities service types, e.g. CONTROLLER_SERVICE, and its
 *                               VolumeExpansion type as {@code VOLUME_EXPANSION_ONLINE} or
 *                               {@code VOLUME_EXPANSION_OFFLINE} ({@link VolumeExpansionMode#capability()})
 * @param controllerCapabilities ControllerGetCapabilities RPC types, e.g. PUBLISH_UNPUBLISH_VOLUME
 * @param nodeCapabilities       NodeGetCapabilities RPC types, e.g. STAGE_UNSTAGE_VOLUME
 * @param nodeInfo               NodeGetInfo; present for node and monolith instances once
 *                               fingerprinted
 * @param heartbeat              true for a periodic heartbeat, false for a transition
 * @param observedAt             when the worker observed this state; an older observation never
 *                               overwrites a newer one
 * @param deregistered           true on the last report of an instance the worker removed (its socket
 *                               stayed unreachable past the worker's grace): the instance is gone, not
 *                               just unhealthy; always with {@code healthy=false}. Absent means false.
 * @param leaseEpoch             the worker's lease epoch; plugin-registry-service ignores (and dead-letters) a
 *                               heartbeat of an epoch older than the node's current one; null from a worker that
 *                               predates leases
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PluginHealth(
        String pluginId,
        String nodeId,
        PluginType type,
        Boolean healthy,
        String healthDescription,
        String providerName,
        String providerVersion,
        List<String> pluginCapabilities,
        List<String> controllerCapabilities,
        List<String> nodeCapabilities,
        NodeInfo nodeInfo,
        Boolean heartbeat,
        Instant observedAt,
        Boolean deregistered,
        Long leaseEpoch) implements ContractEvent {

    /** The controller capability that makes a controller publish necessary before node staging. */
    public static final String PUBLISH_UNPUBLISH_VOLUME = "PUBLISH_UNPUBLISH_VOLUME";

    public PluginHealth {
        pluginCapabilities = Copies.list(pluginCapabilities);
        controllerCapabilities = Copies.list(controllerCapabilities);
        nodeCapabilities = Copies.list(nodeCapabilities);
        heartbeat = heartbeat != null && heartbeat;
        deregistered = Boolean.TRUE.equals(deregistered) ? Boolean.TRUE : null;
    }

    /** A report without lease epoch. */
    public PluginHealth(String pluginId, String nodeId, PluginType type, Boolean healthy, String healthDescription,
                        String providerName, String providerVersion, List<String> pluginCapabilities,
                        List<String> controllerCapabilities, List<String> nodeCapabilities, NodeInfo nodeInfo,
                        Boolean heartbeat, Instant observedAt, Boolean deregistered) {
        this(pluginId, nodeId, type, healthy, healthDescription, providerName, providerVersion, pluginCapabilities,
                controllerCapabilities, nodeCapabilities, nodeInfo, heartbeat, observedAt, deregistered, null);
    }

    /** A report of an instance that stays registered (no {@code deregistered} flag). */
    public PluginHealth(String pluginId, String nodeId, PluginType type, Boolean healthy, String healthDescription,
                        String providerName, String providerVersion, List<String> pluginCapabilities,
                        List<String> controllerCapabilities, List<String> nodeCapabilities, NodeInfo nodeInfo,
                        Boolean heartbeat, Instant observedAt) {
        this(pluginId, nodeId, type, healthy, healthDescription, providerName, providerVersion, pluginCapabilities,
                controllerCapabilities, nodeCapabilities, nodeInfo, heartbeat, observedAt, null, null);
    }

    /** This report with the worker's lease epoch. */
    public PluginHealth withLeaseEpoch(Long epoch) {
        return new PluginHealth(pluginId, nodeId, type, healthy, healthDescription, providerName, providerVersion,
                pluginCapabilities, controllerCapabilities, nodeCapabilities, nodeInfo, heartbeat, observedAt,
                deregistered, epoch);
    }

    /** This report, unhealthy, as the last one of an instance its worker removed. */
    public PluginHealth asDeregistered() {
        return new PluginHealth(pluginId, nodeId, type, false, healthDescription, providerName, providerVersion,
                pluginCapabilities, controllerCapabilities, nodeCapabilities, nodeInfo, false, observedAt, true, leaseEpoch);
    }

    /** Whether this is the last report of an instance its worker removed. */
    public boolean reportsDeregistered() {
        return Boolean.TRUE.equals(deregistered);
    }

    /** The record key of {@code plugin-health}: {@code pluginId/nodeId} ('/' never occurs in an id). */
    public static String key(String pluginId, String nodeId) {
        return pluginId + "/" + nodeId;
    }

    @Override
    public EventType eventType() {
        return EventType.PLUGIN_HEALTH;
    }

    @Override
    public String recordKey() {
        return key(pluginId, nodeId);
    }

    public boolean reportsHealthy() {
        return Boolean.TRUE.equals(healthy);
    }

    public boolean hasController() {
        return type == PluginType.CONTROLLER || type == PluginType.MONOLITH;
    }

    public boolean hasNode() {
        return type == PluginType.NODE || type == PluginType.MONOLITH;
    }

    public boolean requiresControllerPublish() {
        return hasController() && controllerCapabilities.contains(PUBLISH_UNPUBLISH_VOLUME);
    }

    @Override
    public void checkFields(Violations v) {
        v.id("pluginId", pluginId);
        v.id("nodeId", nodeId);
        v.required("type", type);
        v.required("healthy", healthy);
        v.optionalText("healthDescription", healthDescription, 4096);
        v.optionalText("providerName", providerName, 256);
        v.optionalText("providerVersion", providerVersion, 256);
        v.noNullElements("pluginCapabilities", pluginCapabilities);
        v.noNullElements("controllerCapabilities", controllerCapabilities);
        v.noNullElements("nodeCapabilities", nodeCapabilities);
        if (nodeInfo != null) {
            nodeInfo.checkFields("nodeInfo", v);
        }
        v.required("observedAt", observedAt);
        if (leaseEpoch != null && leaseEpoch < 1) {
            v.add("leaseEpoch", leaseEpoch, "must be at least 1");
        }
        if (reportsDeregistered() && Boolean.TRUE.equals(healthy)) {
            v.add("deregistered", true, "a deregistered instance cannot report healthy=true");
        }
    }
}
