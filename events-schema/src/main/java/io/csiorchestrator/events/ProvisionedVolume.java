package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;

/**
 * What a successful {@code create-volume} command got from the plugin (CSI CreateVolumeResponse's volume), or a
 * successful {@code controller-expand-volume} / {@code node-expand-volume} (the volume's id and its new capacity; for
 * the controller's, whether the plugin asks for NodeExpandVolume on each node where the volume is published).
 *
 * @param externalVolumeId   the plugin's volume id
 * @param capacityBytes      the capacity the plugin reports; 0 = unknown
 * @param volumeContext      the volume context, passed on to every later call for the volume
 * @param accessibleTopology the topology segments the volume is accessible from; empty = everywhere
 * @param nodeExpansionRequired for a controller-expand-volume: ControllerExpandVolumeResponse's node_expansion_required
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record ProvisionedVolume(
        String externalVolumeId,
        Long capacityBytes,
        Map<String, String> volumeContext,
        List<Map<String, String>> accessibleTopology,
        Boolean nodeExpansionRequired) {

    public ProvisionedVolume {
        nodeExpansionRequired = Boolean.TRUE.equals(nodeExpansionRequired) ? Boolean.TRUE : null;
        volumeContext = Copies.map(volumeContext);
        accessibleTopology = accessibleTopology == null ? List.of()
                : accessibleTopology.stream().map(Copies::map).toList();
    }

    /** A created volume (no expansion flag). */
    public ProvisionedVolume(String externalVolumeId, Long capacityBytes, Map<String, String> volumeContext,
                             List<Map<String, String>> accessibleTopology) {
        this(externalVolumeId, capacityBytes, volumeContext, accessibleTopology, null);
    }

    /** An expanded volume: its id, the capacity the plugin reports, whether nodes must expand it too. */
    public static ProvisionedVolume expanded(String externalVolumeId, long capacityBytes, boolean nodeExpansionRequired) {
        return new ProvisionedVolume(externalVolumeId, capacityBytes, Map.of(), List.of(), nodeExpansionRequired);
    }

    public boolean requiresNodeExpansion() {
        return Boolean.TRUE.equals(nodeExpansionRequired);
    }

    void checkFields(String prefix, Violations v) {
        v.text(prefix + "externalVolumeId", externalVolumeId, 1024);
        if (capacityBytes != null && capacityBytes < 0) {
            v.add(prefix + "capacityBytes", capacityBytes, "must not be negative");
        }
        v.stringMap(prefix + "volumeContext", volumeContext, 256);
        if (accessibleTopology.size() > 64) {
            v.add(prefix + "accessibleTopology", accessibleTopology.size() + " segments", "must hold at most 64 segments");
        }
        for (int i = 0; i < accessibleTopology.size() && i < 64; i++) {
            v.stringMap(prefix + "accessibleTopology[" + i + "]", accessibleTopology.get(i), 16);
        }
    }
}
