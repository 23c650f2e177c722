package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/**
 * The listing of one plugin's volumes (issue 14): a sweep through CSI ListVolumes' pages that claim-service compares
 * with the volumes it created ({@code provision.VolumeListings}); one at a time per plugin.
 */
@Entity
@Table(name = "volume_listings")
public class VolumeListingEntity extends PanacheEntityBase {

    @Id
    @Column(name = "plugin_id")
    public String pluginId;
    /** When the sweep in progress (or the last one) started: a volume it lists is marked listed as of then. */
    @Column(name = "started_at")
    public Instant startedAt;
    /** Pages answered so far in this sweep. */
    public int pages;
    @Column(name = "command_id")
    public String commandId;
    @Column(name = "command_node_id")
    public String commandNodeId;
    @Column(name = "command_deadline")
    public Instant commandDeadline;
    /** When the last complete sweep ended. */
    @Column(name = "completed_at")
    public Instant completedAt;
    /** Why the last sweep was given up (the worker's code and message), or null. */
    @Column(name = "last_error")
    public String lastError;
}
