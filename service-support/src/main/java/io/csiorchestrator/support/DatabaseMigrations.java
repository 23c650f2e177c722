package io.csiorchestrator.support;

import io.csiorchestrator.support.migrations.MigrationScripts;
import io.csiorchestrator.support.migrations.SchemaMigrator;
import io.quarkus.runtime.StartupEvent;
import io.vertx.sqlclient.Pool;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import jakarta.interceptor.Interceptor;
import java.util.List;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Migrates the service's schema when the application starts, before anything else (Kafka consumers, schedulers,
 * outbox relays, the REST API) touches the database, over the service's own reactive pool: no JDBC driver, no
 * Flyway in memory (about 500 classes fewer; README "Lean claim path issue (36), session 29"). The scripts, their
 * names, the history table and its checksums are Flyway's ({@link SchemaMigrator}), so databases migrated by earlier
 * builds go on as they are.
 *
 * <p>Configuration read:
 * <ul>
 *   <li>the service's reactive datasource ({@code quarkus.datasource.reactive.url}, {@code username},
 *       {@code password}): the pool the service uses for everything else;</li>
 *   <li>{@value #MIGRATE_AT_START} (default {@code true}) — each service points it at its own documented key, e.g.
 *       {@code csi.database.migrate-at-start=${csi.claims.migrate-at-start:true}};</li>
 *   <li>{@value #LOCATIONS} (default {@value #DEFAULT_LOCATION}, comma-separated).</li>
 * </ul>
 */
@ApplicationScoped
public class DatabaseMigrations {

    public static final String MIGRATE_AT_START = "csi.database.migrate-at-start";
    public static final String LOCATIONS = "csi.database.migration-locations";
    public static final String DEFAULT_LOCATION = "classpath:db/migration";

    private static final Logger LOG = Logger.getLogger(DatabaseMigrations.class);

    @Inject
    Instance<Pool> pool;
    @ConfigProperty(name = MIGRATE_AT_START, defaultValue = "true")
    boolean migrateAtStart;
    @ConfigProperty(name = LOCATIONS, defaultValue = DEFAULT_LOCATION)
    List<String> locations;

    void onStart(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE) StartupEvent event) {
        migrateIfEnabled();
    }

    /**
     * Runs the migrations unless {@value #MIGRATE_AT_START} is {@code false}.
     *
     * @return what was done, or {@code null} when switched off
     */
    public SchemaMigrator.Result migrateIfEnabled() {
        if (!migrateAtStart) {
            LOG.infof("database migrations switched off (%s=false)", MIGRATE_AT_START);
            return null;
        }
        return migrateWith(pool.get());
    }

    /** Runs the migrations of {@value #LOCATIONS} over {@code pool}, whatever {@value #MIGRATE_AT_START} says. */
    SchemaMigrator.Result migrateWith(Pool pool) {
        return SchemaMigrator.migrate(pool, MigrationScripts.load(locations, loader()));
    }

    /** The context class loader, as Flyway used: in a Quarkus application (and its tests) the one with its resources. */
    private static ClassLoader loader() {
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        return context != null ? context : DatabaseMigrations.class.getClassLoader();
    }
}
