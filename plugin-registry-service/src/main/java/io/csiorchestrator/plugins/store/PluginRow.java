package io.csiorchestrator.plugins.store;

import io.csiorchestrator.events.PluginStatus;
import io.vertx.mutiny.sqlclient.Row;
import java.time.Instant;

/**
 * A row of table {@code plugin}: one CSI plugin and its counts as last recomputed from its instances. Read by
 * {@link PluginStore}; a change made here ({@link #takeStatus}, {@link #markRemoved}, {@link #revive}) is written
 * by {@link PluginStore#save} in the same transaction.
 */
public class PluginRow {

    /** The columns, in the order {@link #from} reads them. */
    static final String COLUMNS = "id, provider_name, provider_version, controller_required, controllers_healthy,"
            + " controllers_expected, nodes_healthy, nodes_expected, created_at, updated_at, status_version,"
            + " published_version, removed";

    public String id;
    public String providerName;
    public String providerVersion;
    public boolean controllerRequired;
    public int controllersHealthy;
    public int controllersExpected;
    public int nodesHealthy;
    public int nodesExpected;
    public Instant createdAt;
    /** When the plugin's status last changed (not on plain heartbeats). */
    public Instant updatedAt;
    /** Bumped on every change of the status (not on plain heartbeats). */
    public long statusVersion;
    /** The status version last acknowledged by the broker on plugin-status (written only by the publisher). */
    public long publishedVersion;
    /** No instance left: the row stays only until the tombstone is published. */
    public boolean removed;
    /** Changed since read: {@link PluginStore#save} writes it. */
    private boolean changed;

    static PluginRow from(Row row) {
        PluginRow plugin = new PluginRow();
        plugin.id = row.getString(0);
        plugin.providerName = row.getString(1);
        plugin.providerVersion = row.getString(2);
        plugin.controllerRequired = row.getBoolean(3);
        plugin.controllersHealthy = row.getInteger(4);
        plugin.controllersExpected = row.getInteger(5);
        plugin.nodesHealthy = row.getInteger(6);
        plugin.nodesExpected = row.getInteger(7);
        plugin.createdAt = row.getOffsetDateTime(8).toInstant();
        plugin.updatedAt = row.getOffsetDateTime(9).toInstant();
        plugin.statusVersion = row.getLong(10);
        plugin.publishedVersion = row.getLong(11);
        plugin.removed = row.getBoolean(12);
        return plugin;
    }

    /** Takes a freshly computed status as the plugin's new one: a change, to be published. */
    public void takeStatus(PluginStatus status) {
        statusVersion++;
        providerName = status.providerName();
        providerVersion = status.providerVersion();
        controllerRequired = status.controllerRequired();
        controllersHealthy = status.controllersHealthy();
        controllersExpected = status.controllersExpected();
        nodesHealthy = status.nodesHealthy();
        nodesExpected = status.nodesExpected();
        updatedAt = status.updatedAt();
        changed = true;
    }

    /** No instance left: kept, marked removed, until its tombstone is published. */
    public void markRemoved() {
        removed = true;
        changed = true;
    }

    /** Removed, tombstone maybe not yet published, and registered afresh by a report. */
    public void revive() {
        removed = false;
        changed = true;
    }

    boolean changed() {
        return changed;
    }
}
