package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.Map;

/**
 * What NodeGetInfo said of a node plugin instance.
 *
 * @param externalNodeId     the node's id in the storage provider
 * @param maxVolumes         the most volumes the node may have published; 0 means no limit
 * @param accessibleTopology the topology segments the node is in
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record NodeInfo(String externalNodeId, Long maxVolumes, Map<String, String> accessibleTopology) {

    public NodeInfo {
        maxVolumes = maxVolumes == null ? 0L : maxVolumes;
        accessibleTopology = Copies.map(accessibleTopology);
    }

    void checkFields(String field, Violations v) {
        v.text(field + ".externalNodeId", externalNodeId, 1024);
        if (maxVolumes < 0) {
            v.add(field + ".maxVolumes", maxVolumes, "must not be negative");
        }
        v.stringMap(field + ".accessibleTopology", accessibleTopology, 64);
    }
}
