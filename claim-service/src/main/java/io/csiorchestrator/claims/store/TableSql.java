package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import java.util.Arrays;
import java.util.List;

/**
 * The fixed statements of a table read and written as whole rows ({@link ProvisionRows}, {@link SnapshotRows},
 * {@link VolumeListingRows}): its column list, an INSERT of every column and an UPDATE of every column but the key
 * (the first), in {@link SessionSql}'s form.
 */
final class TableSql {

    final String table;
    final String[] columns;
    /** The columns, comma-separated: what a SELECT of the whole row names. */
    final String list;
    final String insert;
    final String update;

    TableSql(String table, String... columns) {
        this.table = table;
        this.columns = columns;
        this.list = String.join(", ", columns);
        StringBuilder values = new StringBuilder();
        StringBuilder set = new StringBuilder();
        for (int i = 1; i <= columns.length; i++) {
            values.append(i == 1 ? "" : ", ").append('$').append(i);
            if (i > 1) {
                set.append(i == 2 ? "" : ", ").append(columns[i - 1]).append(" = $").append(i);
            }
        }
        this.insert = "INSERT INTO " + table + " (" + list + ") VALUES (" + values + ")";
        this.update = "UPDATE " + table + " SET " + set + " WHERE " + columns[0] + " = $1";
    }

    /** {@code SELECT <every column> FROM <table> WHERE <key> = $1}, then {@code tail} (e.g. " FOR UPDATE"). */
    String byKey(String tail) {
        return "SELECT " + list + " FROM " + table + " WHERE " + columns[0] + " = $1" + tail;
    }

    /**
     * Writes the row whose values are now {@code values} when they differ from {@code stored} (its values as read or
     * inserted): a changed row is updated, an unchanged one not written. A row deleted meanwhile updates nothing.
     */
    Uni<Void> saveIfChanged(Object[] values, Object[] stored) {
        return Arrays.equals(values, stored) ? Uni.createFrom().voidItem() : SessionSql.update(update, values).replaceWithVoid();
    }

    /** The first row mapped, or null. */
    static <T> T first(List<Object[]> rows, java.util.function.Function<Object[], T> from) {
        return rows.isEmpty() ? null : from.apply(rows.get(0));
    }

    static Long longOrNull(Object value) {
        return value == null ? null : ((Number) value).longValue();
    }

    static int intValue(Object value) {
        return ((Number) value).intValue();
    }
}
