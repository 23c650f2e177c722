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
    DELETE_VOLUME("delete-volume"),
    /** CSI CreateSnapshot of the command's volume, polled until ready_to_use (issue 14 item 2). */
    CREATE_SNAPSHOT("create-snapshot"),
    /** CSI DeleteSnapshot of {@code provision.sourceSnapshotId} (issue 14 item 2). */
    DELETE_SNAPSHOT("delete-snapshot");

    private final String wire;

    NodeCommandKind(String wire) {
        this.wire = wire;
    }

    /** Whether the command creates or deletes a volume or a snapshot (no node state, no allocation). */
    public boolean provisioning() {
        return this == CREATE_VOLUME || this == DELETE_VOLUME || snapshotting();
    }

    /** Whether the command creates or deletes a snapshot (no node state, no allocation). */
    public boolean snapshotting() {
        return this == CREATE_SNAPSHOT || this == DELETE_SNAPSHOT;
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
