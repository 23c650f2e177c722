package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/**
 * A snapshot created (or being created, or deleted) through the services (issue 14 item 2): the request, its phase
 * ({@code domain.ProvisionMachine.Phase}) and the plugin's answer.
 */
@Entity
@Table(name = "snapshots")
public class SnapshotEntity extends PanacheEntityBase {

    @Id
    @Column(name = "snapshot_key")
    public String snapshotKey;
    public String namespace;
    @Column(name = "snapshot_id")
    public String snapshotId;
    @Column(name = "csi_name")
    public String csiName;
    @Column(name = "plugin_id")
    public String pluginId;
    @Column(name = "source_volume_key")
    public String sourceVolumeKey;
    @Column(name = "source_external_id")
    public String sourceExternalId;
    public String phase;
    public int attempt;
    @Column(name = "parameters_json")
    public String parametersJson;
    /** The secrets' keys (JSON list), for display; the values only sealed. */
    @Column(name = "secret_keys_json")
    public String secretKeysJson;
    /** CreateSnapshot's and DeleteSnapshot's secrets, sealed to {@code <namespace>/<source volume id>}; null: none. */
    @Column(name = "sealed_json")
    public String sealedJson;
    @Column(name = "external_id")
    public String externalId;
    @Column(name = "size_bytes")
    public Long sizeBytes;
    @Column(name = "command_id")
    public String commandId;
    @Column(name = "command_node_id")
    public String commandNodeId;
    @Column(name = "command_deadline")
    public Instant commandDeadline;
    @Column(name = "retry_at")
    public Instant retryAt;
    @Column(name = "last_error")
    public String lastError;
    @Column(name = "created_at")
    public Instant createdAt;
    @Column(name = "updated_at")
    public Instant updatedAt;

    @Override
    public String toString() {
        return "Snapshot[" + snapshotKey + ", " + phase + "]";
    }
}
