package io.csiorchestrator.worker.plugin;

import io.csiorchestrator.csi.PluginFingerprint;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.NodeInfo;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginType;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * What a node says about one of its plugin instances, built from the plugin's fingerprint: the
 * {@code plugin-health} report (a transition or a heartbeat) and the node event of a health
 * transition. Pure; used by {@link PluginSupervisor} and by the node simulator.
 */
public final class PluginHealthReports {

    private PluginHealthReports() {
    }

    /** The plugin's type as its fingerprint shows it: controller and node service make a monolith. */
    public static PluginType deriveType(PluginFingerprint fp) {
        if (fp == null) {
            return PluginType.NODE;
        }
        boolean controller = fp.hasControllerService();
        boolean node = fp.node().isPresent();
        if (controller && node) {
            return PluginType.MONOLITH;
        }
        return controller ? PluginType.CONTROLLER : PluginType.NODE;
    }

    /**
     * The {@code plugin-health} report of {@code pluginId} on {@code nodeId}; {@code fp} null before the
     * first fingerprint (no provider, capabilities or node info then).
     */
    public static PluginHealth health(String pluginId, String nodeId, PluginType type, boolean healthy,
                                      String description, PluginFingerprint fp, boolean heartbeat, Instant at) {
        NodeInfo nodeInfo = fp == null ? null : fp.node()
                .filter(n -> n.nodeId() != null && !n.nodeId().isEmpty())
                .map(n -> new NodeInfo(n.nodeId(), n.maxVolumesPerNode(), n.topology())).orElse(null);
        return new PluginHealth(pluginId, nodeId, type, healthy, truncate(description),
                fp == null ? null : emptyToNull(fp.name()), fp == null ? null : emptyToNull(fp.vendorVersion()),
                fp == null ? List.of() : pluginCapabilities(fp),
                fp == null ? List.of() : fp.controllerCapabilities().stream().map(Enum::name).sorted().toList(),
                fp == null ? List.of() : fp.node().map(n -> n.capabilities().stream().map(Enum::name).sorted().toList())
                        .orElse(List.of()),
                nodeInfo, heartbeat, at);
    }

    /**
     * The plugin capabilities as plugin-health names them: the service types, and the VolumeExpansion type as
     * {@code VOLUME_EXPANSION_ONLINE} / {@code VOLUME_EXPANSION_OFFLINE} (issue 14), sorted.
     */
    static List<String> pluginCapabilities(PluginFingerprint fp) {
        java.util.stream.Stream<String> services = fp.pluginCapabilities().stream().map(Enum::name);
        io.csiorchestrator.events.VolumeExpansionMode mode = switch (fp.volumeExpansion()) {
            case ONLINE -> io.csiorchestrator.events.VolumeExpansionMode.ONLINE;
            case OFFLINE -> io.csiorchestrator.events.VolumeExpansionMode.OFFLINE;
            default -> null;
        };
        return java.util.stream.Stream.concat(services, mode == null ? java.util.stream.Stream.of()
                : java.util.stream.Stream.of(mode.capability())).sorted().toList();
    }

    /** The node event of a health transition of {@code pluginId}, served at {@code socket}. */
    public static NodeEvent transition(String pluginId, String nodeId, boolean healthy, String why, String socket,
                                       Instant at) {
        return new NodeEvent(nodeId, null, NodeEventKind.PLUGIN_HEALTH,
                "Plugin " + pluginId + " is " + (healthy ? "healthy" : "unhealthy"), pluginId, null, null, null,
                healthy, healthy ? null : why, Map.of("socket", socket), at);
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    private static String truncate(String s) {
        return s == null || s.length() <= 4000 ? s : s.substring(0, 4000);
    }
}
