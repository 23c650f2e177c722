package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import java.time.Instant;
import java.util.List;

/**
 * The last CSI volume condition a node's worker reported for a volume published there (node-events): a row of
 * {@code volume_conditions}, read and written with the statements here (call inside a {@link Transactions} unit of work).
 */
public class VolumeConditionEntity {

    private static final String COLUMNS = "condition_key, volume_key, node_id, plugin_id, abnormal, message, since";

    public String conditionKey;
    public String volumeKey;
    public String nodeId;
    public String pluginId;
    public boolean abnormal;
    public String message;
    public Instant since;

    public static String key(String volumeKey, String nodeId) {
        return volumeKey + "@" + nodeId;
    }

    /** The row of {@code conditionKey}, or null. */
    public static Uni<VolumeConditionEntity> byKey(String conditionKey) {
        return SessionSql.select("SELECT " + COLUMNS + " FROM volume_conditions WHERE condition_key = $1", conditionKey)
                .map(rows -> rows.isEmpty() ? null : from(rows.get(0)));
    }

    /** The volume's conditions, by node. */
    public static Uni<List<VolumeConditionEntity>> ofVolume(String volumeKey) {
        return SessionSql.select("SELECT " + COLUMNS + " FROM volume_conditions WHERE volume_key = $1 ORDER BY node_id", volumeKey)
                .map(rows -> rows.stream().map(VolumeConditionEntity::from).toList());
    }

    /** Every condition, by volume and node. */
    public static Uni<List<VolumeConditionEntity>> listAll() {
        return SessionSql.select("SELECT " + COLUMNS + " FROM volume_conditions ORDER BY volume_key, node_id")
                .map(rows -> rows.stream().map(VolumeConditionEntity::from).toList());
    }

    /** Inserts this row (a new key). */
    public Uni<Void> insert() {
        return SessionSql.update("INSERT INTO volume_conditions (" + COLUMNS + ") VALUES ($1, $2, $3, $4, $5, $6, $7)",
                conditionKey, volumeKey, nodeId, pluginId, abnormal, message, since).replaceWithVoid();
    }

    /** Writes this row's values over the stored row of its key. */
    public Uni<Void> update() {
        return SessionSql.update("UPDATE volume_conditions SET volume_key = $2, node_id = $3, plugin_id = $4, abnormal = $5,"
                + " message = $6, since = $7 WHERE condition_key = $1",
                conditionKey, volumeKey, nodeId, pluginId, abnormal, message, since).replaceWithVoid();
    }

    private static VolumeConditionEntity from(Object[] r) {
        VolumeConditionEntity c = new VolumeConditionEntity();
        c.conditionKey = (String) r[0];
        c.volumeKey = (String) r[1];
        c.nodeId = (String) r[2];
        c.pluginId = (String) r[3];
        c.abnormal = (Boolean) r[4];
        c.message = (String) r[5];
        c.since = SessionSql.instant(r[6]);
        return c;
    }
}
