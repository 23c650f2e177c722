package io.csiorchestrator.claims.domain;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * When the next reconcile pass runs (issue 36, nothing busy while idle), as arithmetic: a pass is wanted at the
 * earliest due time anyone announced (a retry's backoff or a wait ends, a command's answer is overdue), but never
 * sooner than {@code spacing} after the last pass began (the rate limit: a due time in the past, or a pass that left
 * work because of its batch size, runs at most once a spacing). With nothing due, no pass is armed.
 *
 * <pre>
 *   fireAt(due) = max(due, lastPass + spacing)
 *   arm(due)    = fireAt(due) if nothing is armed or it is earlier than what is armed, else keep what is armed
 * </pre>
 */
public final class PassTiming {

    private final Duration spacing;
    private Instant lastPass = Instant.EPOCH;
    private Instant armed;

    public PassTiming(Duration spacing) {
        if (spacing.isNegative()) {
            throw new IllegalArgumentException("spacing must not be negative, was " + spacing);
        }
        this.spacing = spacing;
    }

    /**
     * Someone announced {@code due}: the moment a pass should run for it, if that is earlier than the armed one (the
     * caller then re-arms its timer to it), else null (the armed pass comes first and covers it).
     */
    public Instant offer(Instant due) {
        Objects.requireNonNull(due);
        Instant at = due.isBefore(lastPass.plus(spacing)) ? lastPass.plus(spacing) : due;
        if (armed != null && !at.isBefore(armed)) {
            return null;
        }
        armed = at;
        return at;
    }

    /** The armed pass begins now: nothing is armed until the next {@link #offer}. */
    public void began(Instant now) {
        lastPass = now;
        armed = null;
    }

    /** Nothing armed (leadership lost). */
    public void clear() {
        armed = null;
    }

    /** The moment the armed pass runs, or null. */
    public Instant armed() {
        return armed;
    }
}
