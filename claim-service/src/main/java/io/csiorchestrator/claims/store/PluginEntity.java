package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/** The last plugin-status of one plugin, as received. */
@Entity
@Table(name = "plugins")
public class PluginEntity extends PanacheEntityBase {

    @Id
    @Column(name = "plugin_id")
    public String pluginId;
    @Column(name = "controller_required")
    public boolean controllerRequired;
    @Column(name = "status_json")
    public String statusJson;
    @Column(name = "updated_at")
    public Instant updatedAt;
}
