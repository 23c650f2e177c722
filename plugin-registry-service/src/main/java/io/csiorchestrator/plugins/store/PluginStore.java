package io.csiorchestrator.plugins.store;

import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.persistence.LockModeType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import org.hibernate.reactive.mutiny.Mutiny;

/**
 * The queries of the registry, each within a session (and transaction) the caller opened. Changes of
 * one plugin are serialized by a row lock on its {@code plugin} row; publishing its status by a
 * transaction-scoped advisory lock on its id.
 */
@ApplicationScoped
public class PluginStore {

    /** Namespaces the advisory locks of this service (the high 32 bits of their key). */
    private static final long PUBLISH_LOCK_SPACE = 0x706c7567L; // "plug"

    /**
     * The plugin's row, created empty if missing, locked ({@code FOR UPDATE}) until the transaction
     * ends. Null only if a concurrent sweep removed the plugin between the insert and the lock.
     */
    public Uni<PluginRow> lockOrCreate(Mutiny.Session session, String pluginId, Instant now) {
        OffsetDateTime at = OffsetDateTime.ofInstant(now, ZoneOffset.UTC);
        return session.createNativeQuery(
                        "insert into plugin (id, created_at, updated_at) values (:id, :now, :now) on conflict (id) do nothing")
                .setParameter("id", pluginId)
                .setParameter("now", at)
                .executeUpdate()
                .chain(() -> lock(session, pluginId));
    }

    /** The plugin's row locked ({@code FOR UPDATE}) until the transaction ends, or null. */
    public Uni<PluginRow> lock(Mutiny.Session session, String pluginId) {
        return session.find(PluginRow.class, pluginId, LockModeType.PESSIMISTIC_WRITE);
    }

    public Uni<PluginRow> find(Mutiny.Session session, String pluginId) {
        return session.find(PluginRow.class, pluginId);
    }

    public Uni<List<PluginRow>> all(Mutiny.Session session) {
        return session.createNamedQuery(PluginRow.ALL, PluginRow.class).getResultList();
    }

    /** The plugin's instances, by node id. */
    public Uni<List<PluginInstanceRow>> instances(Mutiny.Session session, String pluginId) {
        return session.createNamedQuery(PluginInstanceRow.OF_PLUGIN, PluginInstanceRow.class)
                .setParameter("pluginId", pluginId)
                .getResultList();
    }

    /**
     * Ids of plugins with an instance to silence (not silent yet, last received before
     * {@code silentBefore}) or to remove (last received before {@code removedBefore}).
     */
    public Uni<List<String>> pluginsDueForSweep(Mutiny.Session session, Instant silentBefore, Instant removedBefore) {
        return session.createNamedQuery(PluginInstanceRow.PLUGINS_DUE_FOR_SWEEP, String.class)
                .setParameter("silentBefore", silentBefore)
                .setParameter("removedBefore", removedBefore)
                .getResultList();
    }

    public Uni<Integer> deleteInstances(Mutiny.Session session, String pluginId, List<String> nodeIds) {
        if (nodeIds.isEmpty()) {
            return Uni.createFrom().item(0);
        }
        return session.createNamedQuery(PluginInstanceRow.DELETE_NODES)
                .setParameter("pluginId", pluginId)
                .setParameter("nodeIds", nodeIds)
                .executeUpdate();
    }

    /** Ids of plugins whose latest status was not acknowledged by the broker, changed before {@code changedBefore}. */
    public Uni<List<String>> publicationPending(Mutiny.Session session, Instant changedBefore) {
        return session.createNamedQuery(PluginRow.PUBLICATION_PENDING, String.class)
                .setParameter("changedBefore", changedBefore)
                .getResultList();
    }

    /** Records that status {@code version} of the plugin reached the broker (never moves backwards). */
    public Uni<Integer> markPublished(Mutiny.Session session, String pluginId, long version) {
        return session.createNamedQuery(PluginRow.MARK_PUBLISHED)
                .setParameter("pluginId", pluginId)
                .setParameter("version", version)
                .executeUpdate();
    }

    /** Deletes the row of a removed plugin once its tombstone is out, unless it came back meanwhile. */
    public Uni<Integer> deleteRemoved(Mutiny.Session session, String pluginId, long version) {
        return session.createNamedQuery(PluginRow.DELETE_REMOVED)
                .setParameter("pluginId", pluginId)
                .setParameter("version", version)
                .executeUpdate();
    }

    /**
     * Takes the advisory lock that serializes the publishing of one plugin's status, held until the
     * transaction ends: each publisher then reads a view at least as new as the one published before it.
     */
    public Uni<Void> lockPublishing(Mutiny.Session session, String pluginId) {
        return session.createNativeQuery("select pg_advisory_xact_lock(:key) is null", Boolean.class)
                .setParameter("key", publishLockKey(pluginId))
                .getSingleResult()
                .replaceWithVoid();
    }

    static long publishLockKey(String pluginId) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(pluginId.getBytes(StandardCharsets.UTF_8));
            long low = ByteBuffer.wrap(digest).getInt() & 0xffffffffL;
            return (PUBLISH_LOCK_SPACE << 32) | low;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing", e);
        }
    }
}
