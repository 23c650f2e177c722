package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;

/**
 * Reads of registered volumes outside a claim transaction ({@link ClaimStore} reads and writes them inside one): the
 * row as {@link ClaimTables} selects and maps it.
 */
public final class VolumeRows {

    private static final String FIND = "SELECT " + ClaimTables.VOLUMES + " FROM volumes WHERE volume_key = $1";

    private VolumeRows() {
    }

    /** The volume {@code volumeKey} as stored, or null (a plain read, in the caller's unit of work). */
    public static Uni<VolumeEntity> find(String volumeKey) {
        return SessionSql.select(FIND, volumeKey).map(rows -> rows.isEmpty() ? null : ClaimTables.volume(rows.get(0)));
    }
}
