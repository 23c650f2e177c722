package io.csiorchestrator.claims.outbox;

import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.claims.ClaimSettings;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.jboss.logging.Logger;

/**
 * Publishes the outbox rows left behind, in commit order, on the {@link OutboxProducer} (acks=all, idempotence,
 * linger.ms=0), and marks each row published once the broker acknowledged it. Since issue 36 item 2 a process sends
 * the rows it committed itself ({@link DirectSends}, on the same producer); the relay sends the rest: rows written
 * behind another writer's unpublished row of the same topic and key, rows whose direct send failed, rows written while
 * suspended or before the writer held its lock, and the rows of writers that are gone (a kill -9 between commit and
 * send: the server dropped the writer's advisory lock with its connection). A live writer's row, and every later row
 * of its topic and key, is left to wait for it (so each topic and key's records keep their commit order).
 *
 * <p>When it runs: when a transaction left a row to it ({@link #signal()}, an in-process signal, no polling), once
 * at start (the recovery sweep), when a writer takes its lock (a restarted process: its predecessor's rows), on a
 * recheck while rows wait for live writers ({@code recheckLater}), and on a slow safety sweep
 * ({@code csi.claims.outbox.sweep-interval}, a timer on the relay's thread) that catches rows whose publish failed. One thread drains; a signal
 * during a drain schedules one more drain, so none is lost.
 *
 * <p>Several instances on one database: only the leader ({@code leader.Leadership}, a PostgreSQL
 * advisory lock) drains. On acquiring leadership it runs the recovery sweep first. A non-leader's {@link #signal()}
 * sends {@code NOTIFY csi_claims_outbox}, which the leader LISTENs to on its lock connection and turns
 * into its own signal. On losing leadership the relay stops draining (a batch already sent is not
 * recalled: across a failover, delivery is at least once).
 */
@ApplicationScoped
public class OutboxRelay {

    private static final Logger LOG = Logger.getLogger(OutboxRelay.class);

    @Inject
    Pool pool;
    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;
    @Inject
    OutboxProducer producer;

