package io.csiorchestrator.support;

import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;
import org.jboss.logging.Logger;

/**
 * Migrates the service's schema with Flyway over plain JDBC when the application starts, before anything else
 * (Kafka consumers, schedulers, outbox relays, the REST API) touches the database. The services themselves use the
 * reactive client only; quarkus-flyway is not used because it does not resolve in our Maven mirror.
 *
 * <p>Configuration read:
 * <ul>
 *   <li>{@code quarkus.datasource.reactive.url}, {@code quarkus.datasource.username},
 *       {@code quarkus.datasource.password} (default empty) — the standard Quarkus datasource keys
 *       ({@code QUARKUS_DATASOURCE_REACTIVE_URL} etc. in the environment): the service's one database
 *       URL, turned into the JDBC URL Flyway needs ({@link #jdbcUrlOf});</li>
 *   <li>{@code quarkus.datasource.jdbc.url} — optional, only where the JDBC URL must differ (Quarkus
 *       warns that it does not know the key: no JDBC extension reads it, this class does);</li>
 *   <li>{@value #MIGRATE_AT_START} (default {@code true}) — each service points it at its own documented key, e.g.
 *       {@code csi.database.migrate-at-start=${csi.claims.migrate-at-start:true}};</li>
 *   <li>{@value #LOCATIONS} (default {@value #DEFAULT_LOCATION}, comma-separated).</li>
 * </ul>
 *
 * <p>{@link #migrate(String, String, String, List)} is the same migration without CDI.
 */
@ApplicationScoped
public class DatabaseMigrations {

    public static final String MIGRATE_AT_START = "csi.database.migrate-at-start";
    public static final String LOCATIONS = "csi.database.migration-locations";
    public static final String DEFAULT_LOCATION = "classpath:db/migration";

    private static final Logger LOG = Logger.getLogger(DatabaseMigrations.class);

    @ConfigProperty(name = "quarkus.datasource.jdbc.url")
    Optional<String> jdbcUrl;
    @ConfigProperty(name = "quarkus.datasource.reactive.url")
    Optional<String> reactiveUrl;
    @ConfigProperty(name = "quarkus.datasource.username")
    String username;
    @ConfigProperty(name = "quarkus.datasource.password", defaultValue = "")
    String password;
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
     * @return the result, or {@code null} when switched off
     */
    public MigrateResult migrateIfEnabled() {
        if (!migrateAtStart) {
            LOG.infof("database migrations switched off (%s=false)", MIGRATE_AT_START);
            return null;
        }
        String url = jdbcUrl.filter(u -> !u.isBlank()).orElseGet(() -> jdbcUrlOf(reactiveUrl.orElseThrow(() ->
                new IllegalStateException("no database URL: set quarkus.datasource.reactive.url (QUARKUS_DATASOURCE_REACTIVE_URL)"))));
        return migrate(url, username, password, locations);
    }

    /**
     * The JDBC URL of the database a reactive datasource URL names: {@code [vertx-reactive:]postgresql://
     * [user[:password]@]host[:port][,host[:port]...]/db[?params]} becomes {@code jdbc:postgresql://host[:port]
     * [,...]/db[?params]}. Credentials in the URL are dropped: they come from {@code quarkus.datasource.username}
     * and {@code password}. Throws {@link IllegalArgumentException} naming the value (without its credentials)
     * when it is not a PostgreSQL URL.
     */
    public static String jdbcUrlOf(String reactiveUrl) {
        String url = reactiveUrl.trim();
        if (url.startsWith("vertx-reactive:")) {
            url = url.substring("vertx-reactive:".length());
        }
        int sep = url.indexOf("://");
        String scheme = sep < 0 ? "" : url.substring(0, sep);
        String rest = sep < 0 ? url : url.substring(sep + 3);
        int slash = rest.indexOf('/');
        int at = rest.lastIndexOf('@', slash < 0 ? rest.length() - 1 : slash);
        if (at >= 0) {
            rest = rest.substring(at + 1);
        }
        if (!scheme.equals("postgresql") && !scheme.equals("postgres")) {
            throw new IllegalArgumentException("quarkus.datasource.reactive.url '" + (sep < 0 ? "" : scheme + "://") + rest
                    + "' is not a postgresql:// URL; set quarkus.datasource.jdbc.url for the migrations");
        }
        return "jdbc:postgresql://" + rest;
    }

    /** Applies the pending Flyway migrations found in {@code locations} to the database at {@code jdbcUrl}. */
    public static MigrateResult migrate(String jdbcUrl, String username, String password, List<String> locations) {
        MigrateResult result = Flyway.configure()
                .dataSource(jdbcUrl, username, password)
                .locations(locations.toArray(String[]::new))
                .load()
                .migrate();
        LOG.infof("database schema at version %s (%d migration(s) applied)",
                result.targetSchemaVersion, result.migrationsExecuted);
        return result;
    }
}
