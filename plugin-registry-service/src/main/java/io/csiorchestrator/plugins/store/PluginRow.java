package io.csiorchestrator.plugins.store;

import io.csiorchestrator.events.PluginStatus;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.NamedQuery;
import jakarta.persistence.Table;
import java.time.Instant;

/** Table {@code plugin}: one CSI plugin and its counts as last recomputed from its instances. */
@Entity
@Table(name = "plugin")
@NamedQuery(name = PluginRow.ALL, query = "from PluginRow where removed = false order by id")
@NamedQuery(name = PluginRow.PUBLICATION_PENDING, query = "select id from PluginRow"
        + " where publishedVersion < statusVersion and updatedAt < :changedBefore order by id")
@NamedQuery(name = PluginRow.MARK_PUBLISHED, query = "update PluginRow set publishedVersion = :version"
        + " where id = :pluginId and publishedVersion < :version")
@NamedQuery(name = PluginRow.DELETE_REMOVED, query = "delete from PluginRow"
        + " where id = :pluginId and removed = true and statusVersion = :version")
public class PluginRow {

    static final String ALL = "PluginRow.all";
    static final String PUBLICATION_PENDING = "PluginRow.publicationPending";
    static final String MARK_PUBLISHED = "PluginRow.markPublished";
    static final String DELETE_REMOVED = "PluginRow.deleteRemoved";

    @Id
    @Column(name = "id", nullable = false, length = 128)
    public String id;

    @Column(name = "provider_name")
    public String providerName;

    @Column(name = "provider_version")
    public String providerVersion;

    @Column(name = "controller_required", nullable = false)
    public boolean controllerRequired;

    @Column(name = "controllers_healthy", nullable = false)
    public int controllersHealthy;

    @Column(name = "controllers_expected", nullable = false)
    public int controllersExpected;

    @Column(name = "nodes_healthy", nullable = false)
    public int nodesHealthy;

    @Column(name = "nodes_expected", nullable = false)
    public int nodesExpected;

    @Column(name = "created_at", nullable = false)
    public Instant createdAt;

    /** When the plugin's status last changed (not on plain heartbeats). */
    @Column(name = "updated_at", nullable = false)
    public Instant updatedAt;

    /** Bumped on every change of the status (not on plain heartbeats). */
    @Column(name = "status_version", nullable = false)
    public long statusVersion;

    /** The status version last acknowledged by the broker on plugin-status. */
    @Column(name = "published_version", nullable = false)
    public long publishedVersion;

    /** No instance left: the row stays only until the tombstone is published. */
    @Column(name = "removed", nullable = false)
    public boolean removed;

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
    }
}
