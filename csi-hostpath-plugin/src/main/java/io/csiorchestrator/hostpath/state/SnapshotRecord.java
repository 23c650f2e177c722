package io.csiorchestrator.hostpath.state;

import java.util.Map;

/**
 * A snapshot the plugin made: a copy of its source volume's directory at {@code snapshots/<id>}.
 *
 * @param id              the snapshot id, derived from the name
 * @param name            the CreateSnapshot name (the idempotency key)
 * @param sourceVolumeId  the volume it copies
 * @param sizeBytes       the source volume's capacity when it was taken (what a restore needs at least)
 * @param createdSeconds  creation time, seconds of the epoch
 * @param createdNanos    creation time, nanoseconds within the second
 * @param parameters      the CreateSnapshot parameters
 */
public record SnapshotRecord(String id, String name, String sourceVolumeId, long sizeBytes, long createdSeconds,
                             int createdNanos, Map<String, String> parameters) {

    public SnapshotRecord {
        parameters = parameters == null ? Map.of() : Map.copyOf(parameters);
    }
}
