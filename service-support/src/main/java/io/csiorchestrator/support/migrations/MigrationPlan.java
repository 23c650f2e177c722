package io.csiorchestrator.support.migrations;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What to apply, from the scripts of this build and the history the database holds, with the rules Flyway applies by
 * default (validate on migrate, no out-of-order, future migrations ignored). Pure: no database, no framework.
 *
 * @param pending  the scripts to apply, in version order
 * @param problems every reason not to apply anything (empty when the history agrees with the scripts)
 * @param future   versions applied by a newer build that this one does not know (ignored, as Flyway does)
 */
public record MigrationPlan(List<Migration> pending, List<String> problems, List<String> future) {

    /**
     * One row of {@code flyway_schema_history}.
     *
     * @param version  null for a row without a version (Flyway's schema-creation marker)
     * @param type     {@code SQL} for a script, {@code BASELINE} for a baseline
     * @param checksum null for a baseline
     */
    public record Applied(String version, String script, String type, Integer checksum, boolean success) {
    }

    /** The plan for {@code scripts} (any order) against {@code history}. */
    public static MigrationPlan of(List<Migration> scripts, List<Applied> history) {
        List<String> problems = new ArrayList<>();
        List<String> future = new ArrayList<>();
        List<Migration> sorted = new ArrayList<>(scripts);
        sorted.sort(null);
        Map<List<java.math.BigInteger>, Migration> local = new HashMap<>();
        for (Migration m : sorted) {
            Migration twin = local.putIfAbsent(m.versionParts(), m);
            if (twin != null) {
                problems.add("two migration scripts have version " + m.version() + ": " + twin.script() + " and " + m.script());
            }
        }
        String newestLocal = sorted.isEmpty() ? "0" : sorted.get(sorted.size() - 1).version();
        String newestApplied = null;
        String baseline = null;
        Map<List<java.math.BigInteger>, Applied> applied = new HashMap<>();
        for (Applied row : history) {
            if (row.version() == null) {
                continue;
            }
            if (!row.success()) {
                problems.add("migration " + row.script() + " (version " + row.version() + ") is recorded as failed in "
                        + "flyway_schema_history: undo what it did and delete its row, then start again");
                continue;
            }
            applied.put(Migration.partsOf(row.version()), row);
            if (newestApplied == null || Migration.compareVersions(row.version(), newestApplied) > 0) {
                newestApplied = row.version();
            }
            if (!"SQL".equals(row.type())) {
                if ("BASELINE".equals(row.type())) {
                    baseline = row.version(); // it stands for every script up to its version
                }
                continue;
            }
            Migration script = local.get(Migration.partsOf(row.version()));
            if (script == null) {
                if (Migration.compareVersions(row.version(), newestLocal) > 0) {
                    future.add(row.version());
                } else {
                    problems.add("migration " + row.script() + " (version " + row.version()
                            + ") is applied to the database but this build has no such script");
                }
            } else if (row.checksum() == null || row.checksum() != script.checksum()) {
                problems.add("migration " + script.script() + " changed after it was applied: checksum "
                        + row.checksum() + " in the database, " + script.checksum() + " in this build");
            }
        }
        List<Migration> pending = new ArrayList<>();
        for (Migration m : sorted) {
            if (applied.containsKey(m.versionParts())
                    || baseline != null && Migration.compareVersions(m.version(), baseline) <= 0) {
                continue;
            }
            if (newestApplied != null && Migration.compareVersions(m.version(), newestApplied) < 0) {
                problems.add("migration " + m.script() + " is older than version " + newestApplied
                        + ", already applied, and was never applied itself (out of order)");
            } else {
                pending.add(m);
            }
        }
        return new MigrationPlan(List.copyOf(pending), List.copyOf(problems), List.copyOf(future));
    }
}
