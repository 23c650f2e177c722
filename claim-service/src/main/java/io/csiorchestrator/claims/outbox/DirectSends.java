package io.csiorchestrator.claims.outbox;

import io.quarkus.runtime.ShutdownEvent;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jboss.logging.Logger;

/**
 * Publish after commit (issue 36 item 2): the rows a transaction wrote as direct ({@link Outbox#add}) are sent by this
 * process right after the commit ({@link OutboxProducer}), and marked published once acknowledged, many rows in one
 * statement. No SELECT of the outbox, no hand-over to the leader: each replica sends what it committed.
 *
 * <p>Order. One topic and key's rows leave in commit order: a row is queued under its topic and key when it is
 * inserted (the inserts of one volume's rows happen under its lock, so insert order is commit order), is sent only once
 * its transaction committed and every row queued before it was sent, and all sends run on one thread in queue order
 * (the idempotent producer keeps that order on the partition). A rolled-back transaction's rows leave the queue unsent.
 * Across replicas, {@link Outbox#add} writes a row as direct only when no earlier row of its topic and key is still
 * unpublished but another writer's or the relay's; otherwise the relay sends it, after those ({@link OutboxRelay}).
 *
 * <p>Failures. A row whose send fails (the broker refused it, timed out) is handed to the relay: one UPDATE sets it not
 * direct (retried until the database takes it), then the relay publishes it and holds back the later rows of its key.
 * A mark that fails is retried (the rows were delivered; a process killed first leaves them to the relay, which sends
 * them again: at least once, consumers dedupe by ce_id).
 */
@ApplicationScoped
public class DirectSends {

    private static final Logger LOG = Logger.getLogger(DirectSends.class);
    /** How long a failed mark or hand-over waits before it is tried again (the database is away or refused it). */
    private static final Duration RETRY = Duration.ofMillis(500);

    @Inject
    OutboxRelay relay;
    @Inject
    OutboxProducer producer;
    @Inject
    Pool pool;

