package io.csiorchestrator.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.support.migrations.SchemaMigrator;
import io.csiorchestrator.testkit.EmbeddedPostgresServer;
import io.vertx.core.Vertx;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Against a real PostgreSQL (testkit's EmbeddedPostgresServer) over a real reactive pool, one fresh database per test. */
class DatabaseMigrationsTest {

    private static final List<String> LOCATIONS = List.of("classpath:db/support-test");

    private static EmbeddedPostgresServer postgres;
    private static Vertx vertx;

    @BeforeAll
    static void startPostgres() {
        postgres = EmbeddedPostgresServer.start();
        vertx = Vertx.vertx();
    }

    @AfterAll
    static void stopPostgres() {
        if (vertx != null) {
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
        if (postgres != null) {
            postgres.close();
        }
    }

    @Test
    void appliesPendingMigrationsOnceWithTheHistoryFlywayWrites() throws SQLException {
        String db = postgres.createDatabase();
        Pool pool = pool(db);

        SchemaMigrator.Result first = bean(true, LOCATIONS).migrateWith(pool);
        assertEquals(new SchemaMigrator.Result("2", 2), first);
        assertTrue(hasColumn(db, "things", "label"));
        // the rows Flyway would have written: a Flyway of an older build goes on from here, and this from Flyway's
        assertEquals(List.of("1|1|things|SQL|V1__things.sql|160323775|" + postgres.username() + "|true",
                        "2|2|more things|SQL|V2__more_things.sql|2124240016|" + postgres.username() + "|true"),
                rows(db, "SELECT installed_rank, version, description, type, script, checksum, installed_by, success "
                        + "FROM flyway_schema_history ORDER BY installed_rank"));

        SchemaMigrator.Result second = bean(true, LOCATIONS).migrateWith(pool);
        assertEquals(new SchemaMigrator.Result("2", 0), second);
        pool.close();
    }

    @Test
    void aHistoryFlywayWroteGoesOnWithTheNextScriptAndAChangedScriptIsRefused() throws SQLException {
        String db = postgres.createDatabase();
        // what Flyway 12 left in a database at version 1: its DDL, its row
        execute(db, "CREATE TABLE \"public\".\"flyway_schema_history\" (\"installed_rank\" INT NOT NULL, \"version\" "
                + "VARCHAR(50), \"description\" VARCHAR(200) NOT NULL, \"type\" VARCHAR(20) NOT NULL, \"script\" "
                + "VARCHAR(1000) NOT NULL, \"checksum\" INTEGER, \"installed_by\" VARCHAR(100) NOT NULL, \"installed_on\" "
                + "TIMESTAMP NOT NULL DEFAULT now(), \"execution_time\" INTEGER NOT NULL, \"success\" BOOLEAN NOT NULL); "
                + "ALTER TABLE \"public\".\"flyway_schema_history\" ADD CONSTRAINT \"flyway_schema_history_pk\" PRIMARY KEY "
                + "(\"installed_rank\"); CREATE INDEX \"flyway_schema_history_s_idx\" ON \"public\".\"flyway_schema_history\" "
                + "(\"success\"); CREATE TABLE things (id TEXT PRIMARY KEY); INSERT INTO flyway_schema_history VALUES "
                + "(1, '1', 'things', 'SQL', 'V1__things.sql', 160323775, 'postgres', now(), 12, true)");
        Pool pool = pool(db);

        assertEquals(new SchemaMigrator.Result("2", 1), bean(true, LOCATIONS).migrateWith(pool));
        assertTrue(hasColumn(db, "things", "label"));

        execute(db, "UPDATE flyway_schema_history SET checksum = 42 WHERE version = '1'");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> bean(true, LOCATIONS).migrateWith(pool));
        assertTrue(e.getMessage().contains("V1__things.sql changed after it was applied: checksum 42 in the database, "
                + "160323775 in this build"), e.getMessage());
        pool.close();
    }

    @Test
    void aFailingScriptLeavesNothingOfItAndIsNamed() throws SQLException {
        String db = postgres.createDatabase();
        Pool pool = pool(db);

        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> bean(true, List.of("classpath:db/support-broken")).migrateWith(pool));

        assertTrue(e.getMessage().startsWith("migration V3__broken.sql failed, nothing of it applied: "), e.getMessage());
        assertTrue(e.getMessage().contains("nowhere"), e.getMessage());
        assertFalse(hasTable(db, "broken"));
        assertTrue(hasColumn(db, "things", "label"), "the scripts before it stay applied");
        assertEquals(List.of("1", "2"), rows(db, "SELECT version FROM flyway_schema_history ORDER BY installed_rank"));
        pool.close();
    }

    /** Also: while one waits, the lock's holder can be named (the migrator logs it before it waits). */
    @Test
    void twoReplicasStartingAtOnceApplyEachScriptOnce() throws Exception {
        String db = postgres.createDatabase();
        // one session holds the lock both migrators take, so both are waiting for it when it is released
        try (Connection holder = postgres.dataSource(db).getConnection(); Statement st = holder.createStatement()) {
            long lock = 77431708279161L + "\"public\".\"flyway_schema_history\"".hashCode();
            st.execute("SET application_name = 'migration-test-holder'");
            st.execute("SELECT pg_advisory_lock(" + lock + ")");
            String holderPid = rows(db, "SELECT pid FROM pg_stat_activity WHERE application_name = 'migration-test-holder'").get(0);
            Pool probe = pool(db);
            io.vertx.sqlclient.SqlConnection conn = probe.getConnection().toCompletionStage().toCompletableFuture().get();
            String named = SchemaMigrator.lockHolder(conn, lock).orElseThrow();
            assertTrue(named.startsWith("backend pid " + holderPid + " (application \"migration-test-holder\""), named);
            assertTrue(SchemaMigrator.lockHolder(conn, lock + 1).isEmpty(), "nobody holds another lock");
            conn.close();
            probe.close();
            List<CompletableFuture<SchemaMigrator.Result>> runs = new ArrayList<>();
            CountDownLatch started = new CountDownLatch(2);
            for (int i = 0; i < 2; i++) {
                Pool pool = pool(db);
                runs.add(CompletableFuture.supplyAsync(() -> {
                    started.countDown();
                    return bean(true, LOCATIONS).migrateWith(pool);
                }));
            }
            started.await();
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() -> rows(db,
                    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").size() == 2);
            st.execute("SELECT pg_advisory_unlock(" + lock + ")");
            int applied = 0;
            for (CompletableFuture<SchemaMigrator.Result> run : runs) {
                applied += run.get().applied();
            }
            assertEquals(2, applied, "two scripts, each applied by one replica");
        }
        assertEquals(List.of("1", "2"), rows(db, "SELECT version FROM flyway_schema_history ORDER BY installed_rank"));
    }

    @Test
    void switchedOffItLeavesTheDatabaseAlone() throws SQLException {
        String db = postgres.createDatabase();
        DatabaseMigrations migrations = bean(false, LOCATIONS); // no pool: switched off, it never asks for one

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

    private static DatabaseMigrations bean(boolean migrateAtStart, List<String> locations) {
        DatabaseMigrations migrations = new DatabaseMigrations();
        migrations.migrateAtStart = migrateAtStart;
        migrations.locations = locations;
        return migrations;
    }

    private static Pool pool(String db) {
        PgConnectOptions options = PgConnectOptions.fromUri(postgres.reactiveUrl(db))
                .setUser(postgres.username()).setPassword(postgres.password());
        return PgBuilder.pool().connectingTo(options).with(new PoolOptions().setMaxSize(2)).using(vertx).build();
    }

    private static void execute(String db, String sql) throws SQLException {
        try (Connection c = postgres.dataSource(db).getConnection(); Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    private static List<String> rows(String db, String sql) throws SQLException {
        List<String> rows = new ArrayList<>();
        try (Connection c = postgres.dataSource(db).getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery(sql)) {
            int columns = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                StringBuilder row = new StringBuilder();
                for (int i = 1; i <= columns; i++) {
                    row.append(i > 1 ? "|" : "").append(rs.getString(i));
                }
                rows.add(row.toString().replace("|t|", "|true|").replaceAll("\\|t$", "|true"));
            }
        }
        return rows;
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
