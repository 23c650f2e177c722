package io.csiorchestrator.claims.store;

import java.time.Instant;

/**
 * A volume created (or being created, or deleted) through the services (issue 14): the request, its phase
 * ({@code domain.ProvisionMachine.Phase}) and the plugin's answer. Secrets and mount flags only sealed. A row of
 * {@code provisions}, read and written by {@link ProvisionRows}.
 */
public class ProvisionEntity {

    public String volumeKey;
    public String namespace;
    public String volumeId;
    public String csiName;
    public String pluginId;
    public String phase;
    public int attempt;
    public String name;
    public String accessMode;
    public String attachmentMode;
    public String fsType;
    public int mountFlagCount;
    public String parametersJson;
    public String topologyJson;
    public String secretKeysJson;
    public String sealedJson;
    public String failover;
    public Long capacityMinBytes;
    public Long capacityMaxBytes;
    public String sourceSnapshotId;
    public String sourceVolumeId;
    public String externalId;
    public Long capacityBytes;
    public String contextJson;
    public String accessibleTopologyJson;
    /** Expansion (issue 14 item 3): the capacity asked for by the last expansion; null before any. */
    public Long expandToBytes;
    /** In NODE_EXPANDING: the nodes still to run NodeExpandVolume (JSON list), the first one's command outstanding or due. */
    public String expandNodesJson = "[]";
    /**
     * The capacity the plugin asked every node where the volume is published to expand to (its last
     * ControllerExpandVolume answered node_expansion_required); null when no node expansion is owed.
     */
    public Long nodeExpandBytes;
    /** Per node, the capacity its NodeExpandVolume reached (JSON object node id to bytes). */
    public String nodeSizesJson = "{}";
    /** In NODE_EXPANDING: the run was started by a claim that became ready on a node not expanded yet (resize on mount). */
    public boolean nodeExpandOnMount;
    /** The start of the last ListVolumes sweep that listed the volume (issue 14); null before any. */
    public Instant listedAt;
    /** When a complete ListVolumes sweep first did not list the volume; null while listed or never compared. */
    public Instant unlistedSince;
    public String commandId;
    public String commandNodeId;
    public Instant commandDeadline;
    public Instant retryAt;
    public String lastError;
    public Instant createdAt;
    public Instant updatedAt;

    @Override
    public String toString() {
        return "Provision[" + volumeKey + ", " + phase + "]";
    }
}
