package io.csiorchestrator.claims.store;

import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import java.util.Arrays;

/**
 * The {@code claims} and {@code volumes} rows as a claim step reads and writes them ({@link ClaimStore}): one column
 * list each, the row as an {@code Object[]} in that order, and the fixed statements made from it. Values as
 * {@link SessionSql} takes and gives them (timestamps as Instant here, converted at the statement).
 */
final class ClaimTables {

    private ClaimTables() {
    }

    static final String[] CLAIM_COLUMNS = {"claim_id", "volume_key", "namespace", "volume_id", "allocation_id", "node_id",
            "mode", "request_id", "release_request_id", "access_mode", "attachment_mode", "read_only", "fs_type",
            "sealed_json", "phase", "attempt", "controller_required", "controller_published", "release_requested",
            "rolling_back", "past", "command_id", "command_node_id", "command_deadline", "retry_at", "plugin_wait_since",
            "lease_epoch", "claim_generation", "fence_wait", "storage_fence", "detach_note", "external_node_id",
            "controller_node_id", "publish_context_json", "host_path", "last_error", "created_at", "updated_at",
            "ended_at", "requested_at", "release_requested_at"};

    static final String[] VOLUME_COLUMNS = {"volume_key", "namespace", "id", "name", "external_id", "plugin_id",
            "access_mode", "attachment_mode", "fs_type", "mount_flag_count", "parameters_json", "context_json",
            "topology_json", "secret_keys_json", "sealed_json", "claimed_access_mode", "deleting", "write_generation",
            "failover", "version", "created_at", "updated_at"};

    static final String CLAIMS = String.join(", ", CLAIM_COLUMNS);
    static final String VOLUMES = String.join(", ", VOLUME_COLUMNS);
    static final String INSERT_CLAIM = insert("claims", CLAIM_COLUMNS);
    static final String UPDATE_CLAIM = update("claims", CLAIM_COLUMNS);
    static final String INSERT_VOLUME = insert("volumes", VOLUME_COLUMNS);
    static final String UPDATE_VOLUME = update("volumes", VOLUME_COLUMNS);

    /** The claim's values in {@link #CLAIM_COLUMNS} order. */
    static Object[] values(ClaimEntity c) {
        return new Object[] {c.claimId, c.volumeKey, c.namespace, c.volumeId, c.allocationId, c.nodeId, c.mode.wire(),
                c.requestId, c.releaseRequestId, c.accessMode.wire(), c.attachmentMode.wire(), c.readOnly, c.fsType,
                c.sealedJson, c.phase.name(), c.attempt, c.controllerRequired, c.controllerPublished, c.releaseRequested, c.rollingBack, c.past,
                c.commandId, c.commandNodeId, c.commandDeadline, c.retryAt, c.pluginWaitSince, c.leaseEpoch,
                c.claimGeneration, c.fenceWait, c.storageFence, c.detachNote, c.externalNodeId, c.controllerNodeId,
                c.publishContextJson, c.hostPath, c.lastError, c.createdAt, c.updatedAt, c.endedAt, c.requestedAt,
                c.releaseRequestedAt};
    }