    private final ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "outbox-relay");
        t.setDaemon(true);
        return t;
    });
    private final AtomicBoolean pending = new AtomicBoolean();
    private final AtomicLong published = new AtomicLong();
    private volatile boolean suspended;
    /** The drain thread's next recheck delay while a row of the relay waits behind a writer's own (0: none waits). */
    private long recheckDelayMs;
    private volatile boolean leader;

    /**
     * The safety sweep's timer, on the relay's own thread: every {@code csi.claims.outbox.sweep-interval} (30 s) after
     * the previous sweep, for rows whose publish failed while no signal came (the broker away at send time).
     */
    void onStart(@Observes StartupEvent event) {
        long every = settings.outbox().sweepInterval().toMillis();
        executor.scheduleWithFixedDelay(() -> {
            try {
                safetySweep();
            } catch (RuntimeException e) {
                LOG.warnf("outbox safety sweep failed (due again in %d ms): %s", every, e.toString());
            }
        }, every, every, TimeUnit.MILLISECONDS);
    }

    void onStop(@Observes ShutdownEvent event) {
        stop();
    }

    /** Stops draining (the producer is {@link OutboxProducer}'s to close, after this). */
    public void stop() {
        leader = false;
        executor.shutdown();
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The recovery sweep: publishes every row left unpublished (e.g. by a crash after commit). */
    public void recover() {
        LOG.info("outbox recovery sweep");
        signal();
    }

    /**
     * This instance became the leader ({@code true}: the recovery sweep runs now) or lost leadership
     * ({@code false}: no more drains here).
     */
    public void leadershipChanged(boolean leading) {
        leader = leading;
        if (leading) {
            recover();
        }
    }

    /** Whether this relay drains (it leads). */
    public boolean isLeader() {
        return leader;
    }

    /**
     * Something was committed to the outbox: publish it now. Cheap; safe from any thread. On a
     * non-leader this is a {@code NOTIFY} to the leader.
     */
    public void signal() {
        if (suspended || !producer.started()) {
            return;
        }
        if (!leader) {
            notifyLeader();
            return;
        }
        if (pending.compareAndSet(false, true) && !submit(this::drain)) {
            pending.set(false);
        }
    }

    void safetySweep() {
        if (suspended || !leader) {
            submit(this::updatePending);
            return;
        }
        signal();
    }

    /** Runs {@code work} on the relay's thread; false once the relay stopped (a sweep or signal racing the shutdown). */
    private boolean submit(Runnable work) {
        try {
            executor.execute(work);
            return true;
        } catch (java.util.concurrent.RejectedExecutionException stopped) {
            LOG.debug("outbox relay stopped: nothing more is drained here");
            return false;
        }
    }

    /** Tells the leader (LISTENing on its lock connection) that outbox rows were committed. */
    private void notifyLeader() {
        pool.query("NOTIFY " + io.csiorchestrator.claims.leader.LeaderElection.CHANNEL).execute().subscribe().with(
                ok -> { },
                t -> LOG.debugf("NOTIFY of the leader failed (its safety sweep publishes the rows): %s", t.toString()));
    }

    /**
     * Stops publishing (signals and sweeps are ignored) until {@link #resume()}: what a process killed
     * right after its commits looks like from outside. For operators draining a node and for tests.
     */
    public void suspend() {
        suspended = true;
    }

    /** Publishing again, starting with the recovery sweep. */
    public void resume() {
        suspended = false;
        recover();
    }

    /** Whether publishing is suspended ({@link #suspend()}): writers leave their rows to the relay meanwhile. */
    public boolean suspended() {
        return suspended;
    }

    /** How many rows this relay has published since start. */
    public long publishedCount() {
        return published.get();
    }

    /**
     * The unpublished rows after {@code seq}, in commit order, each with whether its writer sends it itself: a direct row
     * whose writer's advisory lock is granted ({@link OutboxWriter}; a killed writer's lock went with its connection).
     */
    private static final String UNPUBLISHED = "WITH alive AS (SELECT (l.classid::bigint << 32) | l.objid::bigint AS writer"
            + " FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted)"
            + " SELECT seq, ce_id, ce_type, ce_time, topic, record_key, partition_no, payload, created_at, traceparent, tracestate,"
            + " (direct AND writer IN (SELECT writer FROM alive)) AS owned"
            + " FROM outbox WHERE published_at IS NULL AND seq > $2 ORDER BY seq LIMIT $1";

    private void drain() {
        pending.set(false);
        try {
            long after = 0;
            boolean behindOwned = false;
            boolean owned = false;
            int waiting = 0;
            while (!suspended && leader) {
                List<OutboxRow> rows = new ArrayList<>();
                List<OutboxRow> mine = new ArrayList<>();
                Set<String> heldKeys = new HashSet<>();
                for (Row row : pool.preparedQuery(UNPUBLISHED).execute(Tuple.of(settings.outbox().batchSize(), after))
                        .await().atMost(Duration.ofSeconds(30))) {
                    OutboxRow r = OutboxRow.of(row);
                    rows.add(r);
                    if (Boolean.TRUE.equals(row.getBoolean("owned"))) {
                        // its writer lives and sends it: this row, and every later one of its topic and key, wait for it
                        owned = true;
                        heldKeys.add(r.orderKey());
                    } else if (heldKeys.contains(r.orderKey())) {
                        behindOwned = true;
                    } else {
                        mine.add(r);
                    }
                }
                if (rows.isEmpty()) {
                    break;
                }
                waiting += rows.size() - mine.size();
                if (!publish(mine)) {
                    return;
                }
                if (rows.size() < settings.outbox().batchSize()) {
                    // Everything committed before this SELECT is published or its writer's now; a commit since then that
                    // left a row to the relay signalled, and has its own drain queued (pending was cleared when this one
                    // began): no second SELECT to find nothing.
                    break;
                }
                after = rows.get(rows.size() - 1).seq();
            }
            metrics.outboxPending(waiting); // rows left to live writers and the rows behind them
            recheckLater(behindOwned, owned);
        } catch (RuntimeException e) {
            LOG.warnf("outbox drain failed (retried by the next signal or sweep): %s", e.toString());
        }
    }

    /**
     * Rows were left to live writers. Behind one of them a row of the relay's waits (its writer marks its own row
     * published within milliseconds, and nobody signals the relay then): look again soon, 20 ms doubling to 1 s. Only
     * writers' own rows: look again in 1 s, because a writer killed now leaves them to the relay and tells no one (the
     * server merely drops its lock); a timer only while rows are outstanding, none while idle.
     */
    private void recheckLater(boolean behindOwned, boolean owned) {
        if (!behindOwned && !owned) {
            recheckDelayMs = 0;
            return;
        }
        long delay = behindOwned ? (recheckDelayMs = recheckDelayMs == 0 ? 20 : Math.min(1000, recheckDelayMs * 2)) : 1000;
        try {
            executor.schedule(this::signal, delay, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException stopped) {
            LOG.debug("outbox relay stopped: no recheck");
        }
    }

    /** Sends {@code rows} in order, marks the acknowledged ones published; false when one failed (the rest wait). */
    private boolean publish(List<OutboxRow> rows) {
        List<Future<RecordMetadata>> sends = new ArrayList<>();
        for (OutboxRow row : rows) {
            sends.add(producer.send(row, (metadata, error) -> { }));
        }
        List<Long> acked = new ArrayList<>();
        Exception failure = null;
        for (int i = 0; i < sends.size(); i++) {
            try {
                sends.get(i).get(settings.outbox().sendTimeout().toMillis(), TimeUnit.MILLISECONDS);
                acked.add(rows.get(i).seq());
            } catch (Exception e) {
                failure = e;
                break;
            }
        }
        if (!acked.isEmpty()) {
            pool.preparedQuery(MARK_PUBLISHED).execute(Tuple.of(acked.toArray(new Long[0]))).await().atMost(Duration.ofSeconds(30));
            published.addAndGet(acked.size());
        }
        if (failure != null) {
            updatePending();
            LOG.warnf("outbox publish failed after %d of %d records (retried by the next signal or sweep): %s",
                    acked.size(), rows.size(), failure.toString());
            return false;
        }
        return true;
    }

    /** Marks rows published, by their seqs: one statement for any number of rows. */
    private static final String MARK_PUBLISHED = "UPDATE outbox SET published_at = now() WHERE seq = ANY($1)";

    /** Refreshes the {@code csi.outbox.pending} gauge (the partial index on unpublished rows keeps it cheap). */
    private void updatePending() {
        try {
            Row row = pool.query("SELECT count(*) AS n FROM outbox WHERE published_at IS NULL").execute()
                    .await().atMost(Duration.ofSeconds(30)).iterator().next();
            metrics.outboxPending(row.getLong("n"));
        } catch (RuntimeException e) {
            LOG.debugf("could not count unpublished outbox rows: %s", e.toString());
        }
    }
}
