package io.csiorchestrator.plugins.store;

import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.RowSet;
import io.vertx.mutiny.sqlclient.SqlClient;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The queries of the registry: a fixed set of prepared statements, each on the connection of a transaction the
 * caller opened (or on the pool, for a read alone). Changes of one plugin are serialized by a row lock on its
 * {@code plugin} row; publishing its status by a transaction-scoped advisory lock on its id.
 */
@ApplicationScoped
public class PluginStore {

    /** Namespaces the advisory locks of this service (the high 32 bits of their key). */
    private static final long PUBLISH_LOCK_SPACE = 0x706c7567L; // "plug"

    private static final String PLUGIN = "select " + PluginRow.COLUMNS + " from plugin where id = $1";

    /**
     * The plugin's row, created empty if missing, locked ({@code FOR UPDATE}) until the transaction
     * ends. Null only if a concurrent sweep removed the plugin between the insert and the lock.
     */
    public Uni<PluginRow> lockOrCreate(SqlClient tx, String pluginId, Instant now) {
        return tx.preparedQuery("insert into plugin (id, created_at, updated_at) values ($1, $2, $2)"
                        + " on conflict (id) do nothing")
                .execute(Tuple.of(pluginId, at(now)))
                .chain(() -> lock(tx, pluginId));
    }

    /** The plugin's row locked ({@code FOR UPDATE}) until the transaction ends, or null. */
    public Uni<PluginRow> lock(SqlClient tx, String pluginId) {
        return tx.preparedQuery(PLUGIN + " for update").execute(Tuple.of(pluginId)).map(rows -> first(rows, PluginRow::from));
    }

    /**
     * Makes the caller's fresh transaction read one snapshot: a plugin's row and its instance rows, read by two
     * statements, then agree with each other. Under the default READ COMMITTED each statement sees what was
     * committed when it started, so a sweep committing between them showed counts from before it beside
     * instances from after it. Must be the transaction's first statement.
     */
    public Uni<Void> readOneSnapshot(SqlClient tx) {
        return tx.query("set transaction isolation level repeatable read, read only").execute().replaceWithVoid();
    }

    public Uni<PluginRow> find(SqlClient client, String pluginId) {
        return client.preparedQuery(PLUGIN).execute(Tuple.of(pluginId)).map(rows -> first(rows, PluginRow::from));
    }

    /** Every plugin not removed, by id. */
    public Uni<List<PluginRow>> all(SqlClient client) {
        return client.preparedQuery("select " + PluginRow.COLUMNS + " from plugin where removed = false order by id")
                .execute().map(rows -> all(rows, PluginRow::from));
    }

    /**
     * Writes what {@link PluginRow#takeStatus}, {@link PluginRow#markRemoved} or {@link PluginRow#revive} changed;
     * nothing when the row is unchanged. The published version is the publisher's ({@link #markPublished}).
     */
    public Uni<Void> save(SqlClient tx, PluginRow plugin) {
        if (!plugin.changed()) {
            return Uni.createFrom().voidItem();
        }
        return tx.preparedQuery("update plugin set provider_name = $2, provider_version = $3, controller_required = $4,"
                        + " controllers_healthy = $5, controllers_expected = $6, nodes_healthy = $7, nodes_expected = $8,"
                        + " updated_at = $9, status_version = $10, removed = $11 where id = $1")
                .execute(Tuple.tuple().addString(plugin.id).addString(plugin.providerName)
                        .addString(plugin.providerVersion).addBoolean(plugin.controllerRequired)
                        .addInteger(plugin.controllersHealthy).addInteger(plugin.controllersExpected)
                        .addInteger(plugin.nodesHealthy).addInteger(plugin.nodesExpected)
                        .addOffsetDateTime(at(plugin.updatedAt)).addLong(plugin.statusVersion)
                        .addBoolean(plugin.removed))
                .replaceWithVoid();
    }

    /** The plugin's instances, by node id. */
    public Uni<List<PluginInstanceRow>> instances(SqlClient client, String pluginId) {
        return client.preparedQuery("select " + PluginInstanceRow.COLUMNS
                        + " from plugin_instance where plugin_id = $1 order by node_id")
                .execute(Tuple.of(pluginId)).map(rows -> all(rows, PluginInstanceRow::from));
    }

