package io.csiorchestrator.claims.leader;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.pgclient.PgConnection;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jboss.logging.Logger;

/**
 * Leadership among the claim-service instances of one database: whoever holds the PostgreSQL
 * session-level advisory lock {@link #LOCK_KEY} leads. The lock is taken with
 * {@code pg_try_advisory_lock} on one dedicated connection (never a pooled one: a session lock lives
 * with its connection), which this class keeps open for as long as it leads.
 *
 * <ul>
 *   <li>Not leading: every {@code retryInterval} it tries the lock again (opening the connection if
 *       needed). When the leader's connection dies the server releases the lock, and the next try here
 *       takes it.</li>
 *   <li>Lost the lead: it waits one full {@code retryInterval} before its first try, so a standby
 *       takes over rather than the instance whose connection just failed (whose network or server
 *       session is the suspect); the lead never flaps back within one interval.</li>
 *   <li>Leading: it {@code LISTEN}s on {@link #CHANNEL} and {@link #DUE_CHANNEL} on the same connection (before it reports
 *       leadership, so no commit falls between the recovery sweep and the first notification) and
 *       reports every notification; every {@code retryInterval} it checks the connection with a
 *       {@code SELECT 1} (bounded by the interval): a closed connection or a failed check ends
 *       leadership at once (the connection is closed, so the server lets the lock go too).</li>
 * </ul>
 *
 * All state changes run on one Vert.x context; the callbacks must not block.
 */
public final class LeaderElection implements AutoCloseable {

    /** The advisory lock key: "csiclaim" in ASCII, one key for every claim-service of a database. */
    public static final long LOCK_KEY = 0x637369636c61696dL;
    /** The NOTIFY channel: outbox rows were committed. */
    public static final String CHANNEL = "csi_claims_outbox";
    /** The NOTIFY channel of due times (migration V8_1, a trigger): a row falls due at the payload (epoch ms). */
    public static final String DUE_CHANNEL = "csi_claims_due";
    /** The application_name of the dedicated connection (visible in pg_stat_activity). */
    public static final String APPLICATION_NAME = "claim-service-leader";

    private static final Logger LOG = Logger.getLogger(LeaderElection.class);

    private final Vertx vertx;
    private final PgConnectOptions options;
    private final long lockKey;
    private final Duration retryInterval;
    private final Consumer<Boolean> onLeadership;
    private final Runnable onNotification;
    private final Consumer<String> onDue;
    private final AtomicLong notifications = new AtomicLong();
    private final AtomicLong losses = new AtomicLong();

    /** This process's outbox writer key ({@code outbox.OutboxWriter}), held as an advisory lock on the same connection; 0: none. */
    private long writerKey;
    private Consumer<Boolean> onWriterLock = held -> { };
    private volatile PgConnection connection;
    private volatile boolean leader;
    private volatile boolean closed;
    private volatile int backendPid = -1;
    private boolean busy;
    private long timerId = -1;
    /** No try before this (System.nanoTime): one interval after a loss. */
    private volatile long holdOffUntil = System.nanoTime();

    /**
     * @param onLeadership called with {@code true} once this instance leads (lock held, LISTEN in place)
     *                     and with {@code false} once it lost the lock (connection gone)
     * @param onNotification called for every notification on {@link #CHANNEL} while leading
     */
    public LeaderElection(Vertx vertx, PgConnectOptions options, long lockKey, Duration retryInterval,
            Consumer<Boolean> onLeadership, Runnable onNotification) {
        this(vertx, options, lockKey, retryInterval, onLeadership, onNotification, due -> { });
    }

    /** @param onDue called with the payload of every notification on {@link #DUE_CHANNEL} while leading */
    public LeaderElection(Vertx vertx, PgConnectOptions options, long lockKey, Duration retryInterval,
            Consumer<Boolean> onLeadership, Runnable onNotification, Consumer<String> onDue) {
        this.onDue = Objects.requireNonNull(onDue);
        this.vertx = Objects.requireNonNull(vertx);
        this.options = new PgConnectOptions(options).addProperty("application_name", APPLICATION_NAME);
        this.lockKey = lockKey;
        this.retryInterval = retryInterval;
        this.onLeadership = onLeadership;
        this.onNotification = onNotification;
    }

    /**
     * Also holds {@code key} (the process's outbox writer key) as a session advisory lock on the dedicated connection,
     * taken whenever the connection is opened, leader or not; {@code onHeld} hears {@code true} once it is taken and
     * {@code false} when the connection is gone. Call before {@link #start()}.
     */
    public LeaderElection withWriterLock(long key, Consumer<Boolean> onHeld) {
        this.writerKey = key;
        this.onWriterLock = Objects.requireNonNull(onHeld);
        return this;
    }

    /** Tries at once, then every retry interval. */
    public void start() {
        vertx.runOnContext(v -> {
            tick();
            timerId = vertx.setPeriodic(Math.max(50, retryInterval.toMillis()), id -> tick());
        });
    }

    /** Whether this instance holds the lock (as far as it knows: until its connection check fails). */
    public boolean isLeader() {
        return leader;
    }

