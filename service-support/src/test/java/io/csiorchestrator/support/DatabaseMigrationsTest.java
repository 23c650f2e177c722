package io.csiorchestrator.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.testkit.EmbeddedPostgresServer;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import org.flywaydb.core.api.output.MigrateResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Against a real PostgreSQL (testkit's EmbeddedPostgresServer), one fresh database per test. */
class DatabaseMigrationsTest {

    private static final List<String> LOCATIONS = List.of("classpath:db/support-test");

    private static EmbeddedPostgresServer postgres;

    @BeforeAll
    static void startPostgres() {
        postgres = EmbeddedPostgresServer.start();
    }

    @AfterAll
    static void stopPostgres() {
        if (postgres != null) {
            postgres.close();
        }
    }

    @Test
    void appliesPendingMigrationsOnceAndNothingTheSecondTime() throws SQLException {
        String db = postgres.createDatabase();
        String url = postgres.jdbcUrl(db);

        MigrateResult first = DatabaseMigrations.migrate(url, postgres.username(), postgres.password(), LOCATIONS);
        assertEquals(2, first.migrationsExecuted);
        assertEquals("2", first.targetSchemaVersion);
        assertTrue(hasColumn(db, "things", "label"));

        MigrateResult second = DatabaseMigrations.migrate(url, postgres.username(), postgres.password(), LOCATIONS);
        assertEquals(0, second.migrationsExecuted);
    }

    @Test
    void theStartupPathMigratesWithItsConfiguredValues() throws SQLException {
        String db = postgres.createDatabase();
        DatabaseMigrations migrations = bean(db, true);

        MigrateResult result = migrations.migrateIfEnabled();

        assertEquals(2, result.migrationsExecuted);
        assertTrue(hasTable(db, "things"));
    }

    @Test
    void anExplicitJdbcUrlWinsOverTheReactiveOne() throws SQLException {
        String db = postgres.createDatabase();
        DatabaseMigrations migrations = bean(db, true);
        migrations.reactiveUrl = java.util.Optional.of("postgresql://127.0.0.1:1/nowhere");
        migrations.jdbcUrl = java.util.Optional.of(postgres.jdbcUrl(db));

        assertEquals(2, migrations.migrateIfEnabled().migrationsExecuted);
        assertTrue(hasTable(db, "things"));
    }

    @Test
    void theJdbcUrlIsTheReactiveUrlsDatabaseWithoutItsCredentials() {
        assertEquals("jdbc:postgresql://db:5432/claims", DatabaseMigrations.jdbcUrlOf("postgresql://db:5432/claims"));
        assertEquals("jdbc:postgresql://db/claims?sslmode=require",
                DatabaseMigrations.jdbcUrlOf(" vertx-reactive:postgresql://db/claims?sslmode=require "));
        assertEquals("jdbc:postgresql://h1:5432,h2:5432/claims",
                DatabaseMigrations.jdbcUrlOf("postgres://claims:s3cret@h1:5432,h2:5432/claims"));
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> DatabaseMigrations.jdbcUrlOf("mysql://claims:s3cret@db/claims"));
        assertTrue(e.getMessage().contains("quarkus.datasource.reactive.url 'mysql://db/claims'"), e.getMessage());
        assertFalse(e.getMessage().contains("s3cret"), e.getMessage());
    }

    @Test
    void switchedOffItLeavesTheDatabaseAlone() throws SQLException {
        String db = postgres.createDatabase();
        DatabaseMigrations migrations = bean(db, false);

        assertNull(migrations.migrateIfEnabled());

        assertFalse(hasTable(db, "things"));
        assertFalse(hasTable(db, "flyway_schema_history"));
    }

    @Test
    void theJarIsABeanArchiveSoQuarkusServicesFindTheBean() throws Exception {
        var classes = java.nio.file.Path.of(
                DatabaseMigrations.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertTrue(java.nio.file.Files.isRegularFile(classes.resolve("META-INF/beans.xml")),
                "META-INF/beans.xml next to " + DatabaseMigrations.class.getName() + " in " + classes);
    }

    private static DatabaseMigrations bean(String db, boolean migrateAtStart) {
        DatabaseMigrations migrations = new DatabaseMigrations();
        migrations.jdbcUrl = java.util.Optional.empty(); // the reactive URL is the one the services are given
        migrations.reactiveUrl = java.util.Optional.of("vertx-reactive:" + postgres.reactiveUrl(db));
        migrations.username = postgres.username();
        migrations.password = postgres.password();
        migrations.migrateAtStart = migrateAtStart;
        migrations.locations = LOCATIONS;
        return migrations;
    }

    private static boolean hasTable(String db, String table) throws SQLException {
        try (Connection c = postgres.dataSource(db).getConnection();
             ResultSet rs = c.getMetaData().getTables(null, "public", table, null)) {
            return rs.next();
        }
    }

    private static boolean hasColumn(String db, String table, String column) throws SQLException {
        try (Connection c = postgres.dataSource(db).getConnection();
             ResultSet rs = c.getMetaData().getColumns(null, "public", table, column)) {
            return rs.next();
        }
    }
}
