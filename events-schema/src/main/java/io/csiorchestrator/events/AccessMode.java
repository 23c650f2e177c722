package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * The CSI access modes, spelled as Nomad spells them, and the two single-node modes CSI 1.5 added for one writer per
 * workload (issue 34): {@code single-node-single-writer} (Kubernetes' ReadWriteOncePod: one writer allocation on one
 * node) and {@code single-node-multi-writer} (several writer allocations, one node).
 */
public enum AccessMode implements WireValue {
    SINGLE_NODE_READER_ONLY("single-node-reader-only", false, false),
    SINGLE_NODE_WRITER("single-node-writer", false, true),
    MULTI_NODE_READER_ONLY("multi-node-reader-only", true, false),
    MULTI_NODE_SINGLE_WRITER("multi-node-single-writer", true, true),
    MULTI_NODE_MULTI_WRITER("multi-node-multi-writer", true, true),
    SINGLE_NODE_SINGLE_WRITER("single-node-single-writer", false, true),
    SINGLE_NODE_MULTI_WRITER("single-node-multi-writer", false, true);

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
        return this == SINGLE_NODE_WRITER || this == MULTI_NODE_SINGLE_WRITER || this == SINGLE_NODE_SINGLE_WRITER;
    }

    @JsonCreator
    public static AccessMode fromWire(String value) {
        return WireValue.parse(AccessMode.class, value);
    }
}
