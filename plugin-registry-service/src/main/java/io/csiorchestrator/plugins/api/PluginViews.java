package io.csiorchestrator.plugins.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.csiorchestrator.plugins.domain.PluginInstance;
import io.csiorchestrator.plugins.store.PluginRow;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.media.Schema;

/** The JSON shapes of the REST API. */
public final class PluginViews {

    private PluginViews() {
    }

    @Schema(description = "A CSI plugin and its health counts, recomputed from its instances")
    public record PluginSummary(
            String id,
            String providerName,
            String providerVersion,
            @Schema(description = "whether claims need a controller publish (a controller advertises PUBLISH_UNPUBLISH_VOLUME)")
            boolean controllerRequired,
            int controllersHealthy,
            int controllersExpected,
            int nodesHealthy,
            int nodesExpected,
            Instant updatedAt) {

        static PluginSummary of(PluginRow row) {
            return new PluginSummary(row.id, row.providerName, row.providerVersion, row.controllerRequired,
                    row.controllersHealthy, row.controllersExpected, row.nodesHealthy, row.nodesExpected, row.updatedAt);
        }
    }

    @Schema(description = "A CSI plugin with every instance on every node")
    public record PluginDetail(
            String id,
            String providerName,
            String providerVersion,
            boolean controllerRequired,
            int controllersHealthy,
            int controllersExpected,
            int nodesHealthy,
            int nodesExpected,
            Instant updatedAt,
            List<Instance> instances) {

        static PluginDetail of(PluginRow row, List<PluginInstance> instances) {
            return new PluginDetail(row.id, row.providerName, row.providerVersion, row.controllerRequired,
                    row.controllersHealthy, row.controllersExpected, row.nodesHealthy, row.nodesExpected, row.updatedAt,
                    instances.stream().map(Instance::of).toList());
        }
    }

    @Schema(description = "One instance of a plugin on one node")
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Instance(
            String nodeId,
            @Schema(description = "controller, node or monolith") String type,
            boolean controller,
            boolean node,
            @Schema(description = "reported healthy and heard from within the TTL") boolean healthy,
            String healthDescription,
            boolean reportedHealthy,
            @Schema(description = "set when no heartbeat arrived within the TTL") String silenceReason,
            String providerName,
            String providerVersion,
            List<String> pluginCapabilities,
            List<String> controllerCapabilities,
            List<String> nodeCapabilities,
            NodeInfo nodeInfo,
            @Schema(description = "observedAt of the newest report (the worker's clock)") Instant lastHeartbeat,
            @Schema(description = "when the registry received it (the registry's clock)") Instant lastReceived) {

        static Instance of(PluginInstance i) {
            return new Instance(i.nodeId(), i.type().wire(), i.isController(), i.isNode(), i.healthy(),
                    i.healthDescription(), i.reportedHealthy(), i.silenceReason(), i.providerName(),
                    i.providerVersion(), i.pluginCapabilities(), i.controllerCapabilities(), i.nodeCapabilities(),
                    i.nodeInfo() == null ? null : new NodeInfo(i.nodeInfo().externalNodeId(),
                            i.nodeInfo().maxVolumes(), i.nodeInfo().accessibleTopology()),
                    i.lastHeartbeat(), i.lastReceived());
        }
    }

    @Schema(description = "What NodeGetInfo said of a node instance")
    public record NodeInfo(String externalNodeId,
                           @Schema(description = "0 means no limit") long maxVolumes,
                           Map<String, String> accessibleTopology) {
    }

    @Schema(description = "An error; for a bad request, every problem")
    @JsonInclude(JsonInclude.Include.NON_EMPTY)
    public record ApiError(String error, List<Problem> problems) {
    }

    @Schema(description = "One problem with one input")
    public record Problem(String field, String value, String reason) {
    }
}
