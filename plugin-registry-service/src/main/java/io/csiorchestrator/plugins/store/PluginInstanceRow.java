package io.csiorchestrator.plugins.store;

import io.csiorchestrator.events.NodeInfo;
import io.csiorchestrator.events.PluginType;
import io.csiorchestrator.plugins.domain.PluginInstance;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;

/** A row of table {@code plugin_instance}: one instance of a plugin on one node. */
public class PluginInstanceRow {

    /** The columns, in the order {@link #from} reads and {@link #tuple} writes them. */
    static final String COLUMNS = "plugin_id, node_id, type, provider_name, provider_version, plugin_capabilities,"
            + " controller_capabilities, node_capabilities, external_node_id, max_volumes, accessible_topology,"
            + " reported_healthy, reported_health_description, silence_reason, last_heartbeat, last_received";

    public String pluginId;
    public String nodeId;
    /** Wire value of {@link PluginType}. */
    public String type;
    public String providerName;
    public String providerVersion;
    public List<String> pluginCapabilities;
    public List<String> controllerCapabilities;
    public List<String> nodeCapabilities;
    /** Null when the instance has no node info (a controller, or a node not fingerprinted yet). */
    public String externalNodeId;
    public Long maxVolumes;
    public Map<String, String> accessibleTopology;
    public boolean reportedHealthy;
    public String reportedHealthDescription;
    public String silenceReason;
    public Instant lastHeartbeat;
    public Instant lastReceived;

    public static PluginInstanceRow of(PluginInstance instance) {
        PluginInstanceRow row = new PluginInstanceRow();
        row.pluginId = instance.pluginId();
        row.nodeId = instance.nodeId();
        row.take(instance);
        return row;
    }

    static PluginInstanceRow from(Row row) {
        PluginInstanceRow instance = new PluginInstanceRow();
        instance.pluginId = row.getString(0);
        instance.nodeId = row.getString(1);
        instance.type = row.getString(2);
        instance.providerName = row.getString(3);
        instance.providerVersion = row.getString(4);
        instance.pluginCapabilities = JsonColumns.list("plugin_capabilities", row.getString(5));
        instance.controllerCapabilities = JsonColumns.list("controller_capabilities", row.getString(6));
        instance.nodeCapabilities = JsonColumns.list("node_capabilities", row.getString(7));
        instance.externalNodeId = row.getString(8);
        instance.maxVolumes = row.getLong(9);
        instance.accessibleTopology = JsonColumns.map("accessible_topology", row.getString(10));
        instance.reportedHealthy = row.getBoolean(11);
        instance.reportedHealthDescription = row.getString(12);
        instance.silenceReason = row.getString(13);
        instance.lastHeartbeat = row.getOffsetDateTime(14).toInstant();
        instance.lastReceived = row.getOffsetDateTime(15).toInstant();
        return instance;
    }

    /** Every column, in {@link #COLUMNS}' order. */
    Tuple tuple() {
        return Tuple.tuple().addString(pluginId).addString(nodeId).addString(type).addString(providerName).addString(providerVersion)
                .addString(JsonColumns.ofList(pluginCapabilities)).addString(JsonColumns.ofList(controllerCapabilities))
                .addString(JsonColumns.ofList(nodeCapabilities)).addString(externalNodeId).addLong(maxVolumes)
                .addString(JsonColumns.ofMap(accessibleTopology)).addBoolean(reportedHealthy)
                .addString(reportedHealthDescription).addString(silenceReason)
                .addOffsetDateTime(OffsetDateTime.ofInstant(lastHeartbeat, ZoneOffset.UTC))
                .addOffsetDateTime(OffsetDateTime.ofInstant(lastReceived, ZoneOffset.UTC));
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
        return new PluginInstance(pluginId, nodeId, PluginType.fromWire(type), providerName, providerVersion,
                pluginCapabilities, controllerCapabilities, nodeCapabilities, info, reportedHealthy,
                reportedHealthDescription, silenceReason, lastHeartbeat, lastReceived);
    }
}
