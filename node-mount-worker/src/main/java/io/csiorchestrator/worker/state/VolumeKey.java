package io.csiorchestrator.worker.state;

import io.csiorchestrator.events.PathSafeId;

/** A volume on this node: its namespace and id (both {@link PathSafeId}s). */
public record VolumeKey(String namespace, String volumeId) {

    public VolumeKey {
        PathSafeId.require("namespace", namespace);
        PathSafeId.require("volume id", volumeId);
    }

    @Override
    public String toString() {
        return namespace + "/" + volumeId;
    }
}
