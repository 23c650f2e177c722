package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/** The last usage a node's worker reported for a volume published there (node-events volume-usage, issue 34). */
@Entity
@Table(name = "volume_usage")
public class VolumeUsageEntity extends PanacheEntityBase {

    @Id
    @Column(name = "usage_key")
    public String usageKey;
    @Column(name = "volume_key")
    public String volumeKey;
    @Column(name = "node_id")
    public String nodeId;
    @Column(name = "plugin_id")
    public String pluginId;
    @Column(name = "bytes_total")
    public Long bytesTotal;
    @Column(name = "bytes_available")
    public Long bytesAvailable;
    @Column(name = "bytes_used")
    public Long bytesUsed;
    @Column(name = "inodes_total")
    public Long inodesTotal;
    @Column(name = "inodes_free")
    public Long inodesFree;
    @Column(name = "inodes_used")
    public Long inodesUsed;
    @Column(name = "observed_at")
    public Instant observedAt;

    public static String key(String volumeKey, String nodeId) {
        return volumeKey + "@" + nodeId;
    }
}
