package io.csiorchestrator.claims.domain;

import java.time.Duration;
import java.util.Locale;

/**
 * The fencing timers claim-service waits by (issue 19, "the control plane waits"), and their floor. Pure.
 *
 * <p>A node's worker counts its lease from the moment it sent the renewal, so it lapses before the registry's view of
 * it; it fences itself {@code budget} before its own expiry. claim-service may let another node write a volume whose
 * writer's node is unreachable only once that node's lease has surely lapsed and it has fenced:
 * <pre>
 *   floor = lease-ttl x (1 + clock-drift) + budget + margin      (30 s x 1.05 + 10 s + 5 s = 46.5 s by default)
 * </pre>
 * {@code failoverWait} (counted from the last VALID lease claim-service received for the node) may be set higher,
 * never lower: {@link #checked} refuses it with the arithmetic in the reason.
 *
 * @param leaseTtl     {@code csi.fencing.lease-ttl}
 * @param clockDrift   {@code csi.fencing.clock-drift}: the fraction by which two clocks' durations may differ
 * @param budget       {@code csi.fencing.budget}: how long before its expiry a worker fences itself
 * @param margin       {@code csi.fencing.margin}
 * @param failoverWait {@code csi.fencing.failover-wait}; null = the floor
 */
public record FenceTimers(Duration leaseTtl, double clockDrift, Duration budget, Duration margin, Duration failoverWait) {

    /** The defaults of issue 19's design. */
    public static final FenceTimers DEFAULT = new FenceTimers(Duration.ofSeconds(30), 0.05, Duration.ofSeconds(10),
            Duration.ofSeconds(5), null);

    public FenceTimers {
        if (leaseTtl == null || leaseTtl.isNegative() || leaseTtl.isZero()) {
            throw new IllegalArgumentException("csi.fencing.lease-ttl must be positive, not " + text(leaseTtl));
        }
        if (!(clockDrift >= 0 && clockDrift < 1)) {
            throw new IllegalArgumentException("csi.fencing.clock-drift must be at least 0 and below 1, not " + clockDrift);
        }
        if (budget == null || budget.isNegative()) {
            throw new IllegalArgumentException("csi.fencing.budget must not be negative, not " + text(budget));
        }
        if (margin == null || margin.isNegative()) {
            throw new IllegalArgumentException("csi.fencing.margin must not be negative, not " + text(margin));
        }
    }

    /** lease-ttl x (1 + clock-drift) + budget + margin, rounded up to the millisecond. */
    public Duration floor() {
        return driftedTtl().plus(budget).plus(margin);
    }

    /** lease-ttl x (1 + clock-drift), rounded up to the millisecond. */
    public Duration driftedTtl() {
        return Duration.ofMillis((long) Math.ceil(leaseTtl.toMillis() * (1 + clockDrift)));
    }

    /** The wait from the last VALID lease received to the node being assumed fenced: failover-wait, else the floor. */
    public Duration effectiveFailoverWait() {
        return failoverWait == null ? floor() : failoverWait;
    }

    /** The wait after a LAPSED (or FENCED) lease was received: budget + margin. */
    public Duration afterLapse() {
        return budget.plus(margin);
    }

    /**
     * These timers, or an {@link IllegalArgumentException} whose message says why a failover-wait below the floor is
     * refused, e.g. "csi.fencing.failover-wait 20s is below the floor 46.5s = lease-ttl 30s x 1.05 + budget 10s +
     * margin 5s".
     */
    public FenceTimers checked() {
        if (failoverWait != null && failoverWait.compareTo(floor()) < 0) {
            throw new IllegalArgumentException("csi.fencing.failover-wait " + text(failoverWait) + " is below the floor "
                    + text(floor()) + " = lease-ttl " + text(leaseTtl) + " x " + number(1 + clockDrift) + " + budget "
                    + text(budget) + " + margin " + text(margin));
        }
        return this;
    }

    /** A duration as an operator writes it: 46.5s, 30s, 250ms, 2m. */
    public static String text(Duration d) {
        if (d == null) {
            return "(unset)";
        }
        long ms = d.toMillis();
        if (ms % 60_000 == 0 && ms >= 60_000) {
            return ms / 60_000 + "m";
        }
        if (ms < 1000 && ms != 0) {
            return ms + "ms";
        }
        return number(ms / 1000.0) + "s";
    }

    private static String number(double v) {
        String s = String.format(Locale.ROOT, "%.3f", v);
        s = s.replaceAll("0+$", "");
        return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
    }
}
