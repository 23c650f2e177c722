package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import java.util.List;

/**
 * The {@code snapshots} table (issue 14 item 2) as whole rows ({@link SnapshotEntity}), through {@link SessionSql} in
 * the caller's unit of work; written explicitly like {@link ProvisionRows}.
 */
public final class SnapshotRows {

    static final TableSql TABLE = new TableSql("snapshots", "snapshot_key", "namespace", "snapshot_id", "csi_name",
            "plugin_id", "source_volume_key", "source_external_id", "phase", "attempt", "parameters_json",
            "secret_keys_json", "sealed_json", "external_id", "size_bytes", "command_id", "command_node_id",
            "command_deadline", "retry_at", "last_error", "created_at", "updated_at");
    private static final String FIND = TABLE.byKey("");
    private static final String LOCK = TABLE.byKey(" FOR UPDATE");
    private static final String OF_NAMESPACE = "SELECT " + TABLE.list + " FROM snapshots WHERE namespace = $1"
            + " ORDER BY snapshot_id";

    private SnapshotRows() {
    }

    /** The snapshot {@code snapshotKey}, or null (a plain read). */
    public static Uni<SnapshotEntity> find(String snapshotKey) {
        return SessionSql.select(FIND, snapshotKey).map(rows -> TableSql.first(rows, SnapshotRows::from));
    }

    /** Every snapshot of {@code namespace}, by id. */
    public static Uni<List<SnapshotEntity>> list(String namespace) {
        return SessionSql.select(OF_NAMESPACE, namespace).map(rows -> rows.stream().map(SnapshotRows::from).toList());
    }

    /** The snapshot {@code snapshotKey} locked until the transaction ends (SELECT ... FOR UPDATE), or null. */
    public static Uni<SnapshotEntity> lock(String snapshotKey) {
        return SessionSql.select(LOCK, snapshotKey).map(rows -> TableSql.first(rows, SnapshotRows::from));
    }

    /** Inserts {@code s}, every column. */
    public static Uni<Void> insert(SnapshotEntity s) {
        return SessionSql.update(TABLE.insert, values(s)).replaceWithVoid();
    }

    /** Writes {@code s} when it changed since its values were {@code stored} ({@link #values}, taken as read). */
    public static Uni<Void> saveIfChanged(SnapshotEntity s, Object[] stored) {
        return TABLE.saveIfChanged(values(s), stored);
    }

    /** Deletes the snapshot {@code snapshotKey}. */
    public static Uni<Void> delete(String snapshotKey) {
        return SessionSql.update("DELETE FROM snapshots WHERE snapshot_key = $1", snapshotKey).replaceWithVoid();
    }

    /** The row's values in column order. */
    public static Object[] values(SnapshotEntity s) {
        return new Object[] {s.snapshotKey, s.namespace, s.snapshotId, s.csiName, s.pluginId, s.sourceVolumeKey,
                s.sourceExternalId, s.phase, s.attempt, s.parametersJson, s.secretKeysJson, s.sealedJson, s.externalId,
                s.sizeBytes, s.commandId, s.commandNodeId, s.commandDeadline, s.retryAt, s.lastError, s.createdAt,
                s.updatedAt};
    }

    /** A snapshot from a row selected with every column, in column order. */
    static SnapshotEntity from(Object[] r) {
        SnapshotEntity s = new SnapshotEntity();
        s.snapshotKey = (String) r[0];
        s.namespace = (String) r[1];
        s.snapshotId = (String) r[2];
        s.csiName = (String) r[3];
        s.pluginId = (String) r[4];
        s.sourceVolumeKey = (String) r[5];
        s.sourceExternalId = (String) r[6];
        s.phase = (String) r[7];
        s.attempt = TableSql.intValue(r[8]);
        s.parametersJson = (String) r[9];
        s.secretKeysJson = (String) r[10];
        s.sealedJson = (String) r[11];
        s.externalId = (String) r[12];
        s.sizeBytes = TableSql.longOrNull(r[13]);
        s.commandId = (String) r[14];
        s.commandNodeId = (String) r[15];
        s.commandDeadline = SessionSql.instant(r[16]);
        s.retryAt = SessionSql.instant(r[17]);
        s.lastError = (String) r[18];
        s.createdAt = SessionSql.instant(r[19]);
        s.updatedAt = SessionSql.instant(r[20]);
        return s;
    }
}
