package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * The state of one epoch of a node's lease, as plugin-registry-service declares it on {@code node-leases}:
 * {@code valid} (granted or renewed), {@code lapsed} (not renewed within ttl x (1 + clock drift); that epoch is
 * never granted again) or {@code fenced} (the node's worker reported that it fenced itself at that epoch).
 */
public enum NodeLeaseState implements WireValue {
    VALID("valid"),
    LAPSED("lapsed"),
    FENCED("fenced");

    private final String wire;

    NodeLeaseState(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static NodeLeaseState fromWire(String value) {
        return WireValue.parse(NodeLeaseState.class, value);
    }
}