    /** A claim from a row selected as {@link #CLAIMS}. */
    static ClaimEntity claim(Object[] r) {
        ClaimEntity c = new ClaimEntity();
        c.claimId = (String) r[0];
        c.volumeKey = (String) r[1];
        c.namespace = (String) r[2];
        c.volumeId = (String) r[3];
        c.allocationId = (String) r[4];
        c.nodeId = (String) r[5];
        c.mode = ClaimMode.fromWire((String) r[6]);
        c.requestId = (String) r[7];
        c.releaseRequestId = (String) r[8];
        c.accessMode = AccessMode.fromWire((String) r[9]);
        c.attachmentMode = AttachmentMode.fromWire((String) r[10]);
        c.readOnly = (Boolean) r[11];
        c.fsType = (String) r[12];
        c.sealedJson = (String) r[13];
        c.phase = Phase.valueOf((String) r[14]);
        c.attempt = ((Number) r[15]).intValue();
        c.controllerRequired = (Boolean) r[16];
        c.controllerPublished = (Boolean) r[17];
        c.releaseRequested = (Boolean) r[18];
        c.rollingBack = (Boolean) r[19];
        c.past = (Boolean) r[20];
        c.commandId = (String) r[21];
        c.commandNodeId = (String) r[22];
        c.commandDeadline = SessionSql.instant(r[23]);
        c.retryAt = SessionSql.instant(r[24]);
        c.pluginWaitSince = SessionSql.instant(r[25]);
        c.leaseEpoch = longOrNull(r[26]);
        c.claimGeneration = longOrNull(r[27]);
        c.fenceWait = (String) r[28];
        c.storageFence = (String) r[29];
        c.detachNote = (String) r[30];
        c.externalNodeId = (String) r[31];
        c.controllerNodeId = (String) r[32];
        c.publishContextJson = (String) r[33];
        c.hostPath = (String) r[34];
        c.lastError = (String) r[35];
        c.createdAt = SessionSql.instant(r[36]);
        c.updatedAt = SessionSql.instant(r[37]);
        c.endedAt = SessionSql.instant(r[38]);
        c.requestedAt = SessionSql.instant(r[39]);
        c.releaseRequestedAt = SessionSql.instant(r[40]);
        return c;
    }

    /** The volume's values in {@link #VOLUME_COLUMNS} order. */
    static Object[] values(VolumeEntity v) {
        return new Object[] {v.volumeKey, v.namespace, v.id, v.name, v.externalId, v.pluginId, v.accessMode,
                v.attachmentMode, v.fsType, v.mountFlagCount, v.parametersJson, v.contextJson, v.topologyJson,
                v.secretKeysJson, v.sealedJson, v.claimedAccessMode, v.deleting, v.writeGeneration, v.failover, v.version,
                v.createdAt, v.updatedAt};
    }

    /** A volume from a row selected as {@link #VOLUMES}. */
    static VolumeEntity volume(Object[] r) {
        VolumeEntity v = new VolumeEntity();
        v.volumeKey = (String) r[0];
        v.namespace = (String) r[1];
        v.id = (String) r[2];
        v.name = (String) r[3];
        v.externalId = (String) r[4];
        v.pluginId = (String) r[5];
        v.accessMode = (String) r[6];
        v.attachmentMode = (String) r[7];
        v.fsType = (String) r[8];
        v.mountFlagCount = ((Number) r[9]).intValue();
        v.parametersJson = (String) r[10];
        v.contextJson = (String) r[11];
        v.topologyJson = (String) r[12];
        v.secretKeysJson = (String) r[13];
        v.sealedJson = (String) r[14];
        v.claimedAccessMode = (String) r[15];
        v.deleting = (Boolean) r[16];
        v.writeGeneration = ((Number) r[17]).longValue();
        v.failover = (String) r[18];
        v.version = ((Number) r[19]).longValue();
        v.createdAt = SessionSql.instant(r[20]);
        v.updatedAt = SessionSql.instant(r[21]);
        return v;
    }

    /** Whether two rows of one table hold the same values. */
    static boolean same(Object[] a, Object[] b) {
        return Arrays.equals(a, b);
    }

    private static Long longOrNull(Object value) {
        return value == null ? null : ((Number) value).longValue();
    }

    private static String insert(String table, String[] columns) {
        StringBuilder values = new StringBuilder();
        for (int i = 1; i <= columns.length; i++) {
            values.append(i == 1 ? "" : ", ").append('$').append(i);
        }
        return "INSERT INTO " + table + " (" + String.join(", ", columns) + ") VALUES (" + values + ")";
    }

    /** Every column but the key (the first), the key in the WHERE: one fixed statement per table. */
    private static String update(String table, String[] columns) {
        StringBuilder set = new StringBuilder();
        for (int i = 2; i <= columns.length; i++) {
            set.append(i == 2 ? "" : ", ").append(columns[i - 1]).append(" = $").append(i);
        }
        return "UPDATE " + table + " SET " + set + " WHERE " + columns[0] + " = $1";
    }
}
