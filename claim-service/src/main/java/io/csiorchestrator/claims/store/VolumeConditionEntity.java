package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/** The last CSI volume condition a node's worker reported for a volume published there (node-events). */
@Entity
@Table(name = "volume_conditions")
public class VolumeConditionEntity extends PanacheEntityBase {

    @Id
    @Column(name = "condition_key")
    public String conditionKey;
    @Column(name = "volume_key")
    public String volumeKey;
    @Column(name = "node_id")
    public String nodeId;
    @Column(name = "plugin_id")
    public String pluginId;
    public boolean abnormal;
    public String message;
    public Instant since;

    public static String key(String volumeKey, String nodeId) {
        return volumeKey + "@" + nodeId;
    }
}
