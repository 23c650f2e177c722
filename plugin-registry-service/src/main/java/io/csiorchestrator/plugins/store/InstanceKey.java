package io.csiorchestrator.plugins.store;

import jakarta.persistence.Column;
import jakarta.persistence.Embeddable;
import java.io.Serializable;
import java.util.Objects;

/** Primary key of {@code plugin_instance}: plugin id and node id. */
@Embeddable
public class InstanceKey implements Serializable {

    @Column(name = "plugin_id", nullable = false, length = 128)
    public String pluginId;

    @Column(name = "node_id", nullable = false, length = 128)
    public String nodeId;

    public InstanceKey() {
    }

    public InstanceKey(String pluginId, String nodeId) {
        this.pluginId = pluginId;
        this.nodeId = nodeId;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof InstanceKey other && Objects.equals(pluginId, other.pluginId) && Objects.equals(nodeId, other.nodeId);
    }

    @Override
    public int hashCode() {
        return Objects.hash(pluginId, nodeId);
    }
}
