package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * A result of a volume's or a snapshot's create or delete, or of a volume's expansion, through the services (issue
 * 14), as reported on volume-status. For a snapshot, {@link #CREATED} means ready to use (CSI {@code ready_to_use}).
 * {@link #EXPANDED}: ControllerExpandVolume and, when the plugin asked for it, NodeExpandVolume on every node where the
 * volume was published are done (the new capacity); {@link #EXPAND_FAILED}: one of them failed (the plugin's message).
 */
public enum VolumeState implements WireValue {
    CREATED("created"),
    CREATE_FAILED("create-failed"),
    DELETED("deleted"),
    DELETE_FAILED("delete-failed"),
    EXPANDED("expanded"),
    EXPAND_FAILED("expand-failed");

    private final String wire;

    VolumeState(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    /** Whether a reason is required: the create, delete or expansion failed. */
    public boolean failed() {
        return this == CREATE_FAILED || this == DELETE_FAILED || this == EXPAND_FAILED;
    }

    /** Whether the plugin's id is required: the volume (or snapshot) was created or expanded. */
    public boolean namesVolume() {
        return this == CREATED || this == EXPANDED;
    }

    @JsonCreator
    public static VolumeState fromWire(String value) {
        return WireValue.parse(VolumeState.class, value);
    }
}
