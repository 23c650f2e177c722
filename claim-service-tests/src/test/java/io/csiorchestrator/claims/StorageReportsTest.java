package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.capacity.CapacityView;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.CapacityFigures;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.Placement;
import io.csiorchestrator.events.PlacementKind;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.VolumeUsageFigures;
import io.csiorchestrator.testkit.HostileRecords;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Issue 34 on claim-service, through the testkit broker and database: volume-usage node events into the volume's REST
 * detail, capacity node events into {@link CapacityView} (its listener and {@code GET /v1/capacity}); an older report
 * changes nothing, a malformed one is dead-lettered naming the field.
 */
@QuarkusTest
class StorageReportsTest {

    @Inject
    CapacityView capacity;

    @Test
    void aVolumesUsageFromAClaimingNodesWorkerShowsInTheVolumeDetailAndAnOlderOneChangesNothing() {
        try (Bus bus = new Bus()) {
            String node = ClaimFlowTest.unique("node-u");
            String vol = bus.schedulableVolume("ns1", "usage", AccessMode.SINGLE_NODE_WRITER, node);
            ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
            bus.send(claim);
            bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
            bus.awaitStatus(claim.requestId(), ClaimState.READY);
            given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("usage", hasSize(0));

            Instant seen = Instant.now().truncatedTo(ChronoUnit.MILLIS);
            bus.send(usage(node, vol, new VolumeUsageFigures(1000L, 600L, 400L, 50L, 40L, 10L), seen));
            await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                    .body("usage", hasSize(1))
                    .body("usage[0].nodeId", equalTo(node))
                    .body("usage[0].pluginId", equalTo("plug"))
                    .body("usage[0].capacityBytes", equalTo(1000))
                    .body("usage[0].availableBytes", equalTo(600))
                    .body("usage[0].usedBytes", equalTo(400))
                    .body("usage[0].inodes", equalTo(50))
                    .body("usage[0].inodesFree", equalTo(40))
                    .body("usage[0].inodesUsed", equalTo(10))
                    .body("usage[0].observedAt", equalTo(seen.toString())));

            // a newer one without inodes, then an older one (redelivered, or overtaken) that must change nothing; the
            // node's events are read in order, so once a condition event sent after it shows, the older one was read
            bus.send(usage(node, vol, new VolumeUsageFigures(1000L, 100L, 900L, null, null, null), seen.plusSeconds(60)));
            await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                    .body("usage[0].usedBytes", equalTo(900))
                    .body("usage[0].inodes", equalTo(null)));
            bus.send(usage(node, vol, new VolumeUsageFigures(1000L, 900L, 100L, 50L, 49L, 1L), seen.minusSeconds(60)));
            bus.send(new NodeEvent(node, null, NodeEventKind.VOLUME_CONDITION, "Volume condition normal", "plug", "ns1",
                    vol, null, null, null, Map.of("condition", "normal"), seen));
            await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                    .body("conditions", hasSize(1)));
            given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                    .body("usage[0].usedBytes", equalTo(900))
                    .body("usage[0].observedAt", equalTo(seen.plusSeconds(60).toString()));
        }
    }

    @Test
    void aCapacityReportReachesTheViewItsListenerAndTheRestReadOnceAndAMalformedOneIsDeadLettered() {
        String plugin = ClaimFlowTest.unique("cap-plug");
        List<CapacityView.Entry> told = new CopyOnWriteArrayList<>();
        capacity.onChange(e -> {
            if (e.pluginId().equals(plugin)) {
                told.add(e);
            }
        });
        Map<String, String> segment = Map.of("topology.example/node", "node-1");
        try (Bus bus = new Bus()) {
            Instant at = Instant.now().truncatedTo(ChronoUnit.MILLIS);
            bus.send(capacityEvent("node-1", plugin, new CapacityFigures(segment, 5000L, 4000L, null), at));
            await().atMost(Bus.WAIT).until(() -> told.size() == 1);
            assertEquals(5000L, told.get(0).availableBytes());
            // and a scheduler reads it on the placement topic, keyed per plugin and segment
            var entry = bus.kafka.awaitRecord(Bus.topic(Topic.PLACEMENT),
                    r -> ("capacity/" + plugin + "/topology.example/node=node-1").equals(r.key()), Bus.WAIT);
            Placement placed = EventCodec.decode(Placement.class, entry.value());
            assertEquals(PlacementKind.CAPACITY, placed.kind());
            assertEquals(segment, placed.segment());
            assertEquals(5000L, placed.availableCapacity());
            assertEquals(4000L, placed.maximumVolumeSize());
            assertEquals(at, placed.observedAt());
            given().get("/v1/capacity/" + plugin).then().statusCode(200)
                    .body("", hasSize(1))
                    .body("[0].segment.'topology.example/node'", equalTo("node-1"))
                    .body("[0].availableBytes", equalTo(5000))
                    .body("[0].maximumVolumeBytes", equalTo(4000))
                    .body("[0].nodeId", equalTo("node-1"));

            // the same figures again (the worker's period), an older report, then a bad one, then a change
            bus.send(capacityEvent("node-1", plugin, new CapacityFigures(segment, 5000L, 4000L, null), at.plusSeconds(1)));
            bus.send(capacityEvent("node-1", plugin, new CapacityFigures(segment, 1L, null, null), at.minusSeconds(60)));
            NodeEvent bad = new NodeEvent("node-1", null, NodeEventKind.CAPACITY, "Capacity", plugin, null, null, null,
                    null, null, Map.of("availableBytes", "lots"), at.plusSeconds(2));
            bus.send(bad);
            bus.send(capacityEvent("node-1", plugin, new CapacityFigures(segment, 3000L, 3000L, null), at.plusSeconds(3)));
            await().atMost(Bus.WAIT).until(() -> told.size() == 2);
            assertEquals(3000L, told.get(1).availableBytes(), "only the change was told: " + told);
            assertEquals(at.plusSeconds(3), capacity.get(plugin, segment).orElseThrow().observedAt());
            var dead = bus.kafka.awaitRecord(Bus.topic(Topic.NODE_EVENTS) + "-dead-letter",
                    r -> r.value() != null && r.value().contains(plugin), Bus.WAIT);
            String reason = KafkaTestClient.header(dead, HostileRecords.DEAD_LETTER_REASON);
            assertTrue(reason.contains("details.availableBytes") && reason.contains("lots"), reason);
        }
    }

    private static NodeEvent usage(String node, String vol, VolumeUsageFigures figures, Instant at) {
        return new NodeEvent(node, null, NodeEventKind.VOLUME_USAGE, "Volume usage", "plug", "ns1", vol, null, null,
                null, figures.toDetails(), at);
    }

    private static NodeEvent capacityEvent(String node, String plugin, CapacityFigures figures, Instant at) {
        return new NodeEvent(node, null, NodeEventKind.CAPACITY, "Capacity", plugin, null, null, null, null, null,
                figures.toDetails(), at);
    }
}
