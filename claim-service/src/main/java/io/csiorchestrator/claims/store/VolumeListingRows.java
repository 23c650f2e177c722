package io.csiorchestrator.claims.store;

import io.smallrye.mutiny.Uni;

/**
 * The {@code volume_listings} table (issue 14) as whole rows ({@link VolumeListingEntity}), through
 * {@link SessionSql} in the caller's transaction; written explicitly like {@link ProvisionRows}.
 */
public final class VolumeListingRows {

    static final TableSql TABLE = new TableSql("volume_listings", "plugin_id", "started_at", "pages", "command_id",
            "command_node_id", "command_deadline", "completed_at", "last_error");
    private static final String LOCK = TABLE.byKey(" FOR UPDATE");

    private VolumeListingRows() {
    }

    /** The listing of {@code pluginId} locked until the transaction ends (SELECT ... FOR UPDATE), or null. */
    public static Uni<VolumeListingEntity> lock(String pluginId) {
        return SessionSql.select(LOCK, pluginId).map(rows -> TableSql.first(rows, VolumeListingRows::from));
    }

    /** The listing of {@code pluginId}, created empty if missing, locked until the transaction ends. */
    public static Uni<VolumeListingEntity> lockOrCreate(String pluginId) {
        return SessionSql.update("INSERT INTO volume_listings (plugin_id) VALUES ($1) ON CONFLICT DO NOTHING", pluginId)
                .chain(() -> lock(pluginId));
    }

    /** Writes {@code listing} when it changed since its values were {@code stored} ({@link #values}, taken as read). */
    public static Uni<Void> saveIfChanged(VolumeListingEntity listing, Object[] stored) {
        return TABLE.saveIfChanged(values(listing), stored);
    }

    /** The row's values in column order. */
    public static Object[] values(VolumeListingEntity l) {
        return new Object[] {l.pluginId, l.startedAt, l.pages, l.commandId, l.commandNodeId, l.commandDeadline,
                l.completedAt, l.lastError};
    }

    static VolumeListingEntity from(Object[] r) {
        VolumeListingEntity l = new VolumeListingEntity();
        l.pluginId = (String) r[0];
        l.startedAt = SessionSql.instant(r[1]);
        l.pages = TableSql.intValue(r[2]);
        l.commandId = (String) r[3];
        l.commandNodeId = (String) r[4];
        l.commandDeadline = SessionSql.instant(r[5]);
        l.completedAt = SessionSql.instant(r[6]);
        l.lastError = (String) r[7];
        return l;
    }
}
