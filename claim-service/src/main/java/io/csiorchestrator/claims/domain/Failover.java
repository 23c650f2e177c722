package io.csiorchestrator.claims.domain;

import io.csiorchestrator.events.AccessMode;
import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * What a volume prefers when its writer's node is unreachable (issue 19 item 7). Pure.
 * <ul>
 *   <li>{@link #FENCE} (the default): the node fences its write mounts when its lease lapses, and another node may
 *       write once the lease surely lapsed and the fence wait passed;</li>
 *   <li>{@link #MANUAL} ("no automatic failover", Kubernetes' default): the mounts are never fenced by a lapse, and
 *       another node gets the volume only when the old node reports it unmounted or an operator forces a detach.</li>
 * </ul>
 */
public enum Failover {
    FENCE("fence"),
    MANUAL("manual");

    private final String wire;

    Failover(String wire) {
        this.wire = wire;
    }

    public String wire() {
        return wire;
    }

    /** The stored value, or the default ({@link #FENCE}) when none was given. */
    public static Failover effective(String stored) {
        return stored == null ? FENCE : fromWire(stored);
    }

    public static Failover fromWire(String value) {
        for (Failover f : values()) {
            if (f.wire.equals(value)) {
                return f;
            }
        }
        throw new IllegalArgumentException("'" + value + "' is not one of " + Arrays.stream(values()).map(Failover::wire)
                .collect(Collectors.joining(", ")));
    }

    /**
     * Whether a mount is fenced by its node when the lease lapses: a writable mount of a write claim in a single-writer
     * mode ({@link ClaimRules#fenceOnLapse}) of a volume whose failover is {@link #FENCE}.
     */
    public boolean fencesMount(AccessMode accessMode, io.csiorchestrator.events.ClaimMode mode, boolean readOnly) {
        return this == FENCE && ClaimRules.fenceOnLapse(accessMode, mode, readOnly);
    }

    /** Whether a lapse (with the fence wait passed) lets the node's claims be assumed detached. */
    public boolean freedByLapse() {
        return this == FENCE;
    }
}
