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
    DELETE_SNAPSHOT("delete-snapshot"),
    /** CSI ControllerExpandVolume of the command's volume to {@code provision.capacityMinBytes} (issue 14 item 3). */
    CONTROLLER_EXPAND("controller-expand-volume"),
    /**
     * CSI NodeExpandVolume of the command's volume on the node where it is published, to
     * {@code provision.capacityMinBytes}; the worker passes the volume's target and staging path (issue 14 item 3).
     */
    NODE_EXPAND("node-expand-volume"),
    /**
     * CSI ListVolumes, one page ({@code listing}), on the node hosting a healthy controller instance of the plugin:
     * claim-service's reconciliation of the volumes it created (issue 14). Names no volume: {@code namespace} is
     * {@link #LISTING_NAMESPACE} and {@code volumeId} the plugin id.
     */
    LIST_VOLUMES("list-volumes");

    /** The {@code namespace} of a list-volumes command and its answer (its {@code volumeId} is the plugin id). */
    public static final String LISTING_NAMESPACE = "csi.list-volumes";

    private final String wire;

    NodeCommandKind(String wire) {
        this.wire = wire;
    }

    /**
     * Whether the command creates, deletes, expands or lists volumes, or creates or deletes a snapshot, on a controller
     * (no node state, no allocation).
     */
    public boolean provisioning() {
        return this == CREATE_VOLUME || this == DELETE_VOLUME || this == CONTROLLER_EXPAND || this == LIST_VOLUMES
                || snapshotting();
    }

    /** Whether the command expands a volume (controller or node; it carries the new capacity in its provision spec). */
    public boolean expanding() {
        return this == CONTROLLER_EXPAND || this == NODE_EXPAND;
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
