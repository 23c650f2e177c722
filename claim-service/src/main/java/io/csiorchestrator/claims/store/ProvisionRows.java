package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;

/**
 * The {@code provisions} table (issue 14) as whole rows ({@link ProvisionEntity}), through {@link SessionSql} in the
 * caller's unit of work. A row changed by a transaction is written by that transaction explicitly: read under its
 * lock ({@link #lock}), its values kept ({@link #values}), and written back when they changed ({@link #saveIfChanged}).
 */
public final class ProvisionRows {

    static final TableSql TABLE = new TableSql("provisions", "volume_key", "namespace", "volume_id", "csi_name",
            "plugin_id", "phase", "attempt", "name", "access_mode", "attachment_mode", "fs_type", "mount_flag_count",
            "parameters_json", "topology_json", "secret_keys_json", "sealed_json", "failover", "capacity_min_bytes",
            "capacity_max_bytes", "source_snapshot_id", "source_volume_id", "external_id", "capacity_bytes",
            "context_json", "accessible_topology_json", "expand_to_bytes", "expand_nodes_json", "node_expand_bytes",
            "node_sizes_json", "node_expand_on_mount", "listed_at", "unlisted_since", "command_id", "command_node_id",
            "command_deadline", "retry_at", "last_error", "created_at", "updated_at");
    private static final String FIND = TABLE.byKey("");
    private static final String LOCK = TABLE.byKey(" FOR UPDATE");

    private ProvisionRows() {
    }

    /** The provision of {@code volumeKey}, or null (a plain read). */
    public static Uni<ProvisionEntity> find(String volumeKey) {
        return SessionSql.select(FIND, volumeKey).map(rows -> TableSql.first(rows, ProvisionRows::from));
    }

    /** The provision of {@code volumeKey} locked until the transaction ends (SELECT ... FOR UPDATE), or null. */
    public static Uni<ProvisionEntity> lock(String volumeKey) {
        return SessionSql.select(LOCK, volumeKey).map(rows -> TableSql.first(rows, ProvisionRows::from));
    }

    /** Inserts {@code p}, every column. */
    public static Uni<Void> insert(ProvisionEntity p) {
        return SessionSql.update(TABLE.insert, values(p)).replaceWithVoid();
    }

    /** Writes {@code p} when it changed since its values were {@code stored} ({@link #values}, taken as read). */
    public static Uni<Void> saveIfChanged(ProvisionEntity p, Object[] stored) {
        return TABLE.saveIfChanged(values(p), stored);
    }

    /** Deletes the provision of {@code volumeKey}. */
    public static Uni<Void> delete(String volumeKey) {
        return SessionSql.update("DELETE FROM provisions WHERE volume_key = $1", volumeKey).replaceWithVoid();
    }

    /** The row's values in column order. */
    public static Object[] values(ProvisionEntity p) {
        return new Object[] {p.volumeKey, p.namespace, p.volumeId, p.csiName, p.pluginId, p.phase, p.attempt, p.name,
                p.accessMode, p.attachmentMode, p.fsType, p.mountFlagCount, p.parametersJson, p.topologyJson,
                p.secretKeysJson, p.sealedJson, p.failover, p.capacityMinBytes, p.capacityMaxBytes, p.sourceSnapshotId,
                p.sourceVolumeId, p.externalId, p.capacityBytes, p.contextJson, p.accessibleTopologyJson, p.expandToBytes,
                p.expandNodesJson, p.nodeExpandBytes, p.nodeSizesJson, p.nodeExpandOnMount, p.listedAt, p.unlistedSince,
                p.commandId, p.commandNodeId, p.commandDeadline, p.retryAt, p.lastError, p.createdAt, p.updatedAt};
    }

    /** A provision from a row selected with every column, in column order. */
    static ProvisionEntity from(Object[] r) {
        ProvisionEntity p = new ProvisionEntity();
        p.volumeKey = (String) r[0];
        p.namespace = (String) r[1];
        p.volumeId = (String) r[2];
        p.csiName = (String) r[3];
        p.pluginId = (String) r[4];
        p.phase = (String) r[5];
        p.attempt = TableSql.intValue(r[6]);
        p.name = (String) r[7];
        p.accessMode = (String) r[8];
        p.attachmentMode = (String) r[9];
        p.fsType = (String) r[10];
        p.mountFlagCount = TableSql.intValue(r[11]);
        p.parametersJson = (String) r[12];
        p.topologyJson = (String) r[13];
        p.secretKeysJson = (String) r[14];
        p.sealedJson = (String) r[15];
        p.failover = (String) r[16];
        p.capacityMinBytes = TableSql.longOrNull(r[17]);
        p.capacityMaxBytes = TableSql.longOrNull(r[18]);
        p.sourceSnapshotId = (String) r[19];
        p.sourceVolumeId = (String) r[20];
        p.externalId = (String) r[21];
        p.capacityBytes = TableSql.longOrNull(r[22]);
        p.contextJson = (String) r[23];
        p.accessibleTopologyJson = (String) r[24];
        p.expandToBytes = TableSql.longOrNull(r[25]);
        p.expandNodesJson = (String) r[26];
        p.nodeExpandBytes = TableSql.longOrNull(r[27]);
        p.nodeSizesJson = (String) r[28];
        p.nodeExpandOnMount = (Boolean) r[29];
        p.listedAt = SessionSql.instant(r[30]);
        p.unlistedSince = SessionSql.instant(r[31]);
        p.commandId = (String) r[32];
        p.commandNodeId = (String) r[33];
        p.commandDeadline = SessionSql.instant(r[34]);
        p.retryAt = SessionSql.instant(r[35]);
        p.lastError = (String) r[36];
        p.createdAt = SessionSql.instant(r[37]);
        p.updatedAt = SessionSql.instant(r[38]);
        return p;
    }
}
