package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** A transition of a claim as reported on claim-status. */
public enum ClaimState implements WireValue {
    ACCEPTED("accepted"),
    /**
     * Not rejected, not started yet: the claim waits (with the reason) for a conflicting claim's release to end, e.g.
     * the previous writer's lease wait or storage fence (issue 19), at most claim-service's pending timeout.
     */
    PENDING("pending"),
    REJECTED("rejected"),
    READY("ready"),
    RELEASING("releasing"),
    RELEASED("released"),
    FAILED("failed");

    private final String wire;

    ClaimState(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static ClaimState fromWire(String value) {
        return WireValue.parse(ClaimState.class, value);
    }
}
