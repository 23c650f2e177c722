package io.csiorchestrator.worker.kafka;

import java.time.Duration;
import java.time.Instant;

/**
 * Whether the broker answers the command consumer, judged from the consumer's own fetches (issue 36, nothing busy
 * while idle). An idle fetch is held by the broker for up to the fetch wait and answered then, so while the broker
 * is reachable the count of answered fetches grows at least once per fetch wait. Asking the broker a question of its
 * own instead (the partitions' end offsets, as before) costs a request every check, and with a long fetch wait it
 * queues behind the held fetch: a broker answers one connection's requests in order, so a 3 s question waited up to
 * the whole fetch wait and timed out while all was well (which is why the 5 s fetch wait once failed
 * CommandConsumerPartitionsTest: the timed-out check skipped the partition count).
 *
 * <p>Pure logic, called on the consumer thread only.
 */
final class BrokerContact {

    private final long lostAfterNanos;
    private long answered = -1;
    private long lastAnswerNanos;
    private Instant lastAnswer;
    /** What the consumer's loop last ran into, until a fetch is answered after it. */
    private String loopFailure;

    /** @param lostAfter no fetch answered for this long: the broker counts as unreachable */
    BrokerContact(Duration lostAfter, long nowNanos, Instant now) {
        this.lostAfterNanos = lostAfter.toNanos();
        this.lastAnswerNanos = nowNanos;
        this.lastAnswer = now;
    }

    /**
     * The consumer's loop failed ({@code why}: e.g. the broker refused its login): that is the failure until a fetch
     * is answered after it, since it says more than the silence that follows it.
     */
    void loopFailed(String why) {
        loopFailure = why;
    }

    /**
     * Takes in the consumer's count of answered fetches at {@code nowNanos}; returns null while the broker answers,
     * else why not: the loop's failure (see {@link #loopFailed}), or the silence once longer than the limit.
     */
    String observe(long answeredFetches, long nowNanos, Instant now) {
        if (answeredFetches > answered) {
            boolean first = answered < 0;
            answered = answeredFetches;
            if (!first || answeredFetches > 0) {
                lastAnswerNanos = nowNanos;
                lastAnswer = now;
                loopFailure = null;
            }
        }
        if (loopFailure != null) {
            return loopFailure;
        }
        long silent = nowNanos - lastAnswerNanos;
        if (silent > lostAfterNanos) {
            return "the broker answered no fetch for " + silent / 1_000_000_000L + " s (since " + lastAnswer + ")";
        }
        return null;
    }

    /** When the broker last answered a fetch (or when watching began). */
    Instant lastAnswer() {
        return lastAnswer;
    }
}
