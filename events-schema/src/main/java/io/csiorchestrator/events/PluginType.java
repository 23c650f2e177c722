package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** The role of a CSI plugin instance, derived from its capabilities: controller only, node only, or both (monolith). */
public enum PluginType implements WireValue {
    CONTROLLER("controller"),
    NODE("node"),
    MONOLITH("monolith");

    private final String wire;

    PluginType(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static PluginType fromWire(String value) {
        return WireValue.parse(PluginType.class, value);
    }
}