    /** Writes every column of the instance, inserting it when new. */
    public Uni<Void> save(SqlClient tx, PluginInstanceRow instance) {
        return tx.preparedQuery("insert into plugin_instance (" + PluginInstanceRow.COLUMNS + ") values ($1, $2, $3, $4,"
                        + " $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) on conflict (plugin_id, node_id) do update"
                        + " set type = excluded.type, provider_name = excluded.provider_name,"
                        + " provider_version = excluded.provider_version, plugin_capabilities = excluded.plugin_capabilities,"
                        + " controller_capabilities = excluded.controller_capabilities,"
                        + " node_capabilities = excluded.node_capabilities, external_node_id = excluded.external_node_id,"
                        + " max_volumes = excluded.max_volumes, accessible_topology = excluded.accessible_topology,"
                        + " reported_healthy = excluded.reported_healthy,"
                        + " reported_health_description = excluded.reported_health_description,"
                        + " silence_reason = excluded.silence_reason, last_heartbeat = excluded.last_heartbeat,"
                        + " last_received = excluded.last_received")
                .execute(instance.tuple())
                .replaceWithVoid();
    }

    /**
     * Ids of plugins with an instance to silence (not silent yet, last received before
     * {@code silentBefore}) or to remove (last received before {@code removedBefore}).
     */
    public Uni<List<String>> pluginsDueForSweep(SqlClient client, Instant silentBefore, Instant removedBefore) {
        return client.preparedQuery("select distinct plugin_id from plugin_instance"
                        + " where (silence_reason is null and last_received < $1) or last_received < $2 order by plugin_id")
                .execute(Tuple.of(at(silentBefore), at(removedBefore))).map(rows -> all(rows, row -> row.getString(0)));
    }

    public Uni<Integer> deleteInstances(SqlClient tx, String pluginId, List<String> nodeIds) {
        if (nodeIds.isEmpty()) {
            return Uni.createFrom().item(0);
        }
        return tx.preparedQuery("delete from plugin_instance where plugin_id = $1 and node_id = any($2)")
                .execute(Tuple.of(pluginId, nodeIds.toArray(String[]::new))).map(RowSet::rowCount);
    }

    /** Ids of plugins whose latest status was not acknowledged by the broker, changed before {@code changedBefore}. */
    public Uni<List<String>> publicationPending(SqlClient client, Instant changedBefore) {
        return client.preparedQuery("select id from plugin where published_version < status_version and updated_at < $1"
                        + " order by id")
                .execute(Tuple.of(at(changedBefore))).map(rows -> all(rows, row -> row.getString(0)));
    }

    /** Records that status {@code version} of the plugin reached the broker (never moves backwards). */
    public Uni<Integer> markPublished(SqlClient tx, String pluginId, long version) {
        return tx.preparedQuery("update plugin set published_version = $2 where id = $1 and published_version < $2")
                .execute(Tuple.of(pluginId, version)).map(RowSet::rowCount);
    }

    /** Deletes the row of a removed plugin once its tombstone is out, unless it came back meanwhile. */
    public Uni<Integer> deleteRemoved(SqlClient tx, String pluginId, long version) {
        return tx.preparedQuery("delete from plugin where id = $1 and removed = true and status_version = $2")
                .execute(Tuple.of(pluginId, version)).map(RowSet::rowCount);
    }

    /**
     * Takes the advisory lock that serializes the publishing of one plugin's status, held until the
     * transaction ends: each publisher then reads a view at least as new as the one published before it.
     */
    public Uni<Void> lockPublishing(SqlClient tx, String pluginId) {
        return tx.preparedQuery("select pg_advisory_xact_lock($1) is null").execute(Tuple.of(publishLockKey(pluginId)))
                .replaceWithVoid();
    }

    static long publishLockKey(String pluginId) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(pluginId.getBytes(StandardCharsets.UTF_8));
            long low = ByteBuffer.wrap(digest).getInt() & 0xffffffffL;
            return (PUBLISH_LOCK_SPACE << 32) | low;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing", e);
        }
    }

    private static OffsetDateTime at(Instant instant) {
        return OffsetDateTime.ofInstant(instant, ZoneOffset.UTC);
    }

    private static <T> T first(RowSet<Row> rows, Function<Row, T> read) {
        var iterator = rows.iterator();
        return iterator.hasNext() ? read.apply(iterator.next()) : null;
    }

    private static <T> List<T> all(RowSet<Row> rows, Function<Row, T> read) {
        List<T> out = new ArrayList<>(rows.size());
        for (Row row : rows) {
            out.add(read.apply(row));
        }
        return out;
    }
}
