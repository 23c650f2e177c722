package io.csiorchestrator.plugins.domain;

import io.csiorchestrator.events.NodeInfo;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginType;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Objects;

/**
 * One instance of a CSI plugin on one node, as the registry keeps it: what the node's worker last
 * reported, when, and whether the registry has since declared it silent.
 *
 * @param reportedHealthy           the health the worker reported
 * @param reportedHealthDescription the worker's explanation, may be null
 * @param silenceReason             set by the registry when no heartbeat arrived within the TTL;
 *                                  null while the instance is heard from
 * @param lastHeartbeat             observedAt of the newest accepted report (the worker's clock)
 * @param lastReceived              when the registry received that report (the registry's clock);
 *                                  silence is measured from here, so workers' clock skew does not
 *                                  expire or revive instances
 */
public record PluginInstance(
        String pluginId,
        String nodeId,
        PluginType type,
        String providerName,
        String providerVersion,
        List<String> pluginCapabilities,
        List<String> controllerCapabilities,
        List<String> nodeCapabilities,
        NodeInfo nodeInfo,
        boolean reportedHealthy,
        String reportedHealthDescription,
        String silenceReason,
        Instant lastHeartbeat,
        Instant lastReceived) {

    public PluginInstance {
        Objects.requireNonNull(pluginId, "pluginId");
        Objects.requireNonNull(nodeId, "nodeId");
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(lastHeartbeat, "lastHeartbeat");
        Objects.requireNonNull(lastReceived, "lastReceived");
        pluginCapabilities = pluginCapabilities == null ? List.of() : List.copyOf(pluginCapabilities);
        controllerCapabilities = controllerCapabilities == null ? List.of() : List.copyOf(controllerCapabilities);
        nodeCapabilities = nodeCapabilities == null ? List.of() : List.copyOf(nodeCapabilities);
        lastHeartbeat = toStoredPrecision(lastHeartbeat);
        lastReceived = toStoredPrecision(lastReceived);
    }

    /** The instance a health report describes, received at {@code receivedAt}. */
    public static PluginInstance reportedBy(PluginHealth health, Instant receivedAt) {
        return new PluginInstance(health.pluginId(), health.nodeId(), health.type(), health.providerName(),
                health.providerVersion(), health.pluginCapabilities(), health.controllerCapabilities(),
                health.nodeCapabilities(), health.nodeInfo(), health.reportsHealthy(), health.healthDescription(),
                null, health.observedAt(), receivedAt);
    }

    /**
     * Timestamps are kept to the microsecond, the precision PostgreSQL stores, so an event compared
     * with its own stored copy is recognised as the same observation.
     */
    public static Instant toStoredPrecision(Instant instant) {
        return instant == null ? null : instant.truncatedTo(ChronoUnit.MICROS);
    }

    /** Healthy as reported and not silent. */
    public boolean healthy() {
        return reportedHealthy && silenceReason == null;
    }

    /** The registry's reason when silent, otherwise the worker's description. */
    public String healthDescription() {
        return silenceReason != null ? silenceReason : reportedHealthDescription;
    }

    public boolean silent() {
        return silenceReason != null;
    }

    /** Runs a controller service: a controller or a monolith. */
    public boolean isController() {
        return type == PluginType.CONTROLLER || type == PluginType.MONOLITH;
    }

    /** Runs a node service: a node or a monolith. */
    public boolean isNode() {
        return type == PluginType.NODE || type == PluginType.MONOLITH;
    }

    /** Whether this controller advertises PUBLISH_UNPUBLISH_VOLUME. */
    public boolean requiresControllerPublish() {
        return isController() && controllerCapabilities.contains(PluginHealth.PUBLISH_UNPUBLISH_VOLUME);
    }

    /** Everything the worker reported, apart from when: the same state, a plain heartbeat. */
    public boolean sameReportAs(PluginInstance other) {
        return type == other.type
                && Objects.equals(providerName, other.providerName)
                && Objects.equals(providerVersion, other.providerVersion)
                && pluginCapabilities.equals(other.pluginCapabilities)
                && controllerCapabilities.equals(other.controllerCapabilities)
                && nodeCapabilities.equals(other.nodeCapabilities)
                && Objects.equals(nodeInfo, other.nodeInfo)
                && reportedHealthy == other.reportedHealthy
                && Objects.equals(reportedHealthDescription, other.reportedHealthDescription);
    }

    public PluginInstance silencedBecause(String reason) {
        return new PluginInstance(pluginId, nodeId, type, providerName, providerVersion, pluginCapabilities,
                controllerCapabilities, nodeCapabilities, nodeInfo, reportedHealthy, reportedHealthDescription,
                Objects.requireNonNull(reason, "reason"), lastHeartbeat, lastReceived);
    }
}
