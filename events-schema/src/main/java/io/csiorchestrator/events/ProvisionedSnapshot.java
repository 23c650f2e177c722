package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * What a successful {@code create-snapshot} command got from the plugin (CSI CreateSnapshotResponse's snapshot, once
 * {@code ready_to_use}).
 *
 * @param externalSnapshotId the plugin's snapshot id
 * @param sourceVolumeId     the plugin's id of the volume it was cut from
 * @param sizeBytes          the snapshot's size; 0 = unknown
 * @param readyToUse         whether a volume can be restored from it now (the worker answers once it is)
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record ProvisionedSnapshot(
        String externalSnapshotId,
        String sourceVolumeId,
        Long sizeBytes,
        Boolean readyToUse) {

    void checkFields(String prefix, Violations v) {
        v.text(prefix + "externalSnapshotId", externalSnapshotId, 1024);
        v.text(prefix + "sourceVolumeId", sourceVolumeId, 1024);
        if (sizeBytes != null && sizeBytes < 0) {
            v.add(prefix + "sizeBytes", sizeBytes, "must not be negative");
        }
    }
}
