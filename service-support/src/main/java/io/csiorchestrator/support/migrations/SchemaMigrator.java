package io.csiorchestrator.support.migrations;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import org.jboss.logging.Logger;

/**
 * Applies a {@link MigrationPlan} over the service's own reactive PostgreSQL pool, keeping Flyway's history table
 * ({@code flyway_schema_history}, same columns, same rows, same checksums) so that a database Flyway migrated goes on
 * here and the other way round. Blocking: it runs once, on the thread that starts the service, never on an event
 * loop.
 *
 * <p>One connection does everything: it takes the advisory lock Flyway takes for this table (so two replicas, or a
 * replica of an older build still running Flyway, never migrate at once: the second waits, then finds nothing
 * pending), creates the history table if there is none, reads it, and applies each pending script in a transaction
 * of its own together with its history row (PostgreSQL's DDL is transactional: a script that fails leaves nothing,
 * and its error names it).
 */
public final class SchemaMigrator {

    /** Flyway's history table: existing databases keep theirs. */
    public static final String HISTORY = "flyway_schema_history";

    /** Flyway's advisory lock number for a table: a constant ("Flyway" in ASCII) plus the quoted name's hash. */
    static final long FLYWAY_LOCK_BASE = 77431708279161L;

    private static final Logger LOG = Logger.getLogger(SchemaMigrator.class);

    /** What a migration run did. */
    public record Result(String schemaVersion, int applied) {
    }

    private SchemaMigrator() {
    }

    /** Applies the pending scripts of {@code scripts} to the database of {@code pool}. */
    public static Result migrate(Pool pool, List<Migration> scripts) {
        SqlConnection conn = await(pool.getConnection());
        try {
            String schema = await(conn.query("SELECT current_schema()").execute()).iterator().next().getString(0);
            long lock = FLYWAY_LOCK_BASE + ("\"" + schema + "\".\"" + HISTORY + "\"").hashCode();
            lock(conn, lock, schema);
            Result result;
            try {
                result = migrateLocked(conn, scripts);
            } catch (RuntimeException failed) {
                unlockAfterFailure(conn, lock, failed);
                throw failed;
            }
            await(conn.preparedQuery("SELECT pg_advisory_unlock($1)").execute(Tuple.of(lock)));
            return result;
        } finally {
            conn.close();
        }
    }

    /**
     * Takes the migration lock: at once when it is free; otherwise says who holds it (another replica migrating, or a
     * session stuck with it: an operator who sees this line for long ends that backend) and waits for it.
     */
    private static void lock(SqlConnection conn, long lock, String schema) {
        if (await(conn.preparedQuery("SELECT pg_try_advisory_lock($1)").execute(Tuple.of(lock))).iterator().next().getBoolean(0)) {
            return;
        }
        LOG.warnf("waiting for the schema migration lock of \"%s\".%s, held by %s", schema, HISTORY,
                lockHolder(conn, lock).orElse("a session that just released it"));
        long start = System.nanoTime();
        await(conn.preparedQuery("SELECT pg_advisory_lock($1)").execute(Tuple.of(lock)));
        LOG.infof("took the schema migration lock after %d ms", (System.nanoTime() - start) / 1_000_000);
    }

    /**
     * Who holds advisory lock {@code lock}: PostgreSQL lists a bigint key in {@code pg_locks} as its high 32 bits
     * ({@code classid}), its low 32 bits ({@code objid}) and {@code objsubid} 1. Empty when nobody holds it.
     */
    public static Optional<String> lockHolder(SqlConnection conn, long lock) {
        var rows = await(conn.preparedQuery("SELECT l.pid, a.application_name, a.client_addr::text, a.backend_start::text, "
                        + "a.state FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
                        + "AND l.granted AND l.objsubid = 1 AND l.classid::bigint = $1 AND l.objid::bigint = $2")
                .execute(Tuple.of(lock >>> 32, lock & 0xffffffffL)));
        if (rows.size() == 0) {
            return Optional.empty();
        }
        Row row = rows.iterator().next();
        return Optional.of(String.format("backend pid %d (application \"%s\", client %s, connected since %s, %s)",
                row.getInteger(0), row.getString(1), row.getString(2) == null ? "local" : row.getString(2),
                row.getString(3), row.getString(4)));
    }

