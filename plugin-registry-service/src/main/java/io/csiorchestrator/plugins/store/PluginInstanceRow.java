package io.csiorchestrator.plugins.store;

import io.csiorchestrator.events.NodeInfo;
import io.csiorchestrator.events.PluginType;
import io.csiorchestrator.plugins.domain.PluginInstance;
import jakarta.persistence.Column;
import jakarta.persistence.Convert;
import jakarta.persistence.EmbeddedId;
import jakarta.persistence.Entity;
import jakarta.persistence.NamedQuery;
import jakarta.persistence.Table;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** Table {@code plugin_instance}: one instance of a plugin on one node. */
@Entity
@Table(name = "plugin_instance")
@NamedQuery(name = PluginInstanceRow.OF_PLUGIN,
        query = "from PluginInstanceRow where id.pluginId = :pluginId order by id.nodeId")
@NamedQuery(name = PluginInstanceRow.PLUGINS_DUE_FOR_SWEEP,
        query = "select distinct i.id.pluginId from PluginInstanceRow i"
                + " where (i.silenceReason is null and i.lastReceived < :silentBefore)"
                + " or i.lastReceived < :removedBefore"
                + " order by i.id.pluginId")
@NamedQuery(name = PluginInstanceRow.DELETE_NODES,
        query = "delete from PluginInstanceRow where id.pluginId = :pluginId and id.nodeId in :nodeIds")
public class PluginInstanceRow {

    static final String OF_PLUGIN = "PluginInstanceRow.ofPlugin";
    static final String PLUGINS_DUE_FOR_SWEEP = "PluginInstanceRow.pluginsDueForSweep";
    static final String DELETE_NODES = "PluginInstanceRow.deleteNodes";

    @EmbeddedId
    public InstanceKey id;

    /** Wire value of {@link PluginType}. */
    @Column(name = "type", nullable = false, length = 16)
    public String type;

    @Column(name = "provider_name")
    public String providerName;

    @Column(name = "provider_version")
    public String providerVersion;

    @Convert(converter = JsonStringList.class)
    @Column(name = "plugin_capabilities", nullable = false)
    public List<String> pluginCapabilities;

    @Convert(converter = JsonStringList.class)
    @Column(name = "controller_capabilities", nullable = false)
    public List<String> controllerCapabilities;

    @Convert(converter = JsonStringList.class)
    @Column(name = "node_capabilities", nullable = false)
    public List<String> nodeCapabilities;

    /** Null when the instance has no node info (a controller, or a node not fingerprinted yet). */
    @Column(name = "external_node_id", length = 1024)
    public String externalNodeId;

    @Column(name = "max_volumes")
    public Long maxVolumes;

    @Convert(converter = JsonStringMap.class)
    @Column(name = "accessible_topology", nullable = false)
    public Map<String, String> accessibleTopology;

    @Column(name = "reported_healthy", nullable = false)
    public boolean reportedHealthy;

    @Column(name = "reported_health_description", length = 4096)
    public String reportedHealthDescription;

    @Column(name = "silence_reason", length = 1024)
    public String silenceReason;

    @Column(name = "last_heartbeat", nullable = false)
    public Instant lastHeartbeat;

    @Column(name = "last_received", nullable = false)
    public Instant lastReceived;

    public static PluginInstanceRow of(PluginInstance instance) {
        PluginInstanceRow row = new PluginInstanceRow();
        row.id = new InstanceKey(instance.pluginId(), instance.nodeId());
        row.take(instance);
        return row;
    }

    /** Overwrites every column but the key with {@code instance}. */
    public void take(PluginInstance instance) {
        type = instance.type().wire();
        providerName = instance.providerName();
        providerVersion = instance.providerVersion();
        pluginCapabilities = instance.pluginCapabilities();
        controllerCapabilities = instance.controllerCapabilities();
        nodeCapabilities = instance.nodeCapabilities();
        NodeInfo info = instance.nodeInfo();
        externalNodeId = info == null ? null : info.externalNodeId();
        maxVolumes = info == null ? null : info.maxVolumes();
        accessibleTopology = info == null ? Map.of() : info.accessibleTopology();
        reportedHealthy = instance.reportedHealthy();
        reportedHealthDescription = instance.reportedHealthDescription();
        silenceReason = instance.silenceReason();
        lastHeartbeat = instance.lastHeartbeat();
        lastReceived = instance.lastReceived();
    }

    public PluginInstance toInstance() {
        NodeInfo info = externalNodeId == null ? null : new NodeInfo(externalNodeId, maxVolumes, accessibleTopology);
        return new PluginInstance(id.pluginId, id.nodeId, PluginType.fromWire(type), providerName, providerVersion,
                pluginCapabilities, controllerCapabilities, nodeCapabilities, info, reportedHealthy,
                reportedHealthDescription, silenceReason, lastHeartbeat, lastReceived);
    }
}
