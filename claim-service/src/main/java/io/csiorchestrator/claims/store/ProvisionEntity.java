package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/**
 * A volume created (or being created, or deleted) through the services (issue 14): the request, its phase
 * ({@code domain.ProvisionMachine.Phase}) and the plugin's answer. Secrets and mount flags only sealed.
 */
@Entity
@Table(name = "provisions")
public class ProvisionEntity extends PanacheEntityBase {

    @Id
    @Column(name = "volume_key")
    public String volumeKey;
    public String namespace;
    @Column(name = "volume_id")
    public String volumeId;
    @Column(name = "csi_name")
    public String csiName;
    @Column(name = "plugin_id")
    public String pluginId;
    public String phase;
    public int attempt;
    public String name;
    @Column(name = "access_mode")
    public String accessMode;
    @Column(name = "attachment_mode")
    public String attachmentMode;
    @Column(name = "fs_type")
    public String fsType;
    @Column(name = "mount_flag_count")
    public int mountFlagCount;
    @Column(name = "parameters_json")
    public String parametersJson;
    @Column(name = "topology_json")
    public String topologyJson;
    @Column(name = "secret_keys_json")
    public String secretKeysJson;
    @Column(name = "sealed_json")
    public String sealedJson;
    public String failover;
    @Column(name = "capacity_min_bytes")
    public Long capacityMinBytes;
    @Column(name = "capacity_max_bytes")
    public Long capacityMaxBytes;
    @Column(name = "source_snapshot_id")
    public String sourceSnapshotId;
    @Column(name = "source_volume_id")
    public String sourceVolumeId;
    @Column(name = "external_id")
    public String externalId;
    @Column(name = "capacity_bytes")
    public Long capacityBytes;
    @Column(name = "context_json")
    public String contextJson;
    @Column(name = "accessible_topology_json")
    public String accessibleTopologyJson;
    /** Expansion (issue 14 item 3): the capacity asked for by the last expansion; null before any. */
    @Column(name = "expand_to_bytes")
    public Long expandToBytes;
    /** In NODE_EXPANDING: the nodes still to run NodeExpandVolume (JSON list), the first one's command outstanding or due. */
    @Column(name = "expand_nodes_json")
    public String expandNodesJson = "[]";
    /**
     * The capacity the plugin asked every node where the volume is published to expand to (its last
     * ControllerExpandVolume answered node_expansion_required); null when no node expansion is owed.
     */
    @Column(name = "node_expand_bytes")
    public Long nodeExpandBytes;
    /** Per node, the capacity its NodeExpandVolume reached (JSON object node id to bytes). */
    @Column(name = "node_sizes_json")
    public String nodeSizesJson = "{}";
    /** In NODE_EXPANDING: the run was started by a claim that became ready on a node not expanded yet (resize on mount). */
    @Column(name = "node_expand_on_mount")
    public boolean nodeExpandOnMount;
    /** The start of the last ListVolumes sweep that listed the volume (issue 14); null before any. */
    @Column(name = "listed_at")
    public Instant listedAt;
    /** When a complete ListVolumes sweep first did not list the volume; null while listed or never compared. */
    @Column(name = "unlisted_since")
    public Instant unlistedSince;
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
        return "Provision[" + volumeKey + ", " + phase + "]";
    }
}
