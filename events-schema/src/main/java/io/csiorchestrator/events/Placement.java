package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * One entry of the {@code placement} topic (issue 34 item 4): the one place a scheduler reads before it places a claim.
 * Compacted, written only by claim-service, updated when an entry changes and never more often. Two kinds:
 *
 * <ul>
 *   <li>{@code node}: a node instance of a plugin, key {@code node/<pluginId>/<nodeId>}: its accessible topology, its
 *       volume limit ({@code maxVolumes}, NodeGetInfo's max_volumes_per_node, 0 = none), how many volumes of the plugin
 *       the node holds ({@code volumesHeld}, claims in flight included: what claim-service counts against the limit)
 *       and whether it is healthy;</li>
 *   <li>{@code capacity}: a plugin's capacity in one topology segment, key {@code capacity/<pluginId>/<segment>} (the
 *       segment's {@code key=value} pairs sorted and joined by {@code ,}): GetCapacity's available capacity and volume
 *       sizes and when they were observed.</li>
 * </ul>
 *
 * A node instance or segment that is gone gets a tombstone under its key. Fields of the other kind are absent.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record Placement(
        PlacementKind kind,
        String pluginId,
        String nodeId,
        Map<String, String> accessibleTopology,
        Long maxVolumes,
        Long volumesHeld,
        Boolean healthy,
        Map<String, String> segment,
        Long availableCapacity,
        Long maximumVolumeSize,
        Long minimumVolumeSize,
        Instant observedAt,
        Instant updatedAt) implements ContractEvent {

    public Placement {
        accessibleTopology = accessibleTopology == null ? null : Copies.map(accessibleTopology);
        segment = segment == null ? null : Copies.map(segment);
    }

    /** A {@code node} entry. */
    public static Placement node(String pluginId, String nodeId, Map<String, String> accessibleTopology, long maxVolumes,
                                 long volumesHeld, boolean healthy, Instant updatedAt) {
        return new Placement(PlacementKind.NODE, pluginId, nodeId, accessibleTopology, maxVolumes, volumesHeld, healthy,
                null, null, null, null, null, updatedAt);
    }

    /** A {@code capacity} entry; the sizes may be null when GetCapacity did not say them. */
    public static Placement capacity(String pluginId, Map<String, String> segment, long availableCapacity,
                                     Long maximumVolumeSize, Long minimumVolumeSize, Instant observedAt, Instant updatedAt) {
        return new Placement(PlacementKind.CAPACITY, pluginId, null, null, null, null, null, segment, availableCapacity,
                maximumVolumeSize, minimumVolumeSize, observedAt, updatedAt);
    }

    /** The key of a {@code node} entry. */
    public static String nodeKey(String pluginId, String nodeId) {
        return "node/" + pluginId + "/" + nodeId;
    }

    /** The key of a {@code capacity} entry: the segment's pairs sorted by key, {@code k=v} joined by {@code ,}. */
    public static String capacityKey(String pluginId, Map<String, String> segment) {
        return "capacity/" + pluginId + "/" + new TreeMap<>(segment).entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(","));
    }

    /** This entry without its time of writing: two entries that are equal so are the same news (no update needed). */
    public Placement withoutUpdatedAt() {
        return new Placement(kind, pluginId, nodeId, accessibleTopology, maxVolumes, volumesHeld, healthy, segment,
                availableCapacity, maximumVolumeSize, minimumVolumeSize, observedAt, null);
    }

    @Override
    public EventType eventType() {
        return EventType.PLACEMENT;
    }

    @Override
    public String recordKey() {
        return kind == PlacementKind.CAPACITY ? capacityKey(pluginId, segment == null ? Map.of() : segment)
                : nodeKey(pluginId, nodeId);
    }

    @Override
    public void checkFields(Violations v) {
        v.required("kind", kind);
        v.id("pluginId", pluginId);
        v.required("updatedAt", updatedAt);
        if (kind == PlacementKind.NODE) {
            v.id("nodeId", nodeId);
            v.required("accessibleTopology", accessibleTopology);
            if (accessibleTopology != null) {
                v.stringMap("accessibleTopology", accessibleTopology, 64);
            }
            count("maxVolumes", maxVolumes, v);
            count("volumesHeld", volumesHeld, v);
            v.required("healthy", healthy);
        } else if (kind == PlacementKind.CAPACITY) {
            v.required("segment", segment);
            if (segment != null) {
                v.stringMap("segment", segment, 64);
            }
            count("availableCapacity", availableCapacity, v);
            if (maximumVolumeSize != null && maximumVolumeSize < 0) {
                v.add("maximumVolumeSize", maximumVolumeSize, "must not be negative");
            }
            if (minimumVolumeSize != null && minimumVolumeSize < 0) {
                v.add("minimumVolumeSize", minimumVolumeSize, "must not be negative");
            }
            v.required("observedAt", observedAt);
        }
    }

    private static void count(String field, Long value, Violations v) {
        if (value == null) {
            v.add(field, null, "is required");
        } else if (value < 0) {
            v.add(field, value, "must not be negative");
        }
    }
}
