package io.csiorchestrator.claims;

import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.interceptor.Interceptor;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.flywaydb.core.Flyway;
import org.jboss.logging.Logger;

/**
 * Migrates the schema with Flyway ({@code db/migration}) at start, over JDBC, before anything else
 * (Kafka consumers, the outbox relay) touches the database.
 */
@ApplicationScoped
public class DatabaseMigrations {

    private static final Logger LOG = Logger.getLogger(DatabaseMigrations.class);

    @ConfigProperty(name = "quarkus.datasource.jdbc.url")
    String url;
    @ConfigProperty(name = "quarkus.datasource.username")
    String username;
    @ConfigProperty(name = "quarkus.datasource.password", defaultValue = "")
    String password;
    @ConfigProperty(name = "csi.claims.migrate-at-start", defaultValue = "true")
    boolean migrateAtStart;

    void migrate(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE) StartupEvent event) {
        if (!migrateAtStart) {
            return;
        }
        var result = Flyway.configure()
                .dataSource(url, username, password)
                .locations("classpath:db/migration")
                .load()
                .migrate();
        LOG.infof("database schema at version %s (%d migration(s) applied)", result.targetSchemaVersion, result.migrationsExecuted);
    }
}
