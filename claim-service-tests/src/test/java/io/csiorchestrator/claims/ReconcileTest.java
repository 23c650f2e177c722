package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.hasSize;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.quarkus.test.junit.QuarkusTest;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.List;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The reconcile loop: a gone node with a controller, the abandoned controller-unpublish, the purge of past claims. */
@QuarkusTest
class ReconcileTest {

    @Inject
    Pool pool;
    @Inject
    ReconcileSchedule schedule;

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    @Test
    void aGoneNodesControllerUnpublishThatKeepsFailingIsAbandonedWithAnEvent() {
        String node = ClaimFlowTest.unique("node");
        bus.lease(node, 1, io.csiorchestrator.events.NodeLeaseState.VALID);
        Bus.awaitLease(node, 1, "valid");
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of(node));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH), null, java.util.Map.of());
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(w.requestId(), ClaimState.READY);

        bus.plugin(plugin, true, List.of("ctrl-1"), List.of()); // the node vanishes from the plugin
        bus.lease(node, 1, io.csiorchestrator.events.NodeLeaseState.LAPSED); // and its lease lapses
        bus.awaitStatus(w.requestId(), ClaimState.RELEASING);
        // The node side is assumed detached; the controller side is still unpublished, with the node's external id.
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals("ext-" + node, unpublish.externalNodeId());
        assertTrue(bus.commands(vol).stream().noneMatch(c -> c.kind() == NodeCommandKind.UNMOUNT), "no unmount to a gone node");
        for (int attempt = 1; attempt <= 3; attempt++) {
            bus.fail(unpublish, "INTERNAL", "the storage API does not know instance ext-" + node);
            if (attempt < 3) {
                unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
            }
        }
        ClaimStatus released = bus.awaitStatus(w.requestId(), ClaimState.RELEASED);
        assertTrue(released.reason().contains("controller-unpublish abandoned"), released.reason());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(0)).body("pastClaims", hasSize(1));
    }

    @Test
    void pastClaimsOlderThanTheRetentionArePurged() {
        String vol = ClaimFlowTest.unique("old");
        pool.preparedQuery("INSERT INTO claims (claim_id, volume_key, namespace, volume_id, allocation_id, node_id, mode, request_id,"
                        + " access_mode, attachment_mode, read_only, phase, controller_required, past, created_at, updated_at, ended_at)"
                        + " VALUES ($1, $2, 'ns1', $3, 'a', 'n', 'read', 'r', 'single-node-writer', 'file-system', true, 'FREED', false,"
                        + " true, now() - interval '3 days', now() - interval '3 days', $4)")
                .execute(Tuple.of(vol + "-old", "ns1/" + vol, vol, java.time.OffsetDateTime.now().minusDays(2)))
                .chain(() -> pool.preparedQuery("INSERT INTO claims (claim_id, volume_key, namespace, volume_id, allocation_id, node_id,"
                                + " mode, request_id, access_mode, attachment_mode, read_only, phase, controller_required, past, created_at,"
                                + " updated_at, ended_at) VALUES ($1, $2, 'ns1', $3, 'b', 'n', 'read', 'r2', 'single-node-writer',"
                                + " 'file-system', true, 'FREED', false, true, now(), now(), now())")
                        .execute(Tuple.of(vol + "-new", "ns1/" + vol, vol)))
                .await().atMost(Duration.ofSeconds(10));
        // The purge is part of a reconcile pass; passes run at a due time, on leadership and every hour
        // (ReconcileSchedule). These rows announce no due time, so the test asks for a pass now, as the hourly timer
        // would: it used to pass only while other test classes' claims happened to wake a pass in this JVM.
        schedule.offer(java.time.Instant.now());
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> {
            List<String> left = pool.preparedQuery("SELECT claim_id FROM claims WHERE volume_id = $1").execute(Tuple.of(vol))
                    .await().atMost(Duration.ofSeconds(10)).stream().map(r -> r.getString("claim_id")).toList();
            assertEquals(List.of(vol + "-new"), left);
        });
    }
}
