package io.csiorchestrator.claims.domain;

import java.time.Duration;
import java.time.Instant;

/**
 * The rate limit of anti-entropy repairs: a token bucket of {@code burst} tokens refilled at {@code perMinute}
 * (Nomad's volumewatcher limits itself with {@code rate.NewLimiter} the same way). A repair that finds no token
 * waits for a later report; its difference stays pending. Pure (the caller passes the time); thread-safe.
 */
public final class RepairBudget {

    private final int burst;
    private final double perNano;
    private double tokens;
    private Instant last;

    public RepairBudget(int perMinute, int burst) {
        if (perMinute < 1 || burst < 1) {
            throw new IllegalArgumentException("repairs per minute and burst must be at least 1: " + perMinute + ", " + burst);
        }
        this.burst = burst;
        this.perNano = perMinute / (double) Duration.ofMinutes(1).toNanos();
        this.tokens = burst;
    }

    /** Takes one token at {@code now}; false when none is left. */
    public synchronized boolean tryTake(Instant now) {
        if (last != null && now.isAfter(last)) {
            tokens = Math.min(burst, tokens + Duration.between(last, now).toNanos() * perNano);
        }
        if (last == null || now.isAfter(last)) {
            last = now;
        }
        if (tokens >= 1) {
            tokens -= 1;
            return true;
        }
        return false;
    }
}