    /** The rows not yet sent, per topic and key, in insert order. Guarded by {@code this}. */
    private final Map<String, ArrayDeque<Pending>> queues = new HashMap<>();
    private final ExecutorService sender = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outbox-direct");
        t.setDaemon(true);
        return t;
    });
    /** Marks rows published by their ce_ids (unique, indexed): one statement for any number of rows. */
    private static final String MARK_PUBLISHED = "UPDATE outbox SET published_at = now() WHERE ce_id = ANY($1)";
    /** Topics and keys with rows on their way to the relay, and how many. Guarded by {@code this}. */
    private final Map<String, Integer> handingOver = new HashMap<>();
    private final ConcurrentLinkedQueue<String> acked = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean marking = new AtomicBoolean();
    private final AtomicLong sent = new AtomicLong();
    /** A mark or hand-over failed and none succeeded since (its retries log at DEBUG). */
    private volatile boolean databaseFailing;
    private final AtomicLong handedOver = new AtomicLong();

    /** A row queued for its direct send; {@code committed} once its transaction committed. Guarded by the queues' lock. */
    static final class Pending {
        final OutboxRow row;
        /** Its transaction's rows not yet answered by the broker: the last answer marks them, in one statement. */
        final AtomicInteger unanswered;
        boolean committed;

        Pending(OutboxRow row, AtomicInteger unanswered) {
            this.row = row;
            this.unanswered = unanswered;
        }
    }

    void onStop(@Observes ShutdownEvent event) {
        sender.shutdown();
        try {
            sender.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** {@code row} was inserted as direct in {@code batch}'s transaction: it takes its place in its key's queue now. */
    void inserted(OutboxBatch batch, OutboxRow row) {
        batch.unanswered.incrementAndGet();
        Pending p = new Pending(row, batch.unanswered);
        synchronized (this) {
            queues.computeIfAbsent(row.orderKey(), k -> new ArrayDeque<>()).addLast(p);
        }
        batch.direct.add(p);
    }

    /** {@code batch}'s transaction committed: its rows may go, each after the rows queued before it. */
    void committed(OutboxBatch batch) {
        if (batch.direct.isEmpty()) {
            return;
        }
        synchronized (this) {
            batch.direct.forEach(p -> p.committed = true);
        }
        pumpLater(batch);
    }

    /**
     * {@code batch}'s transaction failed or was cancelled: its rows leave the queues (the rows queued behind them may
     * go) and are handed to the relay, because a failure reported after the COMMIT was sent (a connection lost then)
     * leaves it unknown whether they exist; for rows that were rolled back the hand-over changes nothing.
     */
    void failed(OutboxBatch batch) {
        if (batch.direct.isEmpty()) {
            return;
        }
        synchronized (this) {
            for (Pending p : batch.direct) {
                ArrayDeque<Pending> q = queues.get(p.row.orderKey());
                if (q != null) {
                    q.remove(p);
                }
            }
        }
        handOver(batch.direct.stream().map(p -> p.row).toList(), "its transaction failed");
        pumpLater(batch);
    }

    private void pumpLater(OutboxBatch batch) {
        Set<String> keys = new LinkedHashSet<>();
        batch.direct.forEach(p -> keys.add(p.row.orderKey()));
        try {
            sender.execute(() -> pump(keys));
        } catch (RejectedExecutionException stopped) {
            LOG.debug("stopping: rows not sent directly are left to the relay of whoever runs next");
        }
    }

    /** On the sender thread: sends the committed heads of {@code keys}' queues, in queue order. */
    private void pump(Set<String> keys) {
        List<Pending> ready = new ArrayList<>();
        synchronized (this) {
            for (String key : keys) {
                ArrayDeque<Pending> q = queues.get(key);
                while (q != null && !q.isEmpty() && q.peekFirst().committed) {
                    ready.add(q.pollFirst());
                }
                if (q != null && q.isEmpty()) {
                    queues.remove(key);
                }
            }
        }
        for (Pending p : ready) {
            OutboxRow row = p.row;
            if (relay.suspended()) {
                handOver(List.of(row), "the relay is suspended");
                answered(p);
                continue;
            }
            try {
                producer.send(row, (metadata, error) -> {
                    if (error == null) {
                        sent.incrementAndGet();
                        acked.add(row.ceId());
                    } else {
                        LOG.warnf("%s record %s (key %s) not delivered (%s): handed to the outbox relay", row.topic(),
                                row.ceId(), row.recordKey(), error.toString());
                        handOver(List.of(row), error.toString());
                    }
                    answered(p);
                });
            } catch (RuntimeException e) {
                LOG.warnf("%s record %s (key %s) not sent (%s): handed to the outbox relay", row.topic(), row.ceId(),
                        row.recordKey(), e.toString());
                handOver(List.of(row), e.toString());
                answered(p);
            }
        }
    }

    /**
     * {@code p} was answered (or will not be sent here): once its transaction's last row was, the acknowledged rows are
     * marked, a transaction's rows in one statement (a mark in flight takes later ones along when it ends).
     */
    private void answered(Pending p) {
        if (p.unanswered.decrementAndGet() == 0) {
            mark();
        }
    }

    /** Marks every acknowledged row published, in one statement per round; one round at a time. */
    private void mark() {
        if (!marking.compareAndSet(false, true)) {
            return;
        }
        List<String> ceIds = new ArrayList<>();
        for (String ceId; (ceId = acked.poll()) != null; ) {
            ceIds.add(ceId);
        }
        if (ceIds.isEmpty()) {
            marking.set(false);
            if (!acked.isEmpty()) {
                mark();
            }
            return;
        }
        pool.preparedQuery(MARK_PUBLISHED).execute(Tuple.of(ceIds.toArray(new String[0]))).subscribe().with(
                done -> {
                    databaseFailing = false;
                    marking.set(false);
                    if (!acked.isEmpty()) {
                        mark();
                    }
                },
                failure -> {
                    acked.addAll(ceIds);
                    marking.set(false);
                    LOG.logf(failingLevel(), "marking %d delivered outbox rows published failed (tried again in %d ms): %s",
                            ceIds.size(), RETRY.toMillis(), failure.toString());
                    Uni.createFrom().voidItem().onItem().delayIt().by(RETRY).subscribe().with(v -> mark());
                });
    }

    /**
     * Makes {@code rows} the relay's (not direct) and signals it; retried until the database takes it. Until then their
     * topics and keys take no direct row ({@link #handingOver}): a later row of theirs must not overtake them.
     */
    private void handOver(List<OutboxRow> rows, String why) {
        if (rows.isEmpty()) {
            return;
        }
        synchronized (this) {
            rows.forEach(r -> handingOver.merge(r.orderKey(), 1, Integer::sum));
        }
        String[] ceIds = rows.stream().map(OutboxRow::ceId).toArray(String[]::new);
        pool.preparedQuery("UPDATE outbox SET direct = false WHERE ce_id = ANY($1) AND published_at IS NULL")
                .execute(Tuple.of(ceIds)).subscribe().with(
                        done -> {
                            databaseFailing = false;
                            synchronized (this) {
                                rows.forEach(r -> handingOver.computeIfPresent(r.orderKey(), (k, n) -> n == 1 ? null : n - 1));
                            }
                            handedOver.addAndGet(done.rowCount());
                            LOG.debugf("%d outbox rows handed to the relay: %s", done.rowCount(), why);
                            relay.signal();
                        },
                        failure -> {
                            synchronized (this) {
                                rows.forEach(r -> handingOver.computeIfPresent(r.orderKey(), (k, n) -> n == 1 ? null : n - 1));
                            }
                            LOG.logf(failingLevel(), "handing %d outbox rows to the relay failed (tried again in %d ms): %s",
                                    rows.size(), RETRY.toMillis(), failure.toString());
                            Uni.createFrom().voidItem().onItem().delayIt().by(RETRY).subscribe().with(v -> handOver(rows, why));
                        });
    }

    /** WARN for the first failure of a statement here after a success, DEBUG for its retries (a database outage). */
    private Logger.Level failingLevel() {
        boolean first = !databaseFailing;
        databaseFailing = true;
        return first ? Logger.Level.WARN : Logger.Level.DEBUG;
    }

    /** Whether a row of {@code orderKey} is being handed to the relay: a new row of it is the relay's too. */
    synchronized boolean handingOver(String orderKey) {
        return handingOver.containsKey(orderKey);
    }

    /** How many rows this process sent directly and the broker acknowledged. */
    public long sentCount() {
        return sent.get();
    }

    /** How many rows this process handed to the relay after a failed direct send. */
    public long handedOverCount() {
        return handedOver.get();
    }
}
