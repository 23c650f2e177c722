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
    /** A login the broker refused, until a login succeeds after it; and the count of good logins then. */
    private String refusal;
    private long loginsAtRefusal;

    /** @param lostAfter no fetch answered for this long: the broker counts as unreachable */
    BrokerContact(Duration lostAfter, long nowNanos, Instant now) {
        this.lostAfterNanos = lostAfter.toNanos();
        this.lastAnswerNanos = nowNanos;
        this.lastAnswer = now;
    }

    /**
     * The consumer's loop failed ({@code why}), when the consumer had logged in {@code logins} times. A refused login
     * (an {@code AuthenticationException}: the node's token revoked or expired, its user deleted) is the failure until
     * a login succeeds after it: connections made before it keep answering fetches until the broker asks them to log
     * in again, so an answered fetch proves nothing about the credential. Any other failure lasts until a fetch is
     * answered after it; either says more than the silence that may follow.
     */
    void loopFailed(String why, long logins) {
        if (why != null && why.contains("AuthenticationException")) {
            refusal = why;
            loginsAtRefusal = logins;
        } else {
            loopFailure = why;
        }
    }

    /**
     * Takes in the consumer's counts of answered fetches and of good logins (first and repeated) at {@code nowNanos};
     * returns null while the broker answers, else why not: a refused login (see {@link #loopFailed}), the loop's
     * failure, or the silence once longer than the limit.
     */
    String observe(long answeredFetches, long logins, long nowNanos, Instant now) {
        if (refusal != null && logins > loginsAtRefusal) {
            refusal = null;
        }
        if (answeredFetches > answered) {
            boolean first = answered < 0;
            answered = answeredFetches;
            if (!first || answeredFetches > 0) {
                lastAnswerNanos = nowNanos;
                lastAnswer = now;
                loopFailure = null;
            }
        }
        if (refusal != null) {
            return refusal;
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
