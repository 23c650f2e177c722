package io.csiorchestrator.csi;

import io.csiorchestrator.csi.v1.VolumeCapability.AccessMode.Mode;

import java.util.Arrays;

/**
 * The access modes a claim may ask for, by the orchestrator's names. The two single-node modes of CSI 1.5
 * ({@code SINGLE_NODE_SINGLE_WRITER}, {@code SINGLE_NODE_MULTI_WRITER}) go to a plugin only when it advertises the
 * SINGLE_NODE_MULTI_WRITER capability ({@link #csiModeFor}); to one that does not, both are SINGLE_NODE_WRITER, the
 * mode the spec says such a plugin still takes ("Plugins MUST accept and allow use of the SINGLE_NODE_WRITER access
 * mode when either ... are supported, in order to permit older COs to continue working", and as Kubernetes maps
 * ReadWriteOncePod for a driver without the capability). The one-writer rule itself is the orchestrator's.
 */
public enum CsiAccessMode {
    SINGLE_NODE_READER_ONLY("single-node-reader-only", Mode.SINGLE_NODE_READER_ONLY, false, false),
    SINGLE_NODE_WRITER("single-node-writer", Mode.SINGLE_NODE_WRITER, true, false),
    MULTI_NODE_READER_ONLY("multi-node-reader-only", Mode.MULTI_NODE_READER_ONLY, false, true),
    MULTI_NODE_SINGLE_WRITER("multi-node-single-writer", Mode.MULTI_NODE_SINGLE_WRITER, true, true),
    MULTI_NODE_MULTI_WRITER("multi-node-multi-writer", Mode.MULTI_NODE_MULTI_WRITER, true, true),
    SINGLE_NODE_SINGLE_WRITER("single-node-single-writer", Mode.SINGLE_NODE_SINGLE_WRITER, true, false),
    SINGLE_NODE_MULTI_WRITER("single-node-multi-writer", Mode.SINGLE_NODE_MULTI_WRITER, true, false);

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

    /**
     * The CSI mode to send a plugin: {@link #csiMode()}, except that the two CSI 1.5 single-node modes become
     * SINGLE_NODE_WRITER for a plugin that does not advertise SINGLE_NODE_MULTI_WRITER (its controller, if it has
     * one, and its node service).
     */
    public Mode csiModeFor(boolean pluginSupportsSingleNodeMultiWriter) {
        boolean newMode = this == SINGLE_NODE_SINGLE_WRITER || this == SINGLE_NODE_MULTI_WRITER;
        return newMode && !pluginSupportsSingleNodeMultiWriter ? Mode.SINGLE_NODE_WRITER : csiMode;
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
