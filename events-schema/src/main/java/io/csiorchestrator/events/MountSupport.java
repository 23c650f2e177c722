package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What the task driver can mount: everything, nothing, or host paths only. Absent means all. */
public enum MountSupport implements WireValue {
    ALL("all"),
    NONE("none"),
    HOST_ONLY("host-only");

    private final String wire;

    MountSupport(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static MountSupport fromWire(String value) {
        return WireValue.parse(MountSupport.class, value);
    }
}
