package io.csiorchestrator.claims.domain;

import io.csiorchestrator.events.Placement;
import io.csiorchestrator.events.PluginStatus;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What claim-service last wrote to the {@code placement} topic (issue 34 item 4), and the rule for what to write next:
 * an entry is written only when it differs from the one last written under its key, apart from its time of writing,
 * so compaction keeps the newest and a scheduler sees each change once. Node entries come from the plugin's status
 * (topology, limit, health, as plugin-status last carried them) and the count of volumes the node holds (claims in
 * flight included, the count {@link NodeLimits} checks). Pure: no framework, no I/O; callers serialize access.
 */
public final class PlacementBook {

    private final Map<String, Placement> written = new HashMap<>();

    /**
     * The node entries of {@code pluginId}: one per node instance {@code status} lists (none when it is null, the plugin
     * removed), with {@code held} volumes per node id (absent: 0).
     */
    public static List<Placement> nodeEntries(String pluginId, PluginStatus status, Map<String, Long> held, Instant now) {
        List<Placement> out = new ArrayList<>();
        if (status == null) {
            return out;
        }
        for (PluginStatus.NodeInstance n : status.nodes()) {
            long max = n.maxVolumes() == null ? 0 : Math.max(0, n.maxVolumes());
            out.add(Placement.node(pluginId, n.nodeId(), n.accessibleTopology(), max, held.getOrDefault(n.nodeId(), 0L),
                    Boolean.TRUE.equals(n.healthy()), now));
        }
        return out;
    }

    /**
     * Of {@code current}, the entries that differ from what was written under their keys (all of them the first time),
     * remembered as written: the caller writes exactly these.
     */
    public List<Placement> changed(Collection<Placement> current) {
        List<Placement> out = new ArrayList<>();
        for (Placement p : current) {
            Placement before = written.get(p.recordKey());
            if (before == null || !before.equals(p.withoutUpdatedAt())) {
                written.put(p.recordKey(), p.withoutUpdatedAt());
                out.add(p);
            }
        }
        return out;
    }

    /** Forgets an entry whose write did not commit, so that the next pass writes it again. */
    public void unwritten(Collection<Placement> entries) {
        for (Placement p : entries) {
            written.remove(p.recordKey());
        }
    }

    /** The entries written last, by key, without their times of writing. */
    public Map<String, Placement> written() {
        return Map.copyOf(written);
    }
}
