package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;

/**
 * What a successful {@code create-volume} command got from the plugin (CSI CreateVolumeResponse's volume).
 *
 * @param externalVolumeId   the plugin's volume id
 * @param capacityBytes      the capacity the plugin reports; 0 = unknown
 * @param volumeContext      the volume context, passed on to every later call for the volume
 * @param accessibleTopology the topology segments the volume is accessible from; empty = everywhere
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record ProvisionedVolume(
        String externalVolumeId,
        Long capacityBytes,
        Map<String, String> volumeContext,
        List<Map<String, String>> accessibleTopology) {

    public ProvisionedVolume {
        volumeContext = Copies.map(volumeContext);
        accessibleTopology = accessibleTopology == null ? List.of()
                : accessibleTopology.stream().map(Copies::map).toList();
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
