package io.csiorchestrator.claims.store;

import io.csiorchestrator.claims.domain.ClaimRules.NodeFacts;
import io.csiorchestrator.claims.domain.ClaimRules.PluginFacts;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.PluginStatus;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The local copy of plugin-status: one row per plugin (the last status), and each plugin's node
 * instances with the time they went missing or unhealthy. Call inside a unit of work ({@link Transactions}).
 */
@ApplicationScoped
public class Plugins {

    /**
     * Stores a plugin's status (null = tombstone: the plugin is removed, its node instances are gone). Prepared
     * statements, not managed entities (issue 36 item 3): the plugin's row, then its node instances in two statements
     * whatever their number (all marked gone, then the reported ones upserted from arrays).
     */
    public Uni<Void> apply(String pluginId, PluginStatus status) {
        Instant now = Instant.now();
        if (status == null) {
            return SessionSql.update("DELETE FROM plugins WHERE plugin_id = $1", pluginId)
                    .chain(() -> SessionSql.update(MARK_NODES_GONE, pluginId, now))
                    .replaceWithVoid();
        }
        Map<String, PluginStatus.NodeInstance> reported = new LinkedHashMap<>(); // one row per node (the last, as before)
        for (PluginStatus.NodeInstance node : status.nodes()) {
            reported.put(node.nodeId(), node);
        }
        int n = reported.size();
        String[] nodeIds = new String[n];
        String[] externalIds = new String[n];
        Boolean[] healthy = new Boolean[n];
        int i = 0;
        for (PluginStatus.NodeInstance node : reported.values()) {
            nodeIds[i] = node.nodeId();
            externalIds[i] = node.externalNodeId();
            healthy[i++] = Boolean.TRUE.equals(node.healthy());
        }
        return SessionSql.update("INSERT INTO plugins (plugin_id, controller_required, status_json, updated_at)"
                        + " VALUES ($1, $2, $3, $4) ON CONFLICT (plugin_id) DO UPDATE SET controller_required ="
                        + " EXCLUDED.controller_required, status_json = EXCLUDED.status_json, updated_at = EXCLUDED.updated_at",
                pluginId, status.controllerRequired(), EventCodec.encodeToString(status), now)
                .chain(() -> SessionSql.update(MARK_NODES_GONE, pluginId, now))
                .chain(() -> n == 0 ? Uni.createFrom().item(0) : SessionSql.update(UPSERT_NODES, pluginId, nodeIds, externalIds, healthy, now))
                .replaceWithVoid();
    }

    private static final String MARK_NODES_GONE = "UPDATE plugin_nodes SET present = false, healthy = false,"
            + " unhealthy_since = COALESCE(unhealthy_since, $2), updated_at = $2 WHERE plugin_id = $1";

    /** The reported node instances: present, healthy or not; an outage starts when one healthy before is not. */
    private static final String UPSERT_NODES = "INSERT INTO plugin_nodes (plugin_id, node_id, external_node_id, healthy,"
            + " present, unhealthy_since, updated_at, last_healthy_at)"
            + " SELECT CAST($1 AS varchar), u.node_id, u.external_node_id, u.healthy, true,"
            + " CASE WHEN u.healthy THEN NULL ELSE CAST($5 AS timestamptz) END, CAST($5 AS timestamptz),"
            + " CASE WHEN u.healthy THEN CAST($5 AS timestamptz) ELSE NULL END"
            + " FROM unnest(CAST($2 AS varchar[]), CAST($3 AS varchar[]), CAST($4 AS boolean[])) AS u(node_id, external_node_id, healthy)"
            + " ON CONFLICT (plugin_id, node_id) DO UPDATE SET external_node_id = EXCLUDED.external_node_id,"
            + " healthy = EXCLUDED.healthy, present = true, updated_at = EXCLUDED.updated_at,"
            + " last_healthy_at = COALESCE(EXCLUDED.last_healthy_at, plugin_nodes.last_healthy_at),"
            + " unhealthy_since = CASE WHEN EXCLUDED.healthy THEN NULL"
            + " ELSE COALESCE(plugin_nodes.unhealthy_since, EXCLUDED.unhealthy_since) END";

    /** The plugin's last status (null: never heard of, or removed). */
    public Uni<PluginStatus> status(String pluginId) {
        return SessionSql.select("SELECT status_json FROM plugins WHERE plugin_id = $1", pluginId)
                .map(rows -> rows.isEmpty() ? null : EventCodec.decode(PluginStatus.class, (String) rows.get(0)[0]));
    }

