package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import io.smallrye.common.vertx.VertxContext;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.SqlConnection;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.function.Supplier;

/**
 * claim-service's units of work on PostgreSQL (issue 36): a connection of the reactive pool, kept as a local of the
 * Vert.x context the work runs on, where {@link SessionSql} finds it. {@link #inTransaction} runs the work in one
 * transaction (committed when its Uni succeeds, rolled back when it fails or is cancelled); {@link #reading} on a
 * connection without one (reads only). Nested, the work joins the connection already open; a transaction asked for
 * inside a {@link #reading} begins one on that connection, so one unit of work never holds two connections (a lock
 * taken on one would wait for the other forever).
 */
@ApplicationScoped
public class Transactions {

    /** The open connection of the work running on a Vert.x context, and whether it is in a transaction. */
    static final class Open {
        final SqlConnection connection;
        boolean inTransaction;

        Open(SqlConnection connection, boolean inTransaction) {
            this.connection = connection;
            this.inTransaction = inTransaction;
        }
    }

    private static final Object KEY = Transactions.class;
    private static final String ONE_SNAPSHOT = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

    @Inject
    Pool pool;

    /** Runs {@code work} in a transaction: joins the one open here, or begins one (on the open connection, or a new one). */
    public <T> Uni<T> inTransaction(Supplier<Uni<T>> work) {
        return Uni.createFrom().deferred(() -> {
            Context context = context();
            Open open = context.getLocal(KEY);
            if (open == null) {
                return pool.withTransaction(connection -> on(context, new Open(connection, true), work));
            }
            if (open.inTransaction) {
                return work.get();
            }
            return open.connection.begin().chain(transaction -> {
                open.inTransaction = true;
                return Uni.createFrom().deferred(() -> work.get())
                        .onTermination().invoke(() -> open.inTransaction = false)
                        .call(() -> transaction.commit())
                        .onFailure().call(() -> transaction.rollback().onFailure().recoverWithNull());
            });
        });
    }

    /** Runs {@code work} on a connection without a transaction (reads), or on the one open here. */
    public <T> Uni<T> reading(Supplier<Uni<T>> work) {
        return Uni.createFrom().deferred(() -> {
            Context context = context();
            if (context.getLocal(KEY) != null) {
                return work.get();
            }
            return pool.withConnection(connection -> on(context, new Open(connection, false), work));
        });
    }

    /**
     * Runs {@code work} reading one snapshot (a read-only REPEATABLE READ transaction), or on the connection open here.
     * For a view read by several statements (a volume and its claims, conditions and usage): under READ COMMITTED
     * each statement sees what was committed when it began, so a claim step committing between two of them showed a
     * volume beside claims of another moment.
     */
    public <T> Uni<T> readingOneSnapshot(Supplier<Uni<T>> work) {
        return Uni.createFrom().deferred(() -> {
            Context context = context();
            if (context.getLocal(KEY) != null) {
                return work.get();
            }
            return pool.withTransaction(connection -> connection.query(ONE_SNAPSHOT).execute()
                    .chain(() -> on(context, new Open(connection, true), work)));
        });
    }

    private static <T> Uni<T> on(Context context, Open open, Supplier<Uni<T>> work) {
        context.putLocal(KEY, open);
        return Uni.createFrom().deferred(() -> work.get()).onTermination().invoke(() -> {
            if (context.getLocal(KEY) == open) {
                context.removeLocal(KEY);
            }
        });
    }

    private static Context context() {
        Context context = Vertx.currentContext();
        // The connection is a local of the context: on an event loop's own context (not a duplicate of it, as each
        // request, record and timer of Quarkus gets) two unrelated units of work would share it; refused, as Panache did.
        if (context == null || !VertxContext.isDuplicatedContext(context)) {
            throw new IllegalStateException("a unit of work on PostgreSQL outside a duplicated Vert.x context ("
                    + (context == null ? "none" : "the event loop's own") + ")");
        }
        return context;
    }

    /** The connection of the work running here; fails when none is open. */
    static SqlConnection current() {
        Context context = Vertx.currentContext();
        Open open = context == null ? null : context.getLocal(KEY);
        if (open == null) {
            throw new IllegalStateException("a statement outside Transactions.inTransaction or Transactions.reading");
        }
        return open.connection;
    }
}
