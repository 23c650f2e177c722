package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.Map;

/**
 * What a {@code create-volume} node command asks the plugin's controller for (CSI CreateVolume): the volume's
 * CSI name (the idempotency key: the same name again gives the same volume), its capacity range, the plugin's
 * parameters, the topology it must be accessible from, and an optional content source. The capability travels
 * in the command's {@code accessMode}/{@code attachmentMode}/{@code fsType}, the secrets only sealed.
 *
 * @param name             the CSI name; claim-service uses {@code <namespace>.<volume id>}
 * @param capacityMinBytes CSI required_bytes; null or 0 = the plugin's default
 * @param capacityMaxBytes CSI limit_bytes; null or 0 = no limit
 * @param parameters       the plugin's opaque create parameters
 * @param topology         one topology segment the volume must be accessible from (requisite and preferred); empty = any
 * @param sourceSnapshotId restore: the plugin's id of the snapshot to copy
 * @param sourceVolumeId   clone: the plugin's id of the volume to copy
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record ProvisionSpec(
        String name,
        Long capacityMinBytes,
        Long capacityMaxBytes,
        Map<String, String> parameters,
        Map<String, String> topology,
        String sourceSnapshotId,
        String sourceVolumeId) {

    public ProvisionSpec {
        parameters = Copies.map(parameters);
        topology = Copies.map(topology);
    }

    void checkFields(String prefix, Violations v) {
        v.text(prefix + "name", name, 128);
        if (capacityMinBytes != null && capacityMinBytes < 0) {
            v.add(prefix + "capacityMinBytes", capacityMinBytes, "must not be negative");
        }
        if (capacityMaxBytes != null && capacityMaxBytes < 0) {
            v.add(prefix + "capacityMaxBytes", capacityMaxBytes, "must not be negative");
        }
        if (capacityMinBytes != null && capacityMaxBytes != null && capacityMaxBytes > 0 && capacityMaxBytes < capacityMinBytes) {
            v.add(prefix + "capacityMaxBytes", capacityMaxBytes, "must not be below capacityMinBytes (" + capacityMinBytes + ")");
        }
        v.stringMap(prefix + "parameters", parameters, 64);
        v.stringMap(prefix + "topology", topology, 16);
        v.optionalText(prefix + "sourceSnapshotId", sourceSnapshotId, 1024);
        v.optionalText(prefix + "sourceVolumeId", sourceVolumeId, 1024);
        if (sourceSnapshotId != null && sourceVolumeId != null) {
            v.add(prefix + "sourceVolumeId", sourceVolumeId, "a volume has one content source: a snapshot or a volume, not both");
        }
    }
}
