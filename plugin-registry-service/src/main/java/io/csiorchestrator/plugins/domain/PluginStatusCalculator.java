package io.csiorchestrator.plugins.domain;

import io.csiorchestrator.events.NodeInfo;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.VolumeExpansionMode;
import java.time.Instant;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The aggregate status of one plugin, computed from scratch from its instances every time: the counts
 * are never kept as increments and decrements, so they cannot drift.
 *
 * <ul>
 *   <li>A controller or monolith instance counts as an expected controller, a node or monolith instance
 *       as an expected node (a monolith counts as both); healthy counts are those of them that are
 *       healthy (reported healthy and not silent).</li>
 *   <li>A controller publish is required when some controller instance advertises
 *       PUBLISH_UNPUBLISH_VOLUME.</li>
 *   <li>The plugin expands volumes when some controller instance advertises EXPAND_VOLUME; its nodes expand them
 *       when some node instance advertises EXPAND_VOLUME (issue 14 item 3). It expands offline only when some
 *       instance advertises the VolumeExpansion type OFFLINE (the stricter answer wins while instances disagree,
 *       e.g. during a rolling upgrade), online when some advertises ONLINE and none OFFLINE; else the status says
 *       nothing about it.</li>
 *   <li>It lists volumes when some controller instance advertises LIST_VOLUMES.</li>
 *   <li>The plugin's provider name and version are those most of its instances report (ties: the
 *       greatest), so a heartbeat never flips them during a rolling upgrade.</li>
 *   <li>Instances are listed by node id.</li>
 * </ul>
 */
public final class PluginStatusCalculator {

    /** The controller and node RPC capability of volume expansion (the same name in both enums of csi.proto). */
    static final String EXPAND_VOLUME = "EXPAND_VOLUME";
    /** The controller RPC capability of ListVolumes (issue 14: claim-service's reconciliation). */
    static final String LIST_VOLUMES = "LIST_VOLUMES";

    private PluginStatusCalculator() {
    }

    public static PluginStatus calculate(String pluginId, Collection<PluginInstance> instances, Instant updatedAt) {
        List<PluginInstance> sorted = instances.stream()
                .peek(i -> {
                    if (!i.pluginId().equals(pluginId)) {
                        throw new IllegalArgumentException("instance of plugin " + i.pluginId() + " is not of " + pluginId);
                    }
                })
                .sorted(Comparator.comparing(PluginInstance::nodeId))
                .toList();
        List<PluginInstance> controllers = sorted.stream().filter(PluginInstance::isController).toList();
        List<PluginInstance> nodes = sorted.stream().filter(PluginInstance::isNode).toList();
        return new PluginStatus(
                pluginId,
                mostCommon(sorted, PluginInstance::providerName),
                mostCommon(sorted, PluginInstance::providerVersion),
                controllers.stream().anyMatch(PluginInstance::requiresControllerPublish),
                (int) controllers.stream().filter(PluginInstance::healthy).count(),
                controllers.size(),
                (int) nodes.stream().filter(PluginInstance::healthy).count(),
                nodes.size(),
                controllers.stream().map(PluginStatusCalculator::controllerOf).toList(),
                nodes.stream().map(PluginStatusCalculator::nodeOf).toList(),
                updatedAt,
                controllers.stream().anyMatch(i -> i.controllerCapabilities().contains(EXPAND_VOLUME)),
                nodes.stream().anyMatch(i -> i.nodeCapabilities().contains(EXPAND_VOLUME)),
                volumeExpansion(sorted),
                controllers.stream().anyMatch(i -> i.controllerCapabilities().contains(LIST_VOLUMES)));
    }

    /** OFFLINE when some instance advertises it, else ONLINE when some does, else null. */
    static VolumeExpansionMode volumeExpansion(List<PluginInstance> instances) {
        List<VolumeExpansionMode> modes = instances.stream()
                .map(i -> VolumeExpansionMode.fromCapabilities(i.pluginCapabilities())).filter(Objects::nonNull).toList();
        return modes.contains(VolumeExpansionMode.OFFLINE) ? VolumeExpansionMode.OFFLINE
                : modes.contains(VolumeExpansionMode.ONLINE) ? VolumeExpansionMode.ONLINE : null;
    }

    /**
     * Whether two statuses say the same thing, apart from when instances were last seen and when the
     * status was updated: a plain heartbeat changes nothing else and is not published.
     */
    public static boolean sameStatus(PluginStatus a, PluginStatus b) {
        return withoutTimes(a).equals(withoutTimes(b));
    }

    private static PluginStatus withoutTimes(PluginStatus s) {
        return new PluginStatus(s.pluginId(), s.providerName(), s.providerVersion(), s.controllerRequired(),
                s.controllersHealthy(), s.controllersExpected(), s.nodesHealthy(), s.nodesExpected(),
                s.controllers().stream()
                        .map(c -> new PluginStatus.ControllerInstance(c.nodeId(), c.healthy(), c.healthDescription(), null))
                        .toList(),
                s.nodes().stream()
                        .map(n -> new PluginStatus.NodeInstance(n.nodeId(), n.externalNodeId(), n.maxVolumes(),
                                n.accessibleTopology(), n.healthy(), n.healthDescription(), null))
                        .toList(),
                null, s.controllerExpansion(), s.nodeExpansion(), s.volumeExpansion(), s.listVolumes());
    }

    private static PluginStatus.ControllerInstance controllerOf(PluginInstance i) {
        return new PluginStatus.ControllerInstance(i.nodeId(), i.healthy(), i.healthDescription(), i.lastHeartbeat());
    }

    private static PluginStatus.NodeInstance nodeOf(PluginInstance i) {
        NodeInfo info = i.nodeInfo();
        return new PluginStatus.NodeInstance(i.nodeId(),
                info == null ? null : info.externalNodeId(),
                info == null ? null : info.maxVolumes(),
                info == null ? Map.of() : info.accessibleTopology(),
                i.healthy(), i.healthDescription(), i.lastHeartbeat());
    }

    private static String mostCommon(List<PluginInstance> instances, Function<PluginInstance, String> field) {
        Map<String, Long> counts = instances.stream().map(field).filter(Objects::nonNull)
                .collect(Collectors.groupingBy(Function.identity(), Collectors.counting()));
        return counts.entrySet().stream()
                .max(Map.Entry.<String, Long>comparingByValue().thenComparing(Map.Entry.comparingByKey()))
                .map(Map.Entry::getKey)
                .orElse(null);
    }
}
