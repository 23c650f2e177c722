package io.csiorchestrator.claims.store;

import io.csiorchestrator.claims.domain.ClaimRules.NodeFacts;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.PluginStatus;
import io.quarkus.hibernate.reactive.panache.Panache;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import org.hibernate.FlushMode;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The local copy of plugin-status: one row per plugin (the last status), and each plugin's node
 * instances with the time they went missing or unhealthy. Call inside a session/transaction.
 */
@ApplicationScoped
public class Plugins {

    /** Stores a plugin's status (null = tombstone: the plugin is removed, its node instances are gone). */
    public Uni<Void> apply(String pluginId, PluginStatus status) {
        Instant now = Instant.now();
        if (status == null) {
            return PluginEntity.delete("pluginId", pluginId)
                    .chain(() -> Panache.getSession())
                    .chain(s -> s.createNativeQuery("UPDATE plugin_nodes SET present = false, healthy = false,"
                                    + " unhealthy_since = COALESCE(unhealthy_since, :now), updated_at = :now WHERE plugin_id = :p")
                            .setParameter("now", now).setParameter("p", pluginId).executeUpdate())
                    .replaceWithVoid();
        }
        return PluginEntity.<PluginEntity>findById(pluginId).chain(existing -> {
            PluginEntity row = existing == null ? new PluginEntity() : existing;
            row.pluginId = pluginId;
            row.controllerRequired = status.controllerRequired();
            row.statusJson = EventCodec.encodeToString(status);
            row.updatedAt = now;
            return row.<PluginEntity>persist();
        }).chain(() -> Panache.getSession()).chain(s -> {
            Uni<Integer> chain = s.createNativeQuery("UPDATE plugin_nodes SET present = false, healthy = false,"
                            + " unhealthy_since = COALESCE(unhealthy_since, :now), updated_at = :now WHERE plugin_id = :p")
                    .setParameter("now", now).setParameter("p", pluginId).executeUpdate();
            for (PluginStatus.NodeInstance n : status.nodes()) {
                boolean healthy = Boolean.TRUE.equals(n.healthy());
                chain = chain.chain(() -> s.createNativeQuery("INSERT INTO plugin_nodes (plugin_id, node_id, external_node_id, healthy,"
                                + " present, unhealthy_since, updated_at, last_healthy_at) VALUES (:p, :n, :e, :h, true,"
                                + " CASE WHEN :h THEN CAST(NULL AS timestamptz) ELSE :now END, :now, CASE WHEN :h THEN :now ELSE CAST(NULL AS timestamptz) END)"
                                + " ON CONFLICT (plugin_id, node_id) DO UPDATE SET external_node_id = EXCLUDED.external_node_id,"
                                + " healthy = EXCLUDED.healthy, present = true, updated_at = EXCLUDED.updated_at,"
                                + " last_healthy_at = COALESCE(EXCLUDED.last_healthy_at, plugin_nodes.last_healthy_at),"
                                + " unhealthy_since = CASE WHEN EXCLUDED.healthy THEN NULL"
                                + " ELSE COALESCE(plugin_nodes.unhealthy_since, EXCLUDED.unhealthy_since) END")
                        .setParameter("p", pluginId).setParameter("n", n.nodeId()).setParameter("e", n.externalNodeId())
                        .setParameter("h", healthy)
                        .setParameter("now", now).executeUpdate());
            }
            return chain.replaceWithVoid();
        });
    }

    /** The plugin's last status (null: never heard of, or removed). */
    public Uni<PluginStatus> status(String pluginId) {
        return PluginEntity.<PluginEntity>findById(pluginId)
                .map(row -> row == null ? null : EventCodec.decode(PluginStatus.class, row.statusJson));
    }

    /** The plugin as last heard of, with the outages of its node instances that were healthy before. */
    public Uni<PluginFacts> facts(String pluginId) {
        return PluginEntity.<PluginEntity>findById(pluginId).map(row -> row == null ? PluginFacts.unknown(pluginId) : toFacts(row))
                .chain(facts -> outages(pluginId).map(facts::withOutages));
    }