    /**
     * The plugin as last heard of, with the outages of its node instances that were healthy before: one prepared
     * statement (issue 36 item 3; it was two Hibernate queries and a managed entity per claim step). The plugin's
     * status is decoded from its JSON only when its row changed since this process last decoded it (the row's
     * {@code xmin}, the transaction that wrote it, compared in the statement; the JSON is not even sent back when it
     * matches): with 100 nodes the status is a list of 100 instances, which every claim step decoded again.
     */
    public Uni<PluginFacts> facts(String pluginId) {
        Decoded known = decoded.get(pluginId);
        return SessionSql.select(FACTS, pluginId, known == null ? null : known.xmin()).map(rows -> {
            Object[] first = rows.get(0);
            String xmin = (String) first[0];
            PluginFacts base;
            if (xmin == null) {
                decoded.remove(pluginId);
                base = PluginFacts.unknown(pluginId);
            } else if (first[1] == null && known != null && known.xmin().equals(xmin)) {
                base = known.facts();
            } else {
                base = toFacts(pluginId, (String) first[1]);
                decoded.put(pluginId, new Decoded(xmin, base));
            }
            Map<String, Instant> outages = new HashMap<>();
            for (Object[] r : rows) {
                if (r[2] != null) {
                    outages.put((String) r[2], SessionSql.instant(r[3]));
                }
            }
            return base.withOutages(outages);
        });
    }

    /**
     * One row at least (the plugin's, null columns when it is unknown), one per node instance that was healthy before
     * and is unhealthy or missing since. The status JSON only when the row's xmin is not {@code $2}.
     */
    private static final String FACTS = "SELECT CAST(p.xmin AS text), CASE WHEN CAST(p.xmin AS text) = CAST($2 AS text)"
            + " THEN NULL ELSE p.status_json END, n.node_id, n.unhealthy_since"
            + " FROM (SELECT CAST($1 AS varchar) AS id) q LEFT JOIN plugins p ON p.plugin_id = q.id"
            + " LEFT JOIN plugin_nodes n ON n.plugin_id = q.id AND n.unhealthy_since IS NOT NULL AND n.last_healthy_at IS NOT NULL";

    /** A plugin's facts as decoded from the status its row held at {@code xmin}. */
    private record Decoded(String xmin, PluginFacts facts) {
    }

    /** By plugin id, the last status decoded (one entry per plugin; a changed row replaces it). */
    private final Map<String, Decoded> decoded = new java.util.concurrent.ConcurrentHashMap<>();

    public Uni<Map<String, PluginFacts>> facts(Collection<String> pluginIds) {
        if (pluginIds.isEmpty()) {
            return Uni.createFrom().item(Map.of());
        }
        return PluginEntity.byIds(pluginIds).map(rows -> {
            Map<String, PluginFacts> out = new HashMap<>();
            for (String id : pluginIds) {
                out.put(id, PluginFacts.unknown(id));
            }
            for (PluginEntity row : rows) {
                out.put(row.pluginId, toFacts(row.pluginId, row.statusJson));
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
        // The claims this transaction changed written first: a batch's earlier step may have granted one on this node
        return ClaimStore.flushIfOpen().chain(() -> SessionSql.select("SELECT count(DISTINCT c.volume_key) FROM claims c JOIN volumes v ON v.volume_key = c.volume_key"
                        + " WHERE c.node_id = $1 AND NOT c.past AND v.plugin_id = $2 AND c.volume_key <> $3",
                nodeId, facts.pluginId(), volumeKey)
                .map(rows -> facts.withVolumesHeld(nodeId, ((Number) rows.get(0)[0]).longValue())));
    }

    /** Whether the plugin's instance on the node has been missing or unhealthy since before {@code before}. */
    public Uni<Boolean> goneSince(String pluginId, String nodeId, Instant before) {
        return SessionSql.select("SELECT count(*) FROM plugin_nodes WHERE plugin_id = $1 AND node_id = $2 AND unhealthy_since < $3",
                pluginId, nodeId, before).map(rows -> ((Number) rows.get(0)[0]).longValue() > 0);
    }

    static PluginFacts toFacts(String pluginId, String statusJson) {
        PluginStatus status = EventCodec.decode(PluginStatus.class, statusJson);
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
        return new PluginFacts(pluginId, true, status.controllerRequired(), controllers, nodes);
    }
}
