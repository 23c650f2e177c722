package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What a claim-requested record asks for: read, write, or the release of an earlier claim. */
public enum ClaimMode implements WireValue {
    READ("read"),
    WRITE("write"),
    RELEASE("release");

    private final String wire;

    ClaimMode(String wire) {
        this.wire = wire;
    }

    @Override
    @JsonValue
    public String wire() {
        return wire;
    }

    @JsonCreator
    public static ClaimMode fromWire(String value) {
        return WireValue.parse(ClaimMode.class, value);
    }
}
