package io.csiorchestrator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The placement part of {@code ./csi node status} (issue 34): claim-service's {@code GET /v1/status/placement}, the
 * entries it last wrote to the {@code placement} topic, so the operator sees what a scheduler sees: per node and plugin
 * the topology, volumes held / limit and health; per plugin and segment the capacity.
 */
final class PlacementView {

    private PlacementView() {
    }

    /** Prints the entries (of {@code nodeId} only, when given); a line saying why when they cannot be read. */
    static void print(Http claims, String nodeId, PrintStream out) {
        Http.Response r;
        try {
            r = claims.get("/v1/status/placement");
        } catch (Http.UnreachableException e) {
            out.println("placement: not read (" + e.getMessage() + ")");
            return;
        }
        if (!r.ok() || r.body() == null || !r.body().isArray()) {
            out.println("placement: not read (claim-service answered " + r.status() + ")");
            return;
        }
        out.print(render(r.body(), nodeId));
    }

    /** The tables of {@code entries} (a JSON array of placement entries), node entries first. */
    static String render(JsonNode entries, String nodeId) {
        Table nodes = new Table("PLUGIN", "NODE", "TOPOLOGY", "HELD / LIMIT", "HEALTH");
        Table capacity = new Table("PLUGIN", "SEGMENT", "AVAILABLE", "MAX VOLUME", "OBSERVED");
        for (JsonNode p : entries) {
            String kind = p.path("kind").asText();
            if (kind.equals("node") && (nodeId == null || nodeId.equals(p.path("nodeId").asText()))) {
                long max = p.path("maxVolumes").asLong(0);
                nodes.row(p.path("pluginId").asText(), p.path("nodeId").asText(), segments(p.path("accessibleTopology")),
                        p.path("volumesHeld").asLong(0) + " / " + (max == 0 ? "no limit" : Long.toString(max)),
                        p.path("healthy").asBoolean(false) ? "healthy" : "unhealthy");
            } else if (kind.equals("capacity") && nodeId == null) {
                capacity.row(p.path("pluginId").asText(), segments(p.path("segment")), p.path("availableCapacity").asText(),
                        p.has("maximumVolumeSize") ? p.path("maximumVolumeSize").asText() : "-", p.path("observedAt").asText("-"));
            }
        }
        StringBuilder text = new StringBuilder("placement (what schedulers read on the placement topic):\n");
        text.append(nodes.size() == 0 ? "no node entries\n" : nodes.render());
        if (capacity.size() > 0) {
            text.append(capacity.render());
        }
        return text.toString();
    }

    private static String segments(JsonNode map) {
        Map<String, String> sorted = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = map.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            sorted.put(e.getKey(), e.getValue().asText());
        }
        List<String> pairs = new ArrayList<>();
        sorted.forEach((k, v) -> pairs.add(k + "=" + v));
        return pairs.isEmpty() ? "-" : String.join(",", pairs);
    }
}
