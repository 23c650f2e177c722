package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import java.time.Instant;
import java.util.List;

/**
 * The last usage a node's worker reported for a volume published there (node-events volume-usage, issue 34): a row of
 * {@code volume_usage}, read and written with the statements here (call inside a {@link Transactions} unit of work).
 */
public class VolumeUsageEntity {

    private static final String COLUMNS = "usage_key, volume_key, node_id, plugin_id, bytes_total, bytes_available,"
            + " bytes_used, inodes_total, inodes_free, inodes_used, observed_at";

    public String usageKey;
    public String volumeKey;
    public String nodeId;
    public String pluginId;
    public Long bytesTotal;
    public Long bytesAvailable;
    public Long bytesUsed;
    public Long inodesTotal;
    public Long inodesFree;
    public Long inodesUsed;
    public Instant observedAt;

    public static String key(String volumeKey, String nodeId) {
        return volumeKey + "@" + nodeId;
    }

    /** The row of {@code usageKey}, or null. */
    public static Uni<VolumeUsageEntity> byKey(String usageKey) {
        return SessionSql.select("SELECT " + COLUMNS + " FROM volume_usage WHERE usage_key = $1", usageKey)
                .map(rows -> rows.isEmpty() ? null : from(rows.get(0)));
    }

    /** The volume's usage rows, by node. */
    public static Uni<List<VolumeUsageEntity>> ofVolume(String volumeKey) {
        return SessionSql.select("SELECT " + COLUMNS + " FROM volume_usage WHERE volume_key = $1 ORDER BY node_id", volumeKey)
                .map(rows -> rows.stream().map(VolumeUsageEntity::from).toList());
    }

    /** Inserts this row (a new key). */
    public Uni<Void> insert() {
        return SessionSql.update("INSERT INTO volume_usage (" + COLUMNS + ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                usageKey, volumeKey, nodeId, pluginId, bytesTotal, bytesAvailable, bytesUsed, inodesTotal, inodesFree,
                inodesUsed, observedAt).replaceWithVoid();
    }

    /** Writes this row's values over the stored row of its key. */
    public Uni<Void> update() {
        return SessionSql.update("UPDATE volume_usage SET volume_key = $2, node_id = $3, plugin_id = $4, bytes_total = $5,"
                + " bytes_available = $6, bytes_used = $7, inodes_total = $8, inodes_free = $9, inodes_used = $10,"
                + " observed_at = $11 WHERE usage_key = $1",
                usageKey, volumeKey, nodeId, pluginId, bytesTotal, bytesAvailable, bytesUsed, inodesTotal, inodesFree,
                inodesUsed, observedAt).replaceWithVoid();
    }

    private static VolumeUsageEntity from(Object[] r) {
        VolumeUsageEntity u = new VolumeUsageEntity();
        u.usageKey = (String) r[0];
        u.volumeKey = (String) r[1];
        u.nodeId = (String) r[2];
        u.pluginId = (String) r[3];
        u.bytesTotal = longOrNull(r[4]);
        u.bytesAvailable = longOrNull(r[5]);
        u.bytesUsed = longOrNull(r[6]);
        u.inodesTotal = longOrNull(r[7]);
        u.inodesFree = longOrNull(r[8]);
        u.inodesUsed = longOrNull(r[9]);
        u.observedAt = SessionSql.instant(r[10]);
        return u;
    }

    private static Long longOrNull(Object value) {
        return value == null ? null : ((Number) value).longValue();
    }
}
