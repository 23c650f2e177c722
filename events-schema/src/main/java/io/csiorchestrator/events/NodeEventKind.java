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
    VOLUME_CONDITION("volume-condition");

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
