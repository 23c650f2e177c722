package io.csiorchestrator.claims.domain;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * What a volume prefers when its writer's node is unreachable (issue 19 item 7). Pure.
 * <ul>
 *   <li>{@link #FENCE} (the default): the node fences every mount of the volume when its lease lapses, and its
 *       claims are freed (another node may write) once the lease surely lapsed and the fence wait passed;</li>
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
     * Whether a mount of this volume is fenced by its node when the node's lease lapses (the mount command's
     * {@code fenceOnLapse}): every mount of a {@link #FENCE} volume, whatever its claim's mode, read-only ones too, and
     * none of a {@link #MANUAL} one. It is the same rule as {@link #freedByLapse()}: what claim-service frees after a
     * lapse ("assumed detached") the node must really have unmounted, so a node that lost its lease loses all its
     * claims of such a volume (as Nomad's {@code stop_on_client_after} stops every allocation of a disconnected
     * client), readers included (a reader on a single-node volume keeps another node from getting it).
     */
    public boolean fencesMounts() {
        return this == FENCE;
    }

    /**
     * Whether a lapse (with the fence wait passed) lets the node's claims of this volume be assumed detached: only
     * where the node fences every mount of it on a lapse ({@link #fencesMounts()}).
     */
    public boolean freedByLapse() {
        return fencesMounts();
    }
}
