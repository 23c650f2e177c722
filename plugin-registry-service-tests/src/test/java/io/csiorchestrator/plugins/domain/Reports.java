package io.csiorchestrator.plugins.domain;

import io.csiorchestrator.events.NodeInfo;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginType;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/** Health reports for the unit tests. */
final class Reports {

    static final Instant T0 = Instant.parse("2026-01-01T10:00:00Z");

    private Reports() {
    }

    static PluginHealth controller(String plugin, String node, boolean healthy, Instant at, String... controllerCaps) {
        return new PluginHealth(plugin, node, PluginType.CONTROLLER, healthy, healthy ? "ok" : "probe failed",
                "hostpath.csi.example", "1.2.0", List.of("CONTROLLER_SERVICE"), List.of(controllerCaps), List.of(),
                null, false, at);
    }

    static PluginHealth node(String plugin, String node, boolean healthy, Instant at) {
        return new PluginHealth(plugin, node, PluginType.NODE, healthy, healthy ? "ok" : "probe failed",
                "hostpath.csi.example", "1.2.0", List.of(), List.of(), List.of("STAGE_UNSTAGE_VOLUME"),
                new NodeInfo("ext-" + node, 16L, Map.of("zone", "z1")), false, at);
    }

    static PluginHealth monolith(String plugin, String node, boolean healthy, Instant at, String... controllerCaps) {
        return new PluginHealth(plugin, node, PluginType.MONOLITH, healthy, healthy ? "ok" : "probe failed",
                "hostpath.csi.example", "1.2.0", List.of("CONTROLLER_SERVICE"), List.of(controllerCaps),
                List.of("STAGE_UNSTAGE_VOLUME"), new NodeInfo("ext-" + node, 0L, Map.of("zone", "z2")), true, at);
    }

    static PluginInstance instance(PluginHealth report, Instant receivedAt) {
        return PluginInstance.reportedBy(report, receivedAt);
    }
}
