package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.PassTiming;
import io.csiorchestrator.claims.provision.ProvisionReconciler;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Transactions;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ScheduledFuture;
import org.jboss.logging.Logger;

/**
 * When the leader's reconcile pass ({@link Reconciler}, then {@link ProvisionReconciler}) runs: no periodic query while
 * nothing changes (issue 36). A pass runs
 * <ul>
 *   <li>when this instance becomes the leader (it cannot know what fell due before);</li>
 *   <li>at the earliest due time it learned of: every claim, provision or snapshot row written with a new retry time
 *       or command deadline is announced by the database at commit (trigger, NOTIFY
 *       {@code csi_claims_due}; whichever replica wrote it) to the leader's lock connection; after each pass the
 *       earliest due time left is read (one statement) and armed;</li>
 *   <li>every {@link #PURGE_EVERY} for the purge of past claims (retention 24 h by default: a past claim outlives it
 *       by at most that);</li>
 * </ul>
 * never two at once and never twice within {@code csi.claims.reconcile-interval} ({@link PassTiming}).
 */
@ApplicationScoped
public class ReconcileSchedule {

    private static final Logger LOG = Logger.getLogger(ReconcileSchedule.class);

    /** The purge's timer: past claims and answered request ids are kept for hours, so an hour late is nothing. */
    static final Duration PURGE_EVERY = Duration.ofHours(1);

    private static final String NEXT_DUE = "SELECT LEAST("
            + "(SELECT min(retry_at) FROM claims WHERE NOT past AND command_id IS NULL),"
            + "(SELECT min(command_deadline) FROM claims WHERE NOT past AND command_id IS NOT NULL),"
            + "(SELECT min(retry_at) FROM provisions WHERE command_id IS NULL),"
            + "(SELECT min(command_deadline) FROM provisions WHERE command_id IS NOT NULL),"
            + "(SELECT min(retry_at) FROM snapshots WHERE command_id IS NULL),"
            + "(SELECT min(command_deadline) FROM snapshots WHERE command_id IS NOT NULL))";

    @Inject
    Reconciler claims;
    @Inject
    ProvisionReconciler provisions;
    @Inject
    Transactions transactions;

    @Inject
    ClaimTimer timer;
    private PassTiming timing;
    private boolean leading;
    private boolean running;
    private boolean again;
    private ScheduledFuture<?> armed;
    private ScheduledFuture<?> purge;
    private long passes;

    @Inject
    void init(ClaimSettings settings) {
        timing = new PassTiming(settings.reconcileInterval());
    }

    /** Leadership began (a pass at once, then the purge's timer) or ended (nothing armed). */
    public synchronized void leadershipChanged(boolean leads) {
        leading = leads;
        cancel();
        if (purge != null) {
            purge.cancel(false);
            purge = null;
        }
        if (leads) {
            offer(Instant.now());
            purge = timer.every("the purge's wake-up", PURGE_EVERY, PURGE_EVERY, () -> offer(Instant.now()));
        } else {
            timing.clear();
        }
    }

    /** A due-time notification's payload (epoch milliseconds); a payload that is not a number wakes a pass now. */
    public void onDueNotification(String payload) {
        Instant due;
        try {
            due = Instant.ofEpochMilli(Long.parseLong(payload.trim()));
        } catch (RuntimeException e) {
            due = Instant.now();
        }
        offer(due);
    }

    /** A pass is wanted at {@code due} (or as soon after it as the rate limit allows). */
    public synchronized void offer(Instant due) {
        if (!leading) {
            return;
        }
        Instant at = timing.offer(due);
        if (at == null) {
            return;
        }
        cancel();
        long delay = Math.max(0, Duration.between(Instant.now(), at).toMillis());
        LOG.debugf("reconcile pass armed for %s (in %d ms; due %s)", at, delay, due);
        armed = timer.once(this::fire, Duration.ofMillis(delay));
    }

    /** How many passes ran (tests). */
    public synchronized long passes() {
        return passes;
    }

    private void cancel() {
        if (armed != null) {
            armed.cancel(false);
            armed = null;
        }
    }

    private void fire() {
        synchronized (this) {
            armed = null;
            // the armed moment has come, whether a pass begins now or not: the next offer arms again (left armed, a
            // moment in the past would cover every later offer and nothing would be scheduled again)
            timing.clear();
            if (!leading) {
                return;
            }
            if (running) {
                again = true; // the pass in progress may have read before this due time: one more after it
                return;
            }
            running = true;
            passes++;
            LOG.debugf("reconcile pass %d begins", passes);
            timing.began(Instant.now());
        }
        // an Optional item: a Uni of null would make a Multi without items, and the pass would never finish
        VertxContextSupport.subscribe(() -> pass().map(java.util.Optional::ofNullable).toMulti(), s -> s.with(
                next -> finished(next.orElse(null)),
                failure -> {
                    LOG.warnf("reconcile pass failed: %s", failure.toString());
                    finished(Instant.now()); // tried again one spacing later
                },
                () -> { }));
    }

    private synchronized void finished(Instant next) {
        running = false;
        LOG.debugf("reconcile pass %d done; next due %s", passes, next);
        if (again) {
            again = false;
            next = next == null || next.isAfter(Instant.now()) ? Instant.now() : next;
        }
        if (next != null) {
            offer(next);
        }
    }

    /** One pass: the claims', then the provisions' and snapshots'; then the earliest due time left (null: none). */
    private Uni<Instant> pass() {
        return claims.reconcile()
                .onFailure().invoke(t -> LOG.warnf("reconcile pass over claims failed: %s", t.toString()))
                .onFailure().recoverWithNull()
                .chain(() -> provisions.reconcile()
                        .onFailure().invoke(t -> LOG.warnf("provision reconcile pass failed: %s", t.toString()))
                        .onFailure().recoverWithNull())
                .chain(() -> transactions.reading(() -> SessionSql.select(NEXT_DUE)
                        .map(rows -> rows.isEmpty() ? null : SessionSql.instant(rows.get(0)[0]))));
    }
}
