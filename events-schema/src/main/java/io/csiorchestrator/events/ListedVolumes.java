package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;

/**
 * One page of CSI ListVolumes, the answer of a successful {@code list-volumes} command (issue 14).
 *
 * @param externalVolumeIds the plugin's ids of the volumes on this page
 * @param nextToken         CSI next_token: absent on the last page
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record ListedVolumes(List<String> externalVolumeIds, String nextToken) {

    public ListedVolumes {
        externalVolumeIds = Copies.list(externalVolumeIds);
    }

    /** Whether this is the last page. */
    public boolean last() {
        return nextToken == null || nextToken.isEmpty();
    }

    void checkFields(String prefix, Violations v) {
        if (externalVolumeIds.size() > VolumeListing.MAX_ENTRIES) {
            v.add(prefix + "externalVolumeIds", externalVolumeIds.size() + " ids", "must hold at most "
                    + VolumeListing.MAX_ENTRIES);
        }
        for (int i = 0; i < externalVolumeIds.size() && i < VolumeListing.MAX_ENTRIES; i++) {
            v.text(prefix + "externalVolumeIds[" + i + "]", externalVolumeIds.get(i), 1024);
        }
        v.optionalText(prefix + "nextToken", nextToken, 4096);
    }
}
