package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.Placement;
import io.csiorchestrator.events.PlacementKind;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.Topic;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.time.Instant;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 34, through a scheduler's eyes: a scheduler that reads only the {@code placement} topic places claims that all
 * succeed; claims that ignore it are each rejected with the precise reason: over a node's volume limit (counting claims
 * in flight), outside a volume's topology, a second writer allocation under single-node-single-writer. A second writer
 * under single-node-multi-writer is allowed. Real broker and database (testkit); plugin-status stands in for the
 * registry, as the other claim-service tests do.
 */
@QuarkusTest
class SchedulerEyeTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    @Test
    void aSchedulerReadingOnlyPlacementPlacesClaimsThatSucceedAndOnesIgnoringItAreRejectedPrecisely() {
        String plugin = ClaimFlowTest.unique("plug");
        // the storage side: n1 in zone a holding at most 2 volumes of the plugin, n2 in zone b, n3 in zone a unlimited
        bus.send(new PluginStatus(plugin, "test.csi", "1.0", false, 0, 0, 3, 3, List.of(), List.of(
                node("n1", "a", 2), node("n2", "b", 0), node("n3", "a", 0)), Instant.now()));
        List<String> zoneA = List.of(volume(plugin, AccessMode.SINGLE_NODE_WRITER), volume(plugin, AccessMode.SINGLE_NODE_WRITER),
                volume(plugin, AccessMode.SINGLE_NODE_WRITER), volume(plugin, AccessMode.SINGLE_NODE_WRITER));
        String rwop = volume(plugin, AccessMode.SINGLE_NODE_SINGLE_WRITER);
        String shared = volume(plugin, AccessMode.SINGLE_NODE_MULTI_WRITER);

        // the scheduler: what placement says of the plugin's nodes, nothing else
        Awaitility.await().atMost(Bus.WAIT).until(() -> nodesOf(plugin).size() == 3);
        Map<String, Placement> first = nodesOf(plugin);
        assertEquals(2L, first.get("n1").maxVolumes());
        assertEquals(Map.of("zone", "a"), first.get("n1").accessibleTopology());
        assertEquals(0L, first.get("n1").volumesHeld());

        // three claims of zone-a volumes, each placed on what placement says now: n1 twice (its limit), then n3
        List<String> placedOn = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) {
            long claimsSoFar = i;
            // a scheduler waits until the topic shows its own earlier placements before it places the next one
            Awaitility.await().atMost(Bus.WAIT).until(() -> held(nodesOf(plugin)) == claimsSoFar);
            String node = place(nodesOf(plugin), Map.of("zone", "a")).orElseThrow();
            placedOn.add(node);
            ClaimRequested c = Bus.claim("ns1", zoneA.get(i), "alloc-" + i, node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
            bus.send(c);
            bus.awaitStatus(c.requestId(), ClaimState.ACCEPTED);
        }
        assertEquals(List.of("n1", "n1", "n3"), placedOn);
        // n1 is full by its claims in flight (none mounted yet), and placement says so
        Awaitility.await().atMost(Bus.WAIT).until(() -> nodesOf(plugin).get("n1").volumesHeld() == 2L);
        assertEquals(Optional.of("n3"), place(nodesOf(plugin), Map.of("zone", "a")));

        // claims that ignore placement: each rejected with its precise reason
        String overLimit = rejected(Bus.claim("ns1", zoneA.get(3), "alloc-over", "n1", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER));
        assertTrue(overLimit.contains("node n1 has reached its limit of volumes of plugin " + plugin
                + ": limit 2 (max_volumes_per_node), held 2"), overLimit);
        String outside = rejected(Bus.claim("ns1", zoneA.get(3), "alloc-outside", "n2", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER));
        assertTrue(outside.contains("node n2 is outside the volume's topology {zone=a}: node n2's plugin instance has"),
                outside);

        ClaimRequested firstWriter = Bus.claim("ns1", rwop, "alloc-w1", "n3", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_SINGLE_WRITER);
        bus.send(firstWriter);
        bus.awaitStatus(firstWriter.requestId(), ClaimState.ACCEPTED);
        String secondWriter = rejected(Bus.claim("ns1", rwop, "alloc-w2", "n3", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_SINGLE_WRITER));
        assertTrue(secondWriter.contains("access mode single-node-single-writer allows a single writer and allocation"
                + " alloc-w1 on node n3 holds the write claim"), secondWriter);

        for (String alloc : List.of("alloc-m1", "alloc-m2")) {
            ClaimRequested writer = Bus.claim("ns1", shared, alloc, "n3", ClaimMode.WRITE, AccessMode.SINGLE_NODE_MULTI_WRITER);
            bus.send(writer);
            bus.awaitStatus(writer.requestId(), ClaimState.ACCEPTED);
        }
        // n3 holds the zone-a volume, the single-writer one and the multi-writer one (its two writers: one volume)
        Awaitility.await().atMost(Bus.WAIT).until(() -> nodesOf(plugin).get("n3").volumesHeld() == 3L);
    }

    private static PluginStatus.NodeInstance node(String id, String zone, long maxVolumes) {
        return new PluginStatus.NodeInstance(id, "ext-" + id, maxVolumes, Map.of("zone", zone), true, "ok", Instant.now());
    }

    private static String volume(String plugin, AccessMode mode) {
        String id = ClaimFlowTest.unique("vol");
        given().contentType(ContentType.JSON).body(Map.of("volumes", List.of(Map.of(
                        "id", id, "namespace", "ns1", "externalId", "ext-" + id, "pluginId", plugin,
                        "accessMode", mode.wire(), "attachmentMode", "file-system", "topology", Map.of("zone", "a")))))
                .post("/v1/volumes").then().statusCode(201);
        ClaimFlowTest.awaitSchedulable("ns1", id);
        return id;
    }

    private String rejected(ClaimRequested claim) {
        bus.send(claim);
        return bus.awaitStatus(claim.requestId(), ClaimState.REJECTED).reason();
    }

    /** The scheduler's view of the plugin's nodes: the newest placement entry per key, read from the topic alone. */
    private Map<String, Placement> nodesOf(String plugin) {
        Map<String, Placement> byKey = new HashMap<>();
        for (ConsumerRecord<String, String> r : bus.kafka.readAll(Bus.topic(Topic.PLACEMENT))) {
            if (r.value() == null) {
                byKey.remove(r.key());
            } else {
                byKey.put(r.key(), EventCodec.decode(Placement.class, r.value()));
            }
        }
        Map<String, Placement> nodes = new HashMap<>();
        byKey.values().stream().filter(p -> p.kind() == PlacementKind.NODE && p.pluginId().equals(plugin))
                .forEach(p -> nodes.put(p.nodeId(), p));
        return nodes;
    }

    private static long held(Map<String, Placement> nodes) {
        return nodes.values().stream().mapToLong(Placement::volumesHeld).sum();
    }

    /** The scheduler's rule: a healthy node in the volume's topology with room under its limit, the first by id. */
    private static Optional<String> place(Map<String, Placement> nodes, Map<String, String> volumeTopology) {
        return nodes.values().stream()
                .filter(Placement::healthy)
                .filter(p -> p.accessibleTopology().entrySet().containsAll(volumeTopology.entrySet()))
                .filter(p -> p.maxVolumes() == 0 || p.volumesHeld() < p.maxVolumes())
                .map(Placement::nodeId).min(Comparator.naturalOrder());
    }
}
