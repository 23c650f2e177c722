package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;

/**
 * One result of a create, delete or expansion through the services (issue 14), for schedulers: a volume created (with
 * the plugin's id and capacity), its create failed (reason), deleted, delete failed (reason); the same for a snapshot
 * ({@code snapshotId} set; created means ready to use); a volume expanded (the plugin's id and the new capacity: the
 * controller and every node where it was published are done) or its expansion failed (reason: the plugin's code and
 * message; {@code capacityBytes} the capacity the controller last reported, when known). Never an expansion of a
 * snapshot. Topic {@code volume-status}, key {@code namespace/volumeId}:
 * a snapshot's results are keyed by their source volume, so a volume's results and its snapshots' stay in order.
 * Written by claim-service through its outbox, in the transaction that records the result.
 *
 * @param volumeId      the volume; for a snapshot, its source volume
 * @param snapshotId    the snapshot, or null for a volume's result
 * @param externalId    the plugin's id of the volume (or snapshot); set for created and expanded
 * @param capacityBytes the created volume's capacity (or the snapshot's size), when the plugin reported one; for
 *                      expanded (required) the capacity the plugin reports now
 * @param reason        why; required for create-failed, delete-failed and expand-failed
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record VolumeStatus(
        String namespace,
        String volumeId,
        String snapshotId,
        String pluginId,
        VolumeState state,
        String externalId,
        Long capacityBytes,
        String reason,
        Instant occurredAt) implements ContractEvent {

    @Override
    public EventType eventType() {
        return EventType.VOLUME_STATUS;
    }

    @Override
    public String recordKey() {
        return namespace + "/" + volumeId;
    }

    @Override
    public void checkFields(Violations v) {
        v.id("namespace", namespace);
        v.id("volumeId", volumeId);
        v.optionalId("snapshotId", snapshotId);
        v.id("pluginId", pluginId);
        v.required("state", state);
        if (state != null && state.namesVolume()) {
            v.text("externalId", externalId, 1024);
        } else {
            v.optionalText("externalId", externalId, 1024);
        }
        if (capacityBytes != null && capacityBytes < 0) {
            v.add("capacityBytes", capacityBytes, "must not be negative");
        }
        if (state == VolumeState.EXPANDED) {
            v.required("capacityBytes", capacityBytes);
        }
        if (snapshotId != null && (state == VolumeState.EXPANDED || state == VolumeState.EXPAND_FAILED)) {
            v.add("snapshotId", snapshotId, "a snapshot is never expanded");
        }
        if (state != null && state.failed()) {
            v.text("reason", reason, 4096);
        } else {
            v.optionalText("reason", reason, 4096);
        }
        v.required("occurredAt", occurredAt);
    }
}
