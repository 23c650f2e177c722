package io.csiorchestrator.claims.messaging;

import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.claims.ClaimSettings;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.support.TransientFailures;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * How the handling of an input is tried again. The database being away (unreachable, restarting, failing over:
 * {@link TransientFailures}) is waited out: retried with backoff (100 ms to 5 s) for as long as that lasts, so a valid
 * record is never dead-lettered by an outage. Any other failure is retried for {@code csi.claims.consumer-retry-budget}
 * (45 s) counted from the first such failure, then given up (the caller dead-letters the record with the reason). A
 * malformed record or one of a stale lease epoch is never retried. Retries are counted in
 * {@code csi.claim.consumer.retries}.
 */
@ApplicationScoped
public class Retries {

    private static final Logger LOG = Logger.getLogger(Retries.class);
    static final Duration FIRST_BACKOFF = Duration.ofMillis(100);
    static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;

    /** {@code work}, retried: while it fails transiently without end, otherwise until the retry budget is spent. */
    public Uni<Void> retried(Supplier<Uni<Void>> work, String what) {
        Duration budget = settings.consumerRetryBudget();
        long[] otherSince = {0};
        return Uni.createFrom().<Void>deferred(() -> work.get())
                .onFailure(t -> tryAgain(t, otherSince, budget, what))
                .retry().withBackOff(FIRST_BACKOFF, MAX_BACKOFF).indefinitely();
    }

    /** {@code work}, retried while it fails transiently (the database away); any other failure ends it. */
    public Uni<Void> retriedWhileTransient(Supplier<Uni<Void>> work, String what) {
        return Uni.createFrom().<Void>deferred(() -> work.get())
                .onFailure(t -> {
                    if (!TransientFailures.isTransient(t)) {
                        return false;
                    }
                    metrics.consumerRetry(true);
                    LOG.warnf("%s failed, the database is away; retrying until it is back: %s", what, t.toString());
                    return true;
                })
                .retry().withBackOff(FIRST_BACKOFF, MAX_BACKOFF).indefinitely();
    }

    /**
     * Whether a failed try of {@code what} is tried again; only a try again is counted in
     * {@code csi.claim.consumer.retries}. A malformed record is not; nor is one whose failures that are not
     * the database being away began at least {@code budget} ago (it is dead-lettered with the failure).
     */
    private boolean tryAgain(Throwable t, long[] otherSince, Duration budget, String what) {
        if (t instanceof MalformedEventException || t instanceof StaleEpochException) {
            return false;
        }
        if (TransientFailures.isTransient(t)) {
            otherSince[0] = 0;
            metrics.consumerRetry(true);
            LOG.warnf("%s failed, the database is away; retrying until it is back: %s", what, t.toString());
            return true;
        }
        long now = System.nanoTime();
        if (otherSince[0] == 0) {
            otherSince[0] = now;
        }
        if (now - otherSince[0] >= budget.toNanos()) {
            LOG.warnf("%s failed, retried for %s: dead-lettering it: %s", what, budget, t.toString());
            return false;
        }
        metrics.consumerRetry(false);
        LOG.warnf("%s failed, retrying for up to %s: %s", what, budget, t.toString());
        return true;
    }
}