    /** Releases the lock after a failed run; a failure of its own is kept beside the one that matters, never over it. */
    private static void unlockAfterFailure(SqlConnection conn, long lock, RuntimeException failed) {
        try {
            await(conn.preparedQuery("SELECT pg_advisory_unlock($1)").execute(Tuple.of(lock)));
        } catch (RuntimeException unlock) {
            failed.addSuppressed(unlock); // a broken connection: PostgreSQL releases the lock with the session
        }
    }

    private static Result migrateLocked(SqlConnection conn, List<Migration> scripts) {
        await(conn.query("CREATE TABLE IF NOT EXISTS " + HISTORY + " ("
                + "installed_rank INT NOT NULL CONSTRAINT " + HISTORY + "_pk PRIMARY KEY, "
                + "version VARCHAR(50), description VARCHAR(200) NOT NULL, type VARCHAR(20) NOT NULL, "
                + "script VARCHAR(1000) NOT NULL, checksum INTEGER, installed_by VARCHAR(100) NOT NULL, "
                + "installed_on TIMESTAMP NOT NULL DEFAULT now(), execution_time INTEGER NOT NULL, "
                + "success BOOLEAN NOT NULL); "
                + "CREATE INDEX IF NOT EXISTS " + HISTORY + "_s_idx ON " + HISTORY + " (success)").execute());
        List<MigrationPlan.Applied> history = new ArrayList<>();
        for (Row row : await(conn.query("SELECT version, script, type, checksum, success FROM " + HISTORY
                + " ORDER BY installed_rank").execute())) {
            history.add(new MigrationPlan.Applied(row.getString(0), row.getString(1), row.getString(2),
                    row.getInteger(3), row.getBoolean(4)));
        }
        MigrationPlan plan = MigrationPlan.of(scripts, history);
        if (!plan.problems().isEmpty()) {
            throw new IllegalStateException("database migrations refused, nothing applied: "
                    + String.join("; ", plan.problems()));
        }
        if (!plan.future().isEmpty()) {
            LOG.warnf("the database has migrations %s that this build does not know (a newer build applied them)",
                    plan.future());
        }
        for (Migration m : plan.pending()) {
            apply(conn, m);
        }
        String version = null;
        for (MigrationPlan.Applied row : history) {
            if (row.version() != null && (version == null || Migration.compareVersions(row.version(), version) > 0)) {
                version = row.version();
            }
        }
        if (!plan.pending().isEmpty()) {
            version = plan.pending().get(plan.pending().size() - 1).version();
        }
        LOG.infof("database schema at version %s (%d migration(s) applied)", version, plan.pending().size());
        return new Result(version, plan.pending().size());
    }

    private static void apply(SqlConnection conn, Migration m) {
        long start = System.nanoTime();
        var tx = await(conn.begin());
        try {
            await(conn.query(m.sql()).execute());
            int millis = (int) ((System.nanoTime() - start) / 1_000_000);
            await(conn.preparedQuery("INSERT INTO " + HISTORY + " (installed_rank, version, description, type, script, "
                    + "checksum, installed_by, execution_time, success) SELECT COALESCE(MAX(installed_rank), 0) + 1, "
                    + "$1, $2, 'SQL', $3, $4, current_user, $5, true FROM " + HISTORY)
                    .execute(Tuple.of(m.version(), m.description(), m.script(), m.checksum(), millis)));
            await(tx.commit());
            LOG.infof("applied migration %s in %d ms", m.script(), millis);
        } catch (RuntimeException e) {
            try {
                await(tx.rollback());
            } catch (RuntimeException ignored) {
                // the connection is closed next; PostgreSQL rolls back what is left
            }
            throw new IllegalStateException("migration " + m.script() + " failed, nothing of it applied: "
                    + e.getMessage(), e);
        }
    }

    private static <T> T await(Future<T> future) {
        try {
            return future.toCompletionStage().toCompletableFuture().get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while migrating the database", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw cause instanceof RuntimeException r ? r : new IllegalStateException(cause.getMessage(), cause);
        }
    }
}
