package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** The five CSI access modes, spelled as Nomad spells them. */
public enum AccessMode implements WireValue {
    SINGLE_NODE_READER_ONLY("single-node-reader-only", false, false),
    SINGLE_NODE_WRITER("single-node-writer", false, true),
    MULTI_NODE_READER_ONLY("multi-node-reader-only", true, false),
    MULTI_NODE_SINGLE_WRITER("multi-node-single-writer", true, true),
    MULTI_NODE_MULTI_WRITER("multi-node-multi-writer", true, true);

    private final String wire;
    private final boolean multiNode;
    private final boolean allowsWrite;

    AccessMode(String wire, boolean multiNode, boolean allowsWrite) {
        this.wire = wire;
        this.multiNode = multiNode;
        this.allowsWrite = allowsWrite;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    /** Whether more than one node may use the volume at once. */
    public boolean multiNode() {
        return multiNode;
    }

    /** Whether a writer may claim the volume in this mode. */
    public boolean allowsWrite() {
        return allowsWrite;
    }

    /** Whether at most one writer may hold the volume at a time. */
    public boolean singleWriter() {
        return this == SINGLE_NODE_WRITER || this == MULTI_NODE_SINGLE_WRITER;
    }

    @JsonCreator
    public static AccessMode fromWire(String value) {
        return WireValue.parse(AccessMode.class, value);
    }
}
