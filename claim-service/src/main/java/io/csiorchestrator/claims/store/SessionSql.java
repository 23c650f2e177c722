package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.Panache;
import io.smallrye.mutiny.Uni;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.hibernate.reactive.mutiny.Mutiny;
import org.hibernate.reactive.mutiny.impl.MutinySessionImpl;
import org.hibernate.reactive.pool.ReactiveConnection;

/**
 * Prepared statements run on the connection of the caller's Hibernate Reactive session, so inside its transaction
 * (issue 36 item 3): the reactive PostgreSQL client's statement, with none of Hibernate's query machinery around it
 * (no native-query plan, no parameter and result-set mapping per execution, no flush before it). SQL in PostgreSQL's
 * own form ({@code $1}, {@code $2}, ...). Nothing pending in the session is flushed first: use it only for tables the
 * session does not manage (the outbox, handled requests, plugin rows), or after an explicit flush.
 *
 * <p>Parameters as the client takes them, except {@link Instant}, sent as a UTC {@link OffsetDateTime} (timestamptz).
 * Results as the client gives them: text as String, integers as Integer or Long, timestamptz as OffsetDateTime.
 */
public final class SessionSql {

    private SessionSql() {
    }

    /** Runs {@code sql} (INSERT, UPDATE, DELETE) in the current session's transaction; its update count. */
    public static Uni<Integer> update(String sql, Object... params) {
        Object[] bound = bind(params);
        return Panache.getSession().chain(s -> Uni.createFrom().completionStage(() -> connection(s).update(sql, bound)));
    }

    /** Runs {@code sql} (INSERT, UPDATE) once per row of {@code rows}, as one batch, in the current session's transaction. */
    public static Uni<Void> updateAll(String sql, List<Object[]> rows) {
        if (rows.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        if (rows.size() == 1) {
            return update(sql, rows.get(0)).replaceWithVoid();
        }
        List<Object[]> bound = new ArrayList<>(rows.size());
        for (Object[] row : rows) {
            bound.add(bind(row));
        }
        return Panache.getSession().chain(s -> Uni.createFrom().completionStage(() -> connection(s).update(sql, bound)))
                .replaceWithVoid();
    }

    /** Runs the SELECT {@code sql} in the current session's transaction; its rows, each one value per column. */
    public static Uni<List<Object[]>> select(String sql, Object... params) {
        Object[] bound = bind(params);
        return Panache.getSession().chain(s -> Uni.createFrom().completionStage(() -> connection(s).select(sql, bound)))
                .map(result -> {
                    List<Object[]> rows = new ArrayList<>(result.size());
                    result.forEachRemaining(rows::add);
                    return rows;
                });
    }

    /** A timestamptz column's value as an Instant (null stays null). */
    public static Instant instant(Object value) {
        if (value == null || value instanceof Instant) {
            return (Instant) value;
        }
        if (value instanceof OffsetDateTime o) {
            return o.toInstant();
        }
        if (value instanceof java.time.LocalDateTime l) {
            return l.toInstant(ZoneOffset.UTC);
        }
        throw new IllegalStateException("unexpected timestamp type " + value.getClass().getName());
    }

    private static ReactiveConnection connection(Mutiny.Session session) {
        if (session instanceof MutinySessionImpl impl) {
            return impl.getReactiveConnection();
        }
        throw new IllegalStateException("a Hibernate Reactive session of an unexpected kind: " + session.getClass().getName());
    }

    private static Object[] bind(Object[] params) {
        Object[] bound = params.clone();
        for (int i = 0; i < bound.length; i++) {
            if (bound[i] instanceof Instant instant) {
                bound[i] = OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
            }
        }
        return bound;
    }
}