    /** By node id, since when each node instance of the plugin that was healthy before is unhealthy or missing. */
    Uni<Map<String, Instant>> outages(String pluginId) {
        // HQL, not a native select: see PluginNodeEntity. No auto-flush: nothing pending in the session changes plugin_nodes.
        return Panache.getSession().chain(s -> s.createSelectionQuery("select n.nodeId, n.unhealthySince from PluginNodeEntity n"
                        + " where n.pluginId = :p and n.unhealthySince is not null and n.lastHealthyAt is not null", Object[].class)
                .setFlushMode(FlushMode.MANUAL).setParameter("p", pluginId).getResultList())
                .map(rows -> {
                    Map<String, Instant> out = new HashMap<>();
                    for (Object[] r : rows) {
                        out.put((String) r[0], toInstant(r[1]));
                    }
                    return out;
                });
    }

    private static Instant toInstant(Object value) {
        if (value instanceof Instant i) {
            return i;
        }
        if (value instanceof java.time.OffsetDateTime o) {
            return o.toInstant();
        }
        if (value instanceof java.time.LocalDateTime l) {
            return l.toInstant(java.time.ZoneOffset.UTC);
        }
        if (value instanceof java.util.Date d) {
            return d.toInstant();
        }
        throw new IllegalStateException("unexpected timestamp type " + (value == null ? null : value.getClass()));
    }

    public Uni<Map<String, PluginFacts>> facts(Collection<String> pluginIds) {
        if (pluginIds.isEmpty()) {
            return Uni.createFrom().item(Map.of());
        }
        return PluginEntity.<PluginEntity>list("pluginId in ?1", List.copyOf(pluginIds)).map(rows -> {
            Map<String, PluginFacts> out = new HashMap<>();
            for (String id : pluginIds) {
                out.put(id, PluginFacts.unknown(id));
            }
            for (PluginEntity row : rows) {
                out.put(row.pluginId, toFacts(row));
            }
            return out;
        });
    }

    /**
     * {@code facts} with the count of the plugin's volumes {@code nodeId} holds (current claims, in flight included),
     * other than {@code volumeKey}, when the claim of that volume needs it for the node's limit
     * ({@link io.csiorchestrator.claims.domain.NodeLimits#needsCount}); else {@code facts} as they are, with no query:
     * a node without a limit costs the claim path nothing. One indexed count (claims_node_held) under the volume's lock.
     */
    public Uni<PluginFacts> withVolumesHeld(PluginFacts facts, io.csiorchestrator.claims.domain.ClaimRules.VolumeFacts volume,
                                            String volumeKey, String nodeId) {
        if (!io.csiorchestrator.claims.domain.NodeLimits.needsCount(volume, facts, nodeId)) {
            return Uni.createFrom().item(facts);
        }
        return Panache.getSession().chain(s -> s.createNativeQuery("SELECT count(DISTINCT c.volume_key) FROM claims c"
                        + " JOIN volumes v ON v.volume_key = c.volume_key WHERE c.node_id = :n AND NOT c.past"
                        + " AND v.plugin_id = :p AND c.volume_key <> :self", Long.class)
                .setFlushMode(FlushMode.MANUAL)
                .setParameter("n", nodeId).setParameter("p", facts.pluginId()).setParameter("self", volumeKey)
                .getSingleResult()).map(count -> facts.withVolumesHeld(nodeId, count));
    }

    /** Whether the plugin's instance on the node has been missing or unhealthy since before {@code before}. */
    public Uni<Boolean> goneSince(String pluginId, String nodeId, Instant before) {
        return Panache.getSession().chain(s -> s.createNativeQuery(
                        "SELECT count(*) FROM plugin_nodes WHERE plugin_id = :p AND node_id = :n AND unhealthy_since < :before", Long.class)
                .setParameter("p", pluginId).setParameter("n", nodeId).setParameter("before", before)
                .getSingleResult()).map(count -> count > 0);
    }

    static PluginFacts toFacts(PluginEntity row) {
        PluginStatus status = EventCodec.decode(PluginStatus.class, row.statusJson);
        List<String> controllers = new ArrayList<>();
        for (PluginStatus.ControllerInstance c : status.controllers()) {
            if (Boolean.TRUE.equals(c.healthy())) {
                controllers.add(c.nodeId());
            }
        }
        controllers.sort(String::compareTo);
        Map<String, NodeFacts> nodes = new LinkedHashMap<>();
        for (PluginStatus.NodeInstance n : status.nodes()) {
            nodes.put(n.nodeId(), new NodeFacts(n.nodeId(), n.externalNodeId(), Boolean.TRUE.equals(n.healthy()),
                    n.accessibleTopology(), n.maxVolumes() == null ? 0 : Math.max(0, n.maxVolumes())));
        }
        return new PluginFacts(row.pluginId, true, status.controllerRequired(), controllers, nodes);
    }
}
