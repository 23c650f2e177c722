package io.csiorchestrator.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.csiorchestrator.support.migrations.Migration;
import io.csiorchestrator.support.migrations.MigrationScripts;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The registry's scripts as this build finds them, against the history Flyway 12 wrote for them (a database of
 * `./csi up` on 2026-12-01, before Flyway was taken out): every database an earlier build migrated validates and goes on.
 */
class FlywayHistoryTest {

    @Test
    void everyScriptHasTheVersionAndChecksumFlywayRecorded() {
        Map<String, String> flyway = new LinkedHashMap<>();
        flyway.put("V1__plugins_and_instances.sql", "1 -377951971");
        flyway.put("V2__publication_tracking.sql", "2 -736369795");
        flyway.put("V3__node_leases.sql", "3 -325279065");

        Map<String, String> found = new LinkedHashMap<>();
        MigrationScripts.load(List.of("classpath:db/migration"), FlywayHistoryTest.class.getClassLoader()).stream()
                .sorted().forEach(m -> found.put(m.script(), m.version() + " " + m.checksum()));
        assertEquals(flyway, found);
    }
}
