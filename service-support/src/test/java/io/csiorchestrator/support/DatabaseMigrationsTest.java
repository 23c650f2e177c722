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
        migrations.url = postgres.jdbcUrl(db);
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
