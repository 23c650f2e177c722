package io.csiorchestrator.csi;

import io.csiorchestrator.csi.v1.VolumeCapability.AccessMode.Mode;

import java.util.Arrays;

/** The five access modes a claim may ask for, by the orchestrator's names. */
public enum CsiAccessMode {
    SINGLE_NODE_READER_ONLY("single-node-reader-only", Mode.SINGLE_NODE_READER_ONLY, false, false),
    SINGLE_NODE_WRITER("single-node-writer", Mode.SINGLE_NODE_WRITER, true, false),
    MULTI_NODE_READER_ONLY("multi-node-reader-only", Mode.MULTI_NODE_READER_ONLY, false, true),
    MULTI_NODE_SINGLE_WRITER("multi-node-single-writer", Mode.MULTI_NODE_SINGLE_WRITER, true, true),
    MULTI_NODE_MULTI_WRITER("multi-node-multi-writer", Mode.MULTI_NODE_MULTI_WRITER, true, true);

    private final String externalName;
    private final Mode csiMode;
    private final boolean writable;
    private final boolean multiNode;

    CsiAccessMode(String externalName, Mode csiMode, boolean writable, boolean multiNode) {
        this.externalName = externalName;
        this.csiMode = csiMode;
        this.writable = writable;
        this.multiNode = multiNode;
    }

    /** The name in events and APIs, e.g. {@code single-node-writer}. */
    public String externalName() {
        return externalName;
    }

    public Mode csiMode() {
        return csiMode;
    }

    public boolean isWritable() {
        return writable;
    }

    public boolean isMultiNode() {
        return multiNode;
    }

    public static CsiAccessMode fromExternalName(String name) {
        return Arrays.stream(values())
                .filter(mode -> mode.externalName.equals(name))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown access mode '" + name
                        + "'; expected one of " + Arrays.stream(values()).map(CsiAccessMode::externalName).toList()));
    }

    public static CsiAccessMode fromCsiMode(Mode mode) {
        return Arrays.stream(values())
                .filter(value -> value.csiMode == mode)
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unsupported CSI access mode " + mode));
    }

    @Override
    public String toString() {
        return externalName;
    }
}
