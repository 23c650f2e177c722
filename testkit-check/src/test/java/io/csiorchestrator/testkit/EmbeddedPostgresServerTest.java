package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

import org.junit.jupiter.api.Test;

/** A standalone server (not the shared one), used as a plain class with JDBC. */
class EmbeddedPostgresServerTest {

    @Test
    void startsCreatesDatabasesAndServesJdbc() throws Exception {
        long begin = System.nanoTime();
        try (EmbeddedPostgresServer pg = EmbeddedPostgresServer.start()) {
            System.out.printf("EmbeddedPostgresServer started in %d ms on port %d%n",
                (System.nanoTime() - begin) / 1_000_000, pg.port());
            String first = pg.createDatabase();
            String second = pg.createDatabase();
            assertNotEquals(first, second);
            assertTrue(first.matches("test_\\d+"), first);
            assertEquals("postgresql://127.0.0.1:" + pg.port() + "/" + first, pg.reactiveUrl(first));

            try (Connection c = DriverManager.getConnection(pg.jdbcUrl(first), pg.username(), pg.password());
                 Statement s = c.createStatement()) {
                s.execute("create table claim (id bigint primary key, volume text not null)");
                s.execute("insert into claim values (1, 'vol-1')");
                try (ResultSet rs = s.executeQuery("select volume, current_database() from claim where id = 1")) {
                    assertTrue(rs.next());
                    assertEquals("vol-1", rs.getString(1));
                    assertEquals(first, rs.getString(2));
                }
            }
            // The second database is separate and empty.
            try (Connection c = pg.dataSource(second).getConnection(); Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("select count(*) from information_schema.tables where table_name = 'claim'")) {
                assertTrue(rs.next());
                assertEquals(0, rs.getInt(1));
            }
            pg.dropDatabase(second);
            assertThrows(IllegalArgumentException.class, () -> pg.createDatabase("bad name; drop"));
        }
    }
}
