package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What a node-commands record asks a node's worker to do. */
public enum NodeCommandKind implements WireValue {
    MOUNT("mount"),
    UNMOUNT("unmount"),
    CONTROLLER_PUBLISH("controller-publish"),
    CONTROLLER_UNPUBLISH("controller-unpublish");

    private final String wire;

    NodeCommandKind(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static NodeCommandKind fromWire(String value) {
        return WireValue.parse(NodeCommandKind.class, value);
    }
}
