package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * The actual state of a staging or a publication in a {@link NodeStateReported}: the worker's record checked
 * against the node's mount table.
 */
public enum ReportedMount implements WireValue {
    /** The record says done and the path is a mount point. */
    MOUNTED("mounted"),
    /** The record says done but the path is not a mount point (unmounted behind the worker's back). */
    MISSING("missing"),
    /** A stage or publish is announced in the record and not finished: uncertain, may be in progress. */
    MOUNTING("mounting"),
    /** An unpublish or unstage is announced and not finished: uncertain, may be in progress. */
    UNMOUNTING("unmounting"),
    /** Not staged (the plugin does not stage, or nothing uses the volume). */
    NONE("none");

    private final String wire;

    ReportedMount(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static ReportedMount fromWire(String value) {
        return WireValue.parse(ReportedMount.class, value);
    }
}
