package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import java.util.Collection;
import java.util.List;

/**
 * Volumes, and the claims of them, read without a lock for the REST paths (call inside a {@link Transactions} unit of
 * work). The rows are copies: a change to one is written nowhere; a volume is changed in a claim transaction, through
 * {@link ClaimStore}.
 */
public final class VolumeRows {

    private static final String SELECT_VOLUMES = "SELECT " + ClaimTables.VOLUMES + " FROM volumes";
    private static final String SELECT_CLAIMS = "SELECT " + ClaimTables.CLAIMS + " FROM claims";

    private VolumeRows() {
    }

    /** The volume of {@code volumeKey}, or null. */
    public static Uni<VolumeEntity> find(String volumeKey) {
        return SessionSql.select(SELECT_VOLUMES + " WHERE volume_key = $1", volumeKey)
                .map(rows -> rows.isEmpty() ? null : ClaimTables.volume(rows.get(0)));
    }

    /** The volumes among {@code volumeKeys} that are registered. */
    public static Uni<List<VolumeEntity>> findAll(Collection<String> volumeKeys) {
        if (volumeKeys.isEmpty()) {
            return Uni.createFrom().item(List.of());
        }
        return SessionSql.select(SELECT_VOLUMES + " WHERE volume_key = ANY(CAST($1 AS varchar[]))",
                (Object) volumeKeys.toArray(new String[0])).map(VolumeRows::volumes);
    }

    /** The volumes of {@code namespace} (of every namespace when null), by key. */
    public static Uni<List<VolumeEntity>> list(String namespace) {
        return (namespace == null ? SessionSql.select(SELECT_VOLUMES + " ORDER BY volume_key")
                : SessionSql.select(SELECT_VOLUMES + " WHERE namespace = $1 ORDER BY volume_key", namespace))
                .map(VolumeRows::volumes);
    }

    /** Every current claim (not past), of every volume. */
    public static Uni<List<ClaimEntity>> currentClaims() {
        return SessionSql.select(SELECT_CLAIMS + " WHERE past = false").map(VolumeRows::claims);
    }

    /** The volume's claims, current and past, oldest first. */
    public static Uni<List<ClaimEntity>> claimsOf(String volumeKey) {
        return SessionSql.select(SELECT_CLAIMS + " WHERE volume_key = $1 ORDER BY created_at", volumeKey).map(VolumeRows::claims);
    }

    private static List<VolumeEntity> volumes(List<Object[]> rows) {
        return rows.stream().map(ClaimTables::volume).toList();
    }

    private static List<ClaimEntity> claims(List<Object[]> rows) {
        return rows.stream().map(ClaimTables::claim).toList();
    }
}
