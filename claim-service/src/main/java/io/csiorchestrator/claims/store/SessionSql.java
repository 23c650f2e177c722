package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/**
 * Prepared statements run on the connection of the caller's unit of work ({@link Transactions}), so inside its
 * transaction when it has one (issue 36 item 3): the reactive PostgreSQL client's statement, prepared once per
 * connection. SQL in PostgreSQL's own form ({@code $1}, {@code $2}, ...).
 *
 * <p>Parameters as the client takes them, except {@link Instant}, sent as a UTC {@link OffsetDateTime} (timestamptz).
 * Results as the client gives them: text as String, integers as Integer or Long, timestamptz as OffsetDateTime.
 */
public final class SessionSql {

    private SessionSql() {
    }

    /** Runs {@code sql} (INSERT, UPDATE, DELETE) in the current unit of work; its update count. */
    public static Uni<Integer> update(String sql, Object... params) {
        return Uni.createFrom().deferred(() -> Transactions.current().preparedQuery(sql).execute(Tuple.from(bind(params))))
                .map(result -> result.rowCount());
    }

    /** Runs {@code sql} (INSERT, UPDATE) once per row of {@code rows}, as one batch, in the current unit of work. */
    public static Uni<Void> updateAll(String sql, List<Object[]> rows) {
        if (rows.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        if (rows.size() == 1) {
            return update(sql, rows.get(0)).replaceWithVoid();
        }
        List<Tuple> bound = new ArrayList<>(rows.size());
        for (Object[] row : rows) {
            bound.add(Tuple.from(bind(row)));
        }
        return Uni.createFrom().deferred(() -> Transactions.current().preparedQuery(sql).executeBatch(bound)).replaceWithVoid();
    }

    /** Runs the SELECT {@code sql} in the current unit of work; its rows, each one value per column. */
    public static Uni<List<Object[]>> select(String sql, Object... params) {
        return Uni.createFrom().deferred(() -> Transactions.current().preparedQuery(sql).execute(Tuple.from(bind(params))))
                .map(result -> {
                    List<Object[]> rows = new ArrayList<>(result.size());
                    for (Row row : result) {
                        Object[] values = new Object[row.size()];
                        for (int i = 0; i < values.length; i++) {
                            values[i] = row.getValue(i);
                        }
                        rows.add(values);
                    }
                    return rows;
                });
    }

    /** Runs the SELECT {@code sql} of one text column in the current unit of work; its values in order. */
    public static Uni<List<String>> strings(String sql, Object... params) {
        return select(sql, params).map(rows -> {
            List<String> values = new ArrayList<>(rows.size());
            for (Object[] row : rows) {
                values.add((String) row[0]);
            }
            return values;
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
