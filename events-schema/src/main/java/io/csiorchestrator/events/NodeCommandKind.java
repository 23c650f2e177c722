package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What a node-commands record asks a node's worker to do. */
public enum NodeCommandKind implements WireValue {
    MOUNT("mount"),
    UNMOUNT("unmount"),
    CONTROLLER_PUBLISH("controller-publish"),
    CONTROLLER_UNPUBLISH("controller-unpublish"),
    /** CSI CreateVolume on the node hosting a healthy controller instance (issue 14). */
    CREATE_VOLUME("create-volume"),
    /** CSI DeleteVolume on the node hosting a healthy controller instance (issue 14). */
    DELETE_VOLUME("delete-volume");

    private final String wire;

    NodeCommandKind(String wire) {
        this.wire = wire;
    }

    /** Whether the command creates or deletes a volume (no node state, no allocation). */
    public boolean provisioning() {
        return this == CREATE_VOLUME || this == DELETE_VOLUME;
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
