package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.IdClass;
import jakarta.persistence.Table;
import java.io.Serializable;
import java.time.Instant;
import java.util.Objects;
import org.hibernate.annotations.Immutable;

/**
 * A plugin's node instance as {@link Plugins} keeps it (table {@code plugin_nodes}), mapped read-only for the outage
 * query of every claim step: an HQL query's plan is cached, a native one's is not (Hibernate 7.2 keys a native select's
 * plan by its result set mapping, a new one per execution: each run added an entry to one hash bin of the plan cache,
 * about 8 % of claim-service's CPU in the lookups). Written only by {@link Plugins#apply}'s native upserts.
 */
@Entity
@Immutable
@IdClass(PluginNodeEntity.Key.class)
@Table(name = "plugin_nodes")
public class PluginNodeEntity extends PanacheEntityBase {

    @Id
    @Column(name = "plugin_id")
    public String pluginId;
    @Id
    @Column(name = "node_id")
    public String nodeId;
    @Column(name = "unhealthy_since")
    public Instant unhealthySince;
    @Column(name = "last_healthy_at")
    public Instant lastHealthyAt;

    /** The primary key (plugin_id, node_id). */
    public static class Key implements Serializable {
        public String pluginId;
        public String nodeId;

        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && Objects.equals(pluginId, k.pluginId) && Objects.equals(nodeId, k.nodeId);
        }

        @Override
        public int hashCode() {
            return Objects.hash(pluginId, nodeId);
        }
    }
}
