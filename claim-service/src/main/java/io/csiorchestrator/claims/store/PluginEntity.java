package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;
import java.time.Instant;
import java.util.Collection;
import java.util.List;

/**
 * The last plugin-status of one plugin, as received: a row of {@code plugins} ({@link Plugins#apply} writes it), read
 * with the statements here (call inside a {@link Transactions} unit of work).
 */
public class PluginEntity {

    private static final String COLUMNS = "plugin_id, controller_required, status_json, updated_at";

    public String pluginId;
    public boolean controllerRequired;
    public String statusJson;
    public Instant updatedAt;

    /** Every plugin's row, by plugin id. */
    public static Uni<List<PluginEntity>> listAll() {
        return SessionSql.select("SELECT " + COLUMNS + " FROM plugins ORDER BY plugin_id")
                .map(rows -> rows.stream().map(PluginEntity::from).toList());
    }

    /** The rows of those of {@code pluginIds} that have one. */
    public static Uni<List<PluginEntity>> byIds(Collection<String> pluginIds) {
        return SessionSql.select("SELECT " + COLUMNS + " FROM plugins WHERE plugin_id = ANY(CAST($1 AS varchar[]))",
                (Object) pluginIds.toArray(new String[0])).map(rows -> rows.stream().map(PluginEntity::from).toList());
    }

    private static PluginEntity from(Object[] r) {
        PluginEntity p = new PluginEntity();
        p.pluginId = (String) r[0];
        p.controllerRequired = (Boolean) r[1];
        p.statusJson = (String) r[2];
        p.updatedAt = SessionSql.instant(r[3]);
        return p;
    }
}