    /** The server process id of the dedicated connection ({@code -1} without one). */
    public int backendPid() {
        return backendPid;
    }

    /** How many times this instance lost the lead (each loss counted once, after the callback ran). */
    public long losses() {
        return losses.get();
    }

    /** How many notifications arrived while leading. */
    public long notifications() {
        return notifications.get();
    }

    /** Stops trying and closes the dedicated connection (which releases the lock). */
    @Override
    public void close() {
        closed = true;
        vertx.runOnContext(v -> {
            if (timerId >= 0) {
                vertx.cancelTimer(timerId);
            }
            PgConnection c = connection;
            if (c != null) {
                c.close();
            }
            lost(c, "closed");
        });
    }

    private void tick() {
        if (busy || closed || (!leader && System.nanoTime() - holdOffUntil < 0)) {
            return;
        }
        busy = true;
        Future<Void> round = leader ? check() : tryAcquire();
        round.onComplete(ar -> {
            busy = false;
            if (ar.failed()) {
                LOG.debugf("leader election round failed: %s", ar.cause().toString());
            }
        });
    }

    /** Leading: is the connection still there? A failed or slow check ends leadership. */
    private Future<Void> check() {
        PgConnection c = connection;
        if (c == null) {
            lost(null, "no connection");
            return Future.succeededFuture();
        }
        return c.query("SELECT 1").execute()
                .timeout(Math.max(100, retryInterval.toMillis()), java.util.concurrent.TimeUnit.MILLISECONDS)
                .<Void>mapEmpty()
                .onFailure(t -> {
                    LOG.warnf("leader connection check failed (%s): giving up leadership", t.toString());
                    c.close();
                    lost(c, "connection check failed");
                });
    }

    private Future<Void> tryAcquire() {
        Future<PgConnection> conn = connection != null ? Future.succeededFuture(connection) : connect();
        return conn.compose(c -> c.preparedQuery("SELECT pg_try_advisory_lock($1) AS locked").execute(Tuple.of(lockKey))
                .compose(rows -> {
                    Row row = rows.iterator().next();
                    if (!Boolean.TRUE.equals(row.getBoolean("locked"))) {
                        return Future.<Void>succeededFuture();
                    }
                    return c.query("LISTEN " + CHANNEL + "; LISTEN " + DUE_CHANNEL).execute().<Void>mapEmpty().onSuccess(v -> {
                        if (closed || connection != c) {
                            c.close();
                            return;
                        }
                        leader = true;
                        LOG.infof("leadership acquired (advisory lock %d, backend pid %d): this instance runs the outbox relay and the reconciler",
                                lockKey, backendPid);
                        onLeadership.accept(true);
                    });
                }))
                .onFailure(t -> {
                    PgConnection c = connection;
                    if (c != null) {
                        c.close();
                        connection = null;
                        backendPid = -1;
                    }
                });
    }

    private Future<PgConnection> connect() {
        return PgConnection.connect(vertx, options).map(this::opened).compose(c -> writerKey == 0 ? Future.succeededFuture(c)
                : c.preparedQuery("SELECT pg_try_advisory_lock($1) AS locked").execute(Tuple.of(writerKey)).map(rows -> {
                    if (Boolean.TRUE.equals(rows.iterator().next().getBoolean("locked")) && connection == c) {
                        LOG.infof("outbox writer lock %d taken (backend pid %d): this instance sends the outbox rows it commits",
                                writerKey, backendPid);
                        onWriterLock.accept(true);
                    } else {
                        LOG.warnf("outbox writer lock %d not taken: this instance's rows go through the relay", writerKey);
                    }
                    return c;
                }));
    }

    private PgConnection opened(PgConnection c) {
        if (closed) {
            c.close();
            throw new IllegalStateException("leader election closed");
        }
        connection = c;
        backendPid = c.processId();
        c.closeHandler(v -> lost(c, "connection closed"));
        c.exceptionHandler(t -> LOG.debugf("leader connection error: %s", t.toString()));
        c.notificationHandler(n -> {
            if (leader && CHANNEL.equals(n.getChannel())) {
                notifications.incrementAndGet();
                onNotification.run();
            } else if (leader && DUE_CHANNEL.equals(n.getChannel())) {
                onDue.accept(n.getPayload());
            }
        });
        return c;
    }

    /** The connection {@code c} is gone (or given up): no lock any more. */
    private void lost(PgConnection c, String why) {
        if (c != null && connection != c) {
            return;
        }
        connection = null;
        backendPid = -1;
        if (writerKey != 0) {
            onWriterLock.accept(false); // the server let the writer lock go with the connection
        }
        if (leader) {
            leader = false;
            holdOffUntil = System.nanoTime() + retryInterval.toNanos();
            if (closed) {
                LOG.infof("leadership released (%s): another instance takes over the outbox relay and the reconciler", why);
            } else {
                LOG.warnf("leadership lost (%s): outbox relay and reconciler stop here until this instance leads again", why);
            }
            onLeadership.accept(false);
            losses.incrementAndGet();
        }
    }
}
