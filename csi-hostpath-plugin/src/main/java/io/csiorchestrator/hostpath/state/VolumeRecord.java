package io.csiorchestrator.hostpath.state;

import java.util.Map;

/**
 * A volume the plugin created: a directory {@code <state-dir>/volumes/<id>}.
 *
 * @param id            the volume id, derived from the name
 * @param name          the CreateVolume name (the idempotency key)
 * @param capacityBytes the capacity granted (a directory enforces none)
 * @param parameters    the CreateVolume parameters
 */
public record VolumeRecord(String id, String name, long capacityBytes, Map<String, String> parameters) {

    public VolumeRecord {
        parameters = parameters == null ? Map.of() : Map.copyOf(parameters);
    }
}
