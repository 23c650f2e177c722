package io.csiorchestrator.claims.provision;

import io.csiorchestrator.claims.domain.ProvisionMachine;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import io.smallrye.config.WithName;
import java.time.Duration;

/** {@code csi.provision.*}: volumes created and deleted through the services (issue 14). */
@ConfigMapping(prefix = "csi.provision")
public interface ProvisionSettings {

    /**
     * Attempts of one CreateVolume or DeleteVolume on retryable errors (the CSI table in {@code ProvisionMachine})
     * before the provision fails. Each attempt re-sends the same CSI name, so a retry never makes a second volume.
     */
    @WithName("max-attempts")
    @WithDefault("8")
    int maxAttempts();

    /** The wait after the first failed attempt, doubling per attempt up to {@link #maxBackoff()}. */
    @WithName("base-backoff")
    @WithDefault("1s")
    Duration baseBackoff();

    @WithName("max-backoff")
    @WithDefault("1m")
    Duration maxBackoff();

    /**
     * How often the volumes created through the services are compared with each plugin's ListVolumes (issue 14; only
     * plugins with LIST_VOLUMES). Read by VolumeListings' timer as {@code csi.provision.list-volumes-interval}; {@code off}
     * turns the comparison off.
     */
    @WithName("list-volumes-interval")
    @WithDefault("5m")
    String listVolumesInterval();

    /** The page size of each ListVolumes call (CSI max_entries), 1 to 1000. */
    @WithName("list-volumes-page-size")
    @WithDefault("500")
    int listVolumesPageSize();

        default ProvisionMachine.Policy policy() {
        return new ProvisionMachine.Policy(maxAttempts(), baseBackoff(), maxBackoff());
    }
}
