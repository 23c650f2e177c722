package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * What one {@code placement} entry describes (issue 34 item 4): {@code node}, a node instance of a plugin (topology,
 * volume limit, volumes held, health), or {@code capacity}, a plugin's capacity in one topology segment (GetCapacity).
 */
public enum PlacementKind implements WireValue {
    NODE("node"),
    CAPACITY("capacity");

    private final String wire;

    PlacementKind(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static PlacementKind fromWire(String value) {
        return WireValue.parse(PlacementKind.class, value);
    }
}
