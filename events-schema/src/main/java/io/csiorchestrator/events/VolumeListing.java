package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * Which page of CSI ListVolumes a {@code list-volumes} command asks for (issue 14: claim-service's reconciliation of
 * the volumes it created with the plugin's list).
 *
 * @param startingToken the previous page's {@code next_token}; absent for the first page
 * @param maxEntries    the page size (CSI max_entries), 1 to {@link #MAX_ENTRIES}
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record VolumeListing(String startingToken, Integer maxEntries) {

    /** The largest page a list-volumes command may ask for (its answer must fit one Kafka record). */
    public static final int MAX_ENTRIES = 1000;

    void checkFields(String prefix, Violations v) {
        v.optionalText(prefix + "startingToken", startingToken, 4096);
        if (maxEntries == null || maxEntries < 1 || maxEntries > MAX_ENTRIES) {
            v.add(prefix + "maxEntries", maxEntries, "must be 1 to " + MAX_ENTRIES);
        }
    }
}
