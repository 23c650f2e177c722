package io.csiorchestrator.plugins.domain;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * The time in which the registry could have recorded every heartbeat: silence is measured on it alone, so the
 * registry's own outage (its database away, Kafka unreachable, a restart, a consumer lagging behind) never makes
 * an instance silent. An immutable value; all instants are the registry's clock.
 *
 * <ul>
 *   <li>{@link #interrupted(Instant)}: at that instant the registry could not record (a report failed because
 *       the database is away, the topic's offsets could not be read). The current window ends: nothing expires
 *       until the registry has caught up again.</li>
 *   <li>{@link #caughtUp(Instant)}: every {@code plugin-health} record appended before {@code sampledAt} has
 *       been recorded (the end offsets read at {@code sampledAt} are committed). A sample taken before the last
 *       interruption is ignored. The first one after an interruption opens a new window ({@code since}); later
 *       ones move its end ({@code upTo}).</li>
 *   <li>{@link #receivedBefore(Duration)}: an instance is silent for longer than {@code silence} when
 *       {@code upTo - max(lastReceived, since) > silence}, that is when its last report was received before
 *       {@code upTo - silence} and the window is longer than {@code silence}. So after an interruption every
 *       instance gets a whole {@code silence} again from the moment the registry has caught up, and a report
 *       still waiting in the topic (appended before {@code upTo} is known to be recorded) is never missing.</li>
 * </ul>
 *
 * @param interruptedAt the last instant the registry could not record (at first: its start)
 * @param since         the start of the current window: the first catch-up after {@code interruptedAt}; null
 *                      while the registry has not caught up since
 * @param upTo          every record appended before it has been recorded; null exactly when {@code since} is
 */
public record RecordingWindow(Instant interruptedAt, Instant since, Instant upTo) {

    public RecordingWindow {
        Objects.requireNonNull(interruptedAt, "interruptedAt");
        if ((since == null) != (upTo == null)) {
            throw new IllegalArgumentException("since and upTo are both set or both null");
        }
        if (since != null && (!since.isAfter(interruptedAt) || upTo.isBefore(since))) {
            throw new IllegalArgumentException("expected interruptedAt < since <= upTo, not "
                    + interruptedAt + ", " + since + ", " + upTo);
        }
    }

    /** The registry started at {@code at}: nothing it has not recorded since then counts. */
    public static RecordingWindow startedAt(Instant at) {
        return new RecordingWindow(at, null, null);
    }

    /** The registry could not record at {@code at}: the window closes until it has caught up again. */
    public RecordingWindow interrupted(Instant at) {
        Instant last = at.isAfter(interruptedAt) ? at : interruptedAt;
        return new RecordingWindow(last, null, null);
    }

    /** Every record appended before {@code sampledAt} has been recorded. */
    public RecordingWindow caughtUp(Instant sampledAt) {
        if (!sampledAt.isAfter(interruptedAt)) {
            return this;
        }
        if (since == null) {
            return new RecordingWindow(interruptedAt, sampledAt, sampledAt);
        }
        return sampledAt.isAfter(upTo) ? new RecordingWindow(interruptedAt, since, sampledAt) : this;
    }

    /** Whether the registry has caught up since its last interruption. */
    public boolean recording() {
        return since != null;
    }

    /**
     * Instances whose last report was received before the returned instant have been silent for longer than
     * {@code silence} on recorded time; empty when none can be (not caught up, or the window not longer than
     * {@code silence} yet).
     */
    public Optional<Instant> receivedBefore(Duration silence) {
        if (since == null) {
            return Optional.empty();
        }
        Instant cutoff = upTo.minus(silence);
        return since.isBefore(cutoff) ? Optional.of(cutoff) : Optional.empty();
    }
}
