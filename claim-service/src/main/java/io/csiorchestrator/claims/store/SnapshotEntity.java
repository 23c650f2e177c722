package io.csiorchestrator.claims.store;

import java.time.Instant;

/**
 * A snapshot created (or being created, or deleted) through the services (issue 14 item 2): the request, its phase
 * ({@code domain.ProvisionMachine.Phase}) and the plugin's answer. A row of {@code snapshots}, read and written by
 * {@link SnapshotRows}.
 */
public class SnapshotEntity {

    public String snapshotKey;
    public String namespace;
    public String snapshotId;
    public String csiName;
    public String pluginId;
    public String sourceVolumeKey;
    public String sourceExternalId;
    public String phase;
    public int attempt;
    public String parametersJson;
    /** The secrets' keys (JSON list), for display; the values only sealed. */
    public String secretKeysJson;
    /** CreateSnapshot's and DeleteSnapshot's secrets, sealed to {@code <namespace>/<source volume id>}; null: none. */
    public String sealedJson;
    public String externalId;
    public Long sizeBytes;
    public String commandId;
    public String commandNodeId;
    public Instant commandDeadline;
    public Instant retryAt;
    public String lastError;
    public Instant createdAt;
    public Instant updatedAt;

    @Override
    public String toString() {
        return "Snapshot[" + snapshotKey + ", " + phase + "]";
    }
}
