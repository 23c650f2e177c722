package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What happened on a node, as reported on node-events. */
public enum NodeEventKind implements WireValue {
    MOUNT("mount"),
    UNMOUNT("unmount"),
    CONTROLLER_PUBLISH("controller-publish"),
    CONTROLLER_UNPUBLISH("controller-unpublish"),
    PLUGIN_HEALTH("plugin-health"),
    PLUGIN_REGISTERED("plugin-registered"),
    PLUGIN_DEREGISTERED("plugin-deregistered"),
    HEAL("heal"),
    RESTORE("restore"),
    /** claim-service's anti-entropy repaired a difference between the node's report and its claims. */
    RECONCILE("reconcile"),
    /**
     * A published volume's condition changed (CSI VOLUME_CONDITION, from NodeGetVolumeStats):
     * details {@code condition} ({@code abnormal} or {@code normal}) and {@code message} (the
     * plugin's); the event's time is when the worker saw the change.
     */
    VOLUME_CONDITION("volume-condition"),
    /**
     * The worker fenced itself (its lease was not renewed in time) or its guard process did: details {@code epoch},
     * {@code fencedBy} ({@code worker} or {@code guard}), {@code unmounted}, {@code lazilyDetached} (busy, detached
     * with MNT_DETACH) and {@code failed} (comma-separated {@code namespace/volumeId/allocationId}). Sent when the
     * worker reaches Kafka again, and at its start while its record says it fenced.
     */
    FENCED("fenced"),
    /** The fenced worker got a new lease epoch ({@code details.epoch}) and takes commands again. */
    UNFENCED("unfenced"),
    /**
     * A plugin's capacity for one topology segment (CSI GetCapacity, issue 34), from the worker hosting a controller
     * instance of it: details as {@link CapacityFigures} writes them. Sent every capacity period and after a
     * create, delete or expand when the figures changed.
     */
    CAPACITY("capacity"),
    /**
     * A published volume's usage on a node (CSI NodeGetVolumeStats, issue 34): details as {@link VolumeUsageFigures}
     * writes them. Sent at the first poll of a volume and when the figures changed noticeably.
     */
    VOLUME_USAGE("volume-usage");

    private final String wire;

    NodeEventKind(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static NodeEventKind fromWire(String value) {
        return WireValue.parse(NodeEventKind.class, value);
    }
}
