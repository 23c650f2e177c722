package io.csiorchestrator.support.migrations;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.support.migrations.MigrationPlan.Applied;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Pure: the names, checksums and rules Flyway applies, so that either can take over the other's database. */
class MigrationPlanTest {

    private static final Migration V1 = Migration.of("V1__things.sql", "CREATE TABLE things (id TEXT PRIMARY KEY);\n");
    private static final Migration V2 = Migration.of("V2__more_things.sql", "ALTER TABLE things ADD COLUMN label TEXT;\n");
    private static final Migration V3_19_1 = Migration.of("V3_19_1__storage_fence.sql", "SELECT 1;\n");
    private static final Migration V3_2 = Migration.of("V3_2__late.sql", "SELECT 2;\n");

    private static Applied applied(Migration m) {
        return new Applied(m.version(), m.script(), "SQL", m.checksum(), true);
    }

    @Test
    void namesAndChecksumsAreFlyways() {
        assertEquals("3.19.1", V3_19_1.version());
        assertEquals("storage fence", V3_19_1.description());
        // the checksums Flyway 12 recorded for these two scripts (CRC-32 of each line's bytes, without line breaks)
        assertEquals(160323775, V1.checksum());
        assertEquals(2124240016, V2.checksum());
        // line breaks and a byte order mark do not count
        assertEquals(Migration.checksumOf("a\nb\nc\n"), Migration.checksumOf("\uFEFFa\r\nb\nc"));
        assertEquals(891568578, Migration.checksumOf("a\nb\nc"));
    }

    @Test
    void aBadNameIsRefusedNamingTheScript() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Migration.of("V1_things.sql", "SELECT 1;"));
        assertTrue(e.getMessage().contains("'V1_things.sql'"), e.getMessage());
    }

    @Test
    void versionsCompareAsNumbersPartByPart() {
        assertTrue(Migration.compareVersions("3.19.1", "3.2") > 0);
        assertTrue(Migration.compareVersions("12.36", "11.34.3") > 0);
        assertEquals(0, Migration.compareVersions("1.0", "1"));
    }

    @Test
    void pendingAreTheUnappliedInVersionOrder() {
        MigrationPlan fresh = MigrationPlan.of(List.of(V3_19_1, V2, V1, V3_2), List.of());
        assertEquals(List.of(V1, V2, V3_2, V3_19_1), fresh.pending());
        assertEquals(List.of(), fresh.problems());

        MigrationPlan later = MigrationPlan.of(List.of(V1, V2, V3_2), List.of(applied(V1), applied(V2)));
        assertEquals(List.of(V3_2), later.pending());
        assertEquals(List.of(), later.problems());
    }

    @Test
    void everyDisagreementIsNamedAndNothingIsPending() {
        Migration changed = Migration.of("V2__more_things.sql", "ALTER TABLE things ADD COLUMN name TEXT;\n");
        List<Applied> history = List.of(applied(V1), applied(V2), applied(V3_19_1),
                new Applied("1.5", "V1_5__gone.sql", "SQL", 7, true));
        MigrationPlan plan = MigrationPlan.of(List.of(V1, changed, V3_2, V3_19_1), history);

        assertEquals(3, plan.problems().size(), plan.problems().toString());
        assertTrue(plan.problems().get(0).contains("V2__more_things.sql changed after it was applied: checksum "
                + V2.checksum() + " in the database, " + changed.checksum() + " in this build"), plan.problems().toString());
        assertTrue(plan.problems().get(1).contains("V1_5__gone.sql (version 1.5) is applied to the database but this build"
                + " has no such script"), plan.problems().toString());
        assertTrue(plan.problems().get(2).contains("V3_2__late.sql is older than version 3.19.1"), plan.problems().toString());
    }

    @Test
    void aNewerBuildsMigrationsAreIgnoredAndAFailedOneIsRefused() {
        MigrationPlan older = MigrationPlan.of(List.of(V1, V2),
                List.of(applied(V1), applied(V2), applied(V3_19_1)));
        assertEquals(List.of("3.19.1"), older.future());
        assertEquals(List.of(), older.problems());
        assertEquals(List.of(), older.pending());

        MigrationPlan failed = MigrationPlan.of(List.of(V1, V2),
                List.of(applied(V1), new Applied("2", "V2__more_things.sql", "SQL", V2.checksum(), false)));
        assertEquals(1, failed.problems().size());
        assertTrue(failed.problems().get(0).contains("recorded as failed"), failed.problems().toString());
    }

    @Test
    void twoScriptsOfOneVersionAreRefused() {
        Migration twin = Migration.of("V1_0__twin.sql", "SELECT 3;\n");
        MigrationPlan plan = MigrationPlan.of(List.of(V1, twin), List.of());
        assertTrue(plan.problems().get(0).contains("two migration scripts have version"), plan.problems().toString());
    }

    @Test
    void aBaselineStandsForEverythingUpToItsVersion() {
        MigrationPlan plan = MigrationPlan.of(List.of(V1, V2, V3_2),
                List.of(new Applied("2", "<< Flyway Baseline >>", "BASELINE", null, true)));
        assertEquals(List.of(V3_2), plan.pending());
        assertEquals(List.of(), plan.problems());
    }
}
