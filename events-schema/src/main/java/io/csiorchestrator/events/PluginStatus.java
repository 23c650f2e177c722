package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * The aggregate view of one CSI plugin across all nodes, recomputed from its instances on every
 * change. Topic {@code plugin-status}, compacted, key: plugin id; a plugin that is removed gets a
 * tombstone (a record with a null value).
 *
 * @param controllerRequired whether claims need a controller publish (a controller advertises
 *                           PUBLISH_UNPUBLISH_VOLUME)
 * @param controllers        every controller instance, healthy or not
 * @param nodes              every node instance, healthy or not
 * @param controllerExpansion whether a controller instance advertises the EXPAND_VOLUME controller capability
 *                           (ControllerExpandVolume; issue 14 item 3)
 * @param nodeExpansion      whether a node instance advertises the EXPAND_VOLUME node capability (NodeExpandVolume)
 * @param volumeExpansion    when the plugin expands volumes (CSI PluginCapability.VolumeExpansion): {@code offline} when
 *                           an instance advertises OFFLINE (only volumes published nowhere), else {@code online} when one
 *                           advertises ONLINE; null when none advertises either (or the registry predates the field)
 * @param listVolumes        whether a controller instance advertises the LIST_VOLUMES controller capability (CSI
 *                           ListVolumes: claim-service's reconciliation of the volumes it created, issue 14)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PluginStatus(
        String pluginId,
        String providerName,
        String providerVersion,
        Boolean controllerRequired,
        Integer controllersHealthy,
        Integer controllersExpected,
        Integer nodesHealthy,
        Integer nodesExpected,
        List<ControllerInstance> controllers,
        List<NodeInstance> nodes,
        Instant updatedAt,
        Boolean controllerExpansion,
        Boolean nodeExpansion,
        VolumeExpansionMode volumeExpansion,
        Boolean listVolumes) implements ContractEvent {

    public PluginStatus {
        controllerRequired = controllerRequired != null && controllerRequired;
        controllerExpansion = controllerExpansion != null && controllerExpansion;
        nodeExpansion = nodeExpansion != null && nodeExpansion;
        listVolumes = listVolumes != null && listVolumes;
        controllers = Copies.list(controllers);
        nodes = Copies.list(nodes);
    }

    /** A status without LIST_VOLUMES. */
    public PluginStatus(String pluginId, String providerName, String providerVersion, Boolean controllerRequired,
                        Integer controllersHealthy, Integer controllersExpected, Integer nodesHealthy,
                        Integer nodesExpected, List<ControllerInstance> controllers, List<NodeInstance> nodes,
                        Instant updatedAt, Boolean controllerExpansion, Boolean nodeExpansion,
                        VolumeExpansionMode volumeExpansion) {
        this(pluginId, providerName, providerVersion, controllerRequired, controllersHealthy, controllersExpected,
                nodesHealthy, nodesExpected, controllers, nodes, updatedAt, controllerExpansion, nodeExpansion,
                volumeExpansion, false);
    }

    /** A status without the VolumeExpansion plugin capability. */
    public PluginStatus(String pluginId, String providerName, String providerVersion, Boolean controllerRequired,
                        Integer controllersHealthy, Integer controllersExpected, Integer nodesHealthy,
                        Integer nodesExpected, List<ControllerInstance> controllers, List<NodeInstance> nodes,
                        Instant updatedAt, Boolean controllerExpansion, Boolean nodeExpansion) {
        this(pluginId, providerName, providerVersion, controllerRequired, controllersHealthy, controllersExpected,
                nodesHealthy, nodesExpected, controllers, nodes, updatedAt, controllerExpansion, nodeExpansion, null);
    }

    /** A status without the expansion capabilities (both false). */
    public PluginStatus(String pluginId, String providerName, String providerVersion, Boolean controllerRequired,
                        Integer controllersHealthy, Integer controllersExpected, Integer nodesHealthy,
                        Integer nodesExpected, List<ControllerInstance> controllers, List<NodeInstance> nodes,
                        Instant updatedAt) {
        this(pluginId, providerName, providerVersion, controllerRequired, controllersHealthy, controllersExpected,
                nodesHealthy, nodesExpected, controllers, nodes, updatedAt, false, false, null);
    }

    /** One controller instance of the plugin, on one node. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ControllerInstance(String nodeId, Boolean healthy, String healthDescription, Instant lastSeen) {
    }

    /** One node instance of the plugin: what a claim on that node needs to know. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record NodeInstance(String nodeId, String externalNodeId, Long maxVolumes,
                               Map<String, String> accessibleTopology, Boolean healthy,
                               String healthDescription, Instant lastSeen) {
        public NodeInstance {
            accessibleTopology = Copies.map(accessibleTopology);
        }
    }

    @Override
    public EventType eventType() {
        return EventType.PLUGIN_STATUS;
    }

    @Override
    public String recordKey() {
        return pluginId;
    }

    @Override
    public void checkFields(Violations v) {
        v.id("pluginId", pluginId);
        v.optionalText("providerName", providerName, 256);
        v.optionalText("providerVersion", providerVersion, 256);
        count("controllersHealthy", controllersHealthy, v);
        count("controllersExpected", controllersExpected, v);
        count("nodesHealthy", nodesHealthy, v);
        count("nodesExpected", nodesExpected, v);
        for (int i = 0; i < controllers.size(); i++) {
            ControllerInstance c = controllers.get(i);
            if (c == null) {
                v.add("controllers[" + i + "]", null, "must not be null");
            } else {
                v.id("controllers[" + i + "].nodeId", c.nodeId());
                v.required("controllers[" + i + "].healthy", c.healthy());
            }
        }
        for (int i = 0; i < nodes.size(); i++) {
            NodeInstance n = nodes.get(i);
            if (n == null) {
                v.add("nodes[" + i + "]", null, "must not be null");
            } else {
                v.id("nodes[" + i + "].nodeId", n.nodeId());
                v.required("nodes[" + i + "].healthy", n.healthy());
            }
        }
        v.required("updatedAt", updatedAt);
    }

    private static void count(String field, Integer value, Violations v) {
        if (value == null) {
            v.add(field, null, "is required");
        } else if (value < 0) {
            v.add(field, value, "must not be negative");
        }
    }
}
