package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.csiorchestrator.support.migrations.Migration;
import io.csiorchestrator.support.migrations.MigrationScripts;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * claim-service's scripts as this build finds them, against the history Flyway 12 wrote for them (a database of
 * `./csi up` on 2026-12-01, before Flyway was taken out): same scripts, versions and checksums, so every database an
 * earlier build migrated validates and goes on.
 */
class FlywayHistoryTest {

    @Test
    void everyScriptHasTheVersionAndChecksumFlywayRecorded() {
        Map<String, String> flyway = new LinkedHashMap<>();
        flyway.put("V1__claims.sql", "1 -747090710");
        flyway.put("V2__observability.sql", "2 583304864");
        flyway.put("V3_12__volume_conditions.sql", "3.12 657974350");
        flyway.put("V3_13__plugin_outages.sql", "3.13 1821071521");
        flyway.put("V3_19__fencing.sql", "3.19 892306329");
        flyway.put("V3_19_1__storage_fence.sql", "3.19.1 1159912109");
        flyway.put("V5_14__provisions.sql", "5.14 943709272");
        flyway.put("V5_15__snapshots.sql", "5.15 1553175708");
        flyway.put("V5_15_1__snapshot_secrets.sql", "5.15.1 -644653527");
        flyway.put("V5_16_3__provision_expansion.sql", "5.16.3 -1642461447");
        flyway.put("V7_14_1__node_expansion.sql", "7.14.1 351674228");
        flyway.put("V7_14_2__volume_listings.sql", "7.14.2 1920353322");
        flyway.put("V7_19__detach_note.sql", "7.19 -1723505045");
        flyway.put("V8_1__due_notify.sql", "8.1 1844416859");
        flyway.put("V8_2__claims_node_held.sql", "8.2 1020063572");
        flyway.put("V8_3__outbox_direct.sql", "8.3 160521399");
        flyway.put("V11_34_3__volume_usage.sql", "11.34.3 1960936733");
        flyway.put("V12_36__claim_enums.sql", "12.36 2119707404");

        List<Migration> scripts = MigrationScripts.load(List.of("classpath:db/migration"),
                FlywayHistoryTest.class.getClassLoader());

        Map<String, String> found = new LinkedHashMap<>();
        scripts.stream().sorted().forEach(m -> found.put(m.script(), m.version() + " " + m.checksum()));
        assertEquals(flyway, found);
    }
}
