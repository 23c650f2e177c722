package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** How a volume is attached to a workload: as a mounted file system or as a raw block device. */
public enum AttachmentMode implements WireValue {
    FILE_SYSTEM("file-system"),
    BLOCK_DEVICE("block-device");

    private final String wire;

    AttachmentMode(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static AttachmentMode fromWire(String value) {
        return WireValue.parse(AttachmentMode.class, value);
    }
}
