package io.csiorchestrator.plugins.config;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** Settings of the registry's liveness rules, under {@code csi.registry}. */
@ConfigMapping(prefix = "csi.registry")
public interface RegistryConfig {

    /** An instance with no new report for longer than this turns unhealthy (three 30 s heartbeats). */
    @WithDefault("90s")
    Duration instanceTtl();

    /** An instance with no new report for longer than this is removed; a plugin left without instances too. */
    @WithDefault("1h")
    Duration pluginGcAfter();

    /** How often the expiry sweep runs (read by RegistryTimer as {@code csi.registry.sweep-interval}, also the gauges' refresh and the catch-up probe). */
    @WithDefault("15s")
    Duration sweepInterval();

    /**
     * The longest wait between two tries of recording a report that failed (backoff from 200 ms): the database
     * being away is retried for as long as it lasts, anything else 8 times before the report is dead-lettered.
     */
    @WithDefault("10s")
    Duration reportRetryMaxBackoff();

    /**
     * Run the Flyway migrations at start: application.properties maps it onto
     * {@code csi.database.migrate-at-start}, read by {@code io.csiorchestrator.support.DatabaseMigrations}
     * (module service-support). Declared here too so that setting it is not refused as an unknown
     * {@code csi.registry} property.
     */
    @WithDefault("true")
    boolean migrateAtStart();

    /**
     * Whether this instance is the node authority: answers {@code node-lease-requests} and declares lapses (issue 19;
     * read by {@code LeaseAuthority} as {@code csi.registry.leases}).
     */
    @WithDefault("true")
    boolean leases();

    /**
     * The longest wait between two tries of loading the persisted leases of node-lease-requests partitions this
     * instance took over while the database was away (backoff from 200 ms; read by {@code LeaseAuthority} as
     * {@code csi.registry.lease-reload-max-backoff}). Until loaded, those partitions are paused.
     */
    @WithDefault("5s")
    Duration leaseReloadMaxBackoff();
}
