package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * A result of a volume's or a snapshot's create or delete through the services (issue 14), as reported on
 * volume-status. For a snapshot, {@link #CREATED} means ready to use (CSI {@code ready_to_use}).
 */
public enum VolumeState implements WireValue {
    CREATED("created"),
    CREATE_FAILED("create-failed"),
    DELETED("deleted"),
    DELETE_FAILED("delete-failed");

    private final String wire;

    VolumeState(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    /** Whether a reason is required: the create or delete failed. */
    public boolean failed() {
        return this == CREATE_FAILED || this == DELETE_FAILED;
    }

    @JsonCreator
    public static VolumeState fromWire(String value) {
        return WireValue.parse(VolumeState.class, value);
    }
}
