package io.csiorchestrator.claims;

import io.csiorchestrator.claims.domain.FenceTimers;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The fencing timers ({@code csi.fencing.*}, env {@code CSI_FENCING_LEASE_TTL} etc.; the same names in every service
 * that needs them, issue 19 design "Timers") and the plugins whose ControllerUnpublish cuts a node off.
 */
@ConfigMapping(prefix = "csi.fencing")
public interface FencingSettings {

    /** How long a lease the registry grants lasts. */
    @WithName("lease-ttl")
    @WithDefault("30s")
    Duration leaseTtl();

    /** The fraction by which two clocks' durations may differ. */
    @WithName("clock-drift")
    @WithDefault("0.05")
    double clockDrift();

    /** How long before its lease's expiry a worker fences itself. */
    @WithDefault("10s")
    Duration budget();

    @WithDefault("5s")
    Duration margin();

    /**
     * From the last VALID lease received for a node to its claims being assumed detached (with a LAPSED or FENCED
     * lease received, and budget + margin after it). Unset: the floor, lease-ttl x (1 + clock-drift) + budget +
     * margin; a value below the floor is refused at start.
     */
    @WithName("failover-wait")
    Optional<Duration> failoverWait();

    /**
     * Plugin ids whose ControllerUnpublishVolume really cuts a node off the volume (cloud detach, Ceph blocklist,
     * SCSI/NVMe reservation preemption); default none.
     */
    @WithName("storage-fencing-plugins")
    Optional<List<String>> storageFencingPlugins();

    /** The timers, checked: a failover-wait below the floor throws with the arithmetic. */
    default FenceTimers timers() {
        return new FenceTimers(leaseTtl(), clockDrift(), budget(), margin(), failoverWait().orElse(null)).checked();
    }
}
