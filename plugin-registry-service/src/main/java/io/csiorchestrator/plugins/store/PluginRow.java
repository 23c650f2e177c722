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
@NamedQuery(name = PluginRow.ALL, query = "from PluginRow order by id")
@NamedQuery(name = PluginRow.DELETE, query = "delete from PluginRow where id = :pluginId")
public class PluginRow {

    static final String ALL = "PluginRow.all";
    static final String DELETE = "PluginRow.delete";

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

    /** Copies the aggregate fields of a freshly computed status. */
    public void takeStatus(PluginStatus status) {
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
