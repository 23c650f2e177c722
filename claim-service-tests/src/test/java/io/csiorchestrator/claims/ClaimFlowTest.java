package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Claims end to end through Kafka and PostgreSQL; the test answers node commands as a worker would. */
@QuarkusTest
class ClaimFlowTest {

    final Bus bus = new Bus();

    @Inject
    ClaimSettings settings;

    @AfterEach
    void close() {
        bus.close();
    }

    static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Test
    void publishAndReleaseWithoutController() {
        String plugin = unique("plug");
        String vol = Bus.registerVolume("ns1", unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, false, List.of(), List.of("node-a"));

        ClaimRequested write = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        awaitSchedulable("ns1", vol);
        bus.send(write);
        bus.awaitStatus(write.requestId(), ClaimState.ACCEPTED);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals("node-a", mount.nodeId());
        assertEquals("alloc-1", mount.allocationId());
        assertEquals("ext-" + vol, mount.externalVolumeId());
        assertEquals("ext4", mount.fsType());
        bus.succeed(mount);
        ClaimStatus ready = bus.awaitStatus(write.requestId(), ClaimState.READY);
        assertEquals("/var/lib/csi/" + vol + "/alloc-1", ready.hostPath());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("claims", hasSize(1)).body("claims[0].state", equalTo("ready")).body("claimedAccessMode", equalTo("single-node-writer"));

        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASING);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals("node-a", unmount.nodeId());
        bus.succeed(unmount);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("claims", hasSize(0)).body("pastClaims", hasSize(1)).body("pastClaims[0].state", equalTo("freed"));
        assertTrue(bus.commands(vol).stream().noneMatch(c -> c.kind() == NodeCommandKind.CONTROLLER_PUBLISH));
    }

    @Test
    void publishAndReleaseWithController() {
        String plugin = unique("plug");
        String vol = Bus.registerVolume("ns1", unique("vol"), plugin, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of("node-a", "node-b"));
        awaitSchedulable("ns1", vol);

        ClaimRequested write = Bus.claim("ns1", vol, "alloc-1", "node-b", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(write);
        NodeCommand publish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        assertEquals("ctrl-1", publish.nodeId(), "sent to the healthy controller's node");
        assertEquals("ext-node-b", publish.externalNodeId(), "with the claiming node's external id");
        assertEquals(AccessMode.MULTI_NODE_MULTI_WRITER, publish.accessMode());
        bus.succeed(publish, null, Map.of("devicePath", "/dev/xvdb"));
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals("node-b", mount.nodeId());
        assertEquals(Map.of("devicePath", "/dev/xvdb"), mount.publishContext());
        bus.succeed(mount);
        bus.awaitStatus(write.requestId(), ClaimState.READY);

        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        bus.succeed(unmount);
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals("ctrl-1", unpublish.nodeId());
        assertEquals("ext-node-b", unpublish.externalNodeId());
        bus.succeed(unpublish);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
    }

    @Test
    void accessModeRulesEndToEnd() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a", "node-b");
        ClaimRequested w1 = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w1);
        bus.awaitStatus(w1.requestId(), ClaimState.ACCEPTED);
        ClaimRequested w2 = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w2);
        String reason = bus.awaitStatus(w2.requestId(), ClaimState.REJECTED).reason();
        assertTrue(reason.contains(vol) && reason.contains("alloc-2") && reason.contains("write") && reason.contains("single writer"), reason);
        ClaimRequested r3 = Bus.claim("ns1", vol, "alloc-3", "node-b", ClaimMode.READ, AccessMode.SINGLE_NODE_WRITER);
        bus.send(r3);
        reason = bus.awaitStatus(r3.requestId(), ClaimState.REJECTED).reason();
        assertTrue(reason.contains("one node only"), reason);
        ClaimRequested r4 = Bus.claim("ns1", vol, "alloc-4", "node-a", ClaimMode.READ, AccessMode.SINGLE_NODE_WRITER);
        bus.send(r4);
        bus.awaitStatus(r4.requestId(), ClaimState.ACCEPTED);
        given().get("/v1/volumes?namespace=ns1").then().statusCode(200);
        given().get("/v1/volumes").then().statusCode(200)
                .body("find { it.id == '" + vol + "' }.currentWriters", equalTo(1))
                .body("find { it.id == '" + vol + "' }.currentReaders", equalTo(1));
    }

    @Test
    void aFatalMountFailureRollsTheClaimBack() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");
        ClaimRequested w1 = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w1);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        bus.fail(mount, "INVALID_ARGUMENT", "the plugin refused the fs type");
        ClaimStatus failed = bus.awaitStatus(w1.requestId(), ClaimState.FAILED);
        assertTrue(failed.reason().contains("INVALID_ARGUMENT") && failed.reason().contains("the plugin refused the fs type"), failed.reason());
        NodeCommand cleanup = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals("alloc-1", cleanup.allocationId());
        bus.succeed(cleanup);
        // Once the partial mount is undone the failed claim is a past claim: no phantom writer claim is left.
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(0))
                        .body("claimedAccessMode", org.hamcrest.Matchers.nullValue()));
        // Another writer gets the volume.
        ClaimRequested w2 = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w2);
        bus.awaitStatus(w2.requestId(), ClaimState.ACCEPTED);
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("pastClaims[0].state", equalTo("failed")).body("claims", hasSize(1))
                .body("claims[0].allocationId", equalTo("alloc-2"));
    }

    @Test
    void aRetryableFailureIsRetriedWithANewCommand() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");
        ClaimRequested w1 = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w1);
        NodeCommand first = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        bus.fail(first, "UNAVAILABLE", "plugin socket not ready");
        NodeCommand second = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertNotEquals(first.commandId(), second.commandId());
        bus.succeed(second);
        bus.awaitStatus(w1.requestId(), ClaimState.READY);
        bus.succeed(first); // a late answer to the old command changes nothing
        // Marker: a reader on the same node and volume. Its mount-done follows the late answer on node-a's
        // mount-done partition and its READY follows on the volume's claim-status partition, so anything the
        // late answer caused is on the topic before the marker's READY.
        ClaimRequested marker = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.READ, AccessMode.SINGLE_NODE_WRITER);
        bus.send(marker);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(marker.requestId(), ClaimState.READY);
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.READY),
                bus.statuses(w1.requestId()).stream().map(ClaimStatus::state).toList(), "answers to the writer's request");
        assertEquals(2, bus.commands(vol).stream().filter(c -> "alloc-1".equals(c.allocationId())).count(),
                "the failed mount and its retry, nothing after the late answer");
    }

    @Test
    void aRedeliveredClaimIsAnsweredOnce() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.MULTI_NODE_MULTI_WRITER, "node-a");
        ClaimRequested w1 = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(w1);
        bus.send(w1);
        // A later request on the same key (same partition) is answered only after both copies were handled.
        ClaimRequested marker = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.READ, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(marker);
        bus.awaitStatus(marker.requestId(), ClaimState.ACCEPTED);
        List<ClaimStatus> answers = bus.statuses(w1.requestId());
        assertEquals(1, answers.size(), "one answer to a redelivered request: " + answers);
        assertEquals(1, bus.commands(vol).stream().filter(c -> "alloc-1".equals(c.allocationId())).count());
    }

    @Test
    void aMalformedClaimGoesToTheDeadLetterTopicAndThePartitionMovesOn() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.MULTI_NODE_MULTI_WRITER, "node-a");
        bus.sendRaw(Topic.CLAIM_REQUESTED, vol, "{\"requestId\":\"bad-" + vol + "\",\"volumeId\":\"../etc\",\"mode\":\"grab\"}");
        ClaimRequested after = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(after);
        bus.awaitStatus(after.requestId(), ClaimState.ACCEPTED);
        ConsumerRecord<String, String> dead = bus.kafka.awaitRecord(Bus.topic(Topic.CLAIM_REQUESTED) + "-dead-letter",
                r -> vol.equals(r.key()), Bus.WAIT);
        String why = KafkaTestClient.header(dead, DeadLetters.REASON);
        assertNotNull(why);
        assertTrue(why.contains("mode"), why);
    }

    /**
     * A READY claim on a node whose plugin instance disappears is kept while the node's lease is valid (no plain
     * timeout frees it); once the lease lapsed and the fence wait passed it is assumed detached, with that reason.
     */
    @Test
    void aClaimOnANodeWhoseLeaseLapsedIsAssumedDetachedAfterTheFenceWait() {
        String node = unique("node");
        bus.lease(node, 1, io.csiorchestrator.events.NodeLeaseState.VALID);
        Bus.awaitLease(node, 1, "valid");
        String plugin = unique("plug");
        String vol = Bus.registerVolume("ns1", unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, false, List.of(), List.of(node));
        awaitSchedulable("ns1", vol);
        ClaimRequested w1 = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w1);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(w1.requestId(), ClaimState.READY);
        bus.plugin(plugin, false, List.of(), List.of()); // the node's instance disappears
        bus.lease(node, 1, io.csiorchestrator.events.NodeLeaseState.LAPSED);
        ClaimStatus released = bus.awaitStatus(w1.requestId(), ClaimState.RELEASED);
        assertEquals(node + "'s lease epoch 1 lapsed and the fence wait passed: assumed detached", released.reason());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(0));
    }

    @Test
    void forceDeleteReleasesTheClaimsFirstAndDetachUnmountsOnTheLiveNodeFirst() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.MULTI_NODE_MULTI_WRITER, "node-a", "node-b");
        ClaimRequested a = Bus.claim("ns1", vol, "alloc-a", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        ClaimRequested b = Bus.claim("ns1", vol, "alloc-b", "node-b", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(a);
        bus.send(b);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(a.requestId(), ClaimState.READY);
        bus.awaitStatus(b.requestId(), ClaimState.READY);

        given().delete("/v1/volumes/ns1/" + vol).then().statusCode(409).body("problems", hasSize(2));
        // The operator detaches node-b: the node is sent its unmount first; the claim is released once it reports it.
        given().post("/v1/volumes/ns1/" + vol + "/detach?node=node-b").then().statusCode(202)
                .body("allocations", equalTo(List.of("alloc-b")));
        NodeCommand detachUnmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals("node-b", detachUnmount.nodeId());
        bus.succeed(detachUnmount);
        bus.awaitStatus(b.requestId(), ClaimState.RELEASED);
        given().post("/v1/volumes/ns1/" + vol + "/detach?node=../x").then().statusCode(400);

        given().delete("/v1/volumes/ns1/" + vol + "?force=true").then().statusCode(202);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals("node-a", unmount.nodeId());
        bus.succeed(unmount);
        bus.awaitStatus(a.requestId(), ClaimState.RELEASED);
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/volumes/ns1/" + vol).then().statusCode(404));
        // The detach of a live node (issue 19 item 6) unmounted there: node-b got its mount and the detach's unmount.
        assertEquals(List.of(NodeCommandKind.MOUNT, NodeCommandKind.UNMOUNT), bus.commands(vol).stream()
                .filter(c -> "node-b".equals(c.nodeId())).map(NodeCommand::kind).toList(), "commands to the detached node-b");
    }

    @Test
    void aReleaseWhilePublishingTearsDownAfterTheStepInFlight() {
        String plugin = unique("plug");
        String vol = Bus.registerVolume("ns1", unique("vol"), plugin, AccessMode.MULTI_NODE_READER_ONLY);
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of("node-a"));
        awaitSchedulable("ns1", vol);
        ClaimRequested read = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.READ, AccessMode.MULTI_NODE_READER_ONLY);
        bus.send(read);
        NodeCommand publish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        assertTrue(publish.readOnly(), "a read claim is published read-only");
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASING);
        bus.succeed(publish, null, Map.of());
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        bus.succeed(unpublish);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        assertTrue(bus.commands(vol).stream().noneMatch(c -> c.kind() == NodeCommandKind.MOUNT), "never mounted");
        ClaimRequested again = Bus.release("ns1", vol, "alloc-1");
        bus.send(again);
        assertTrue(bus.awaitStatus(again.requestId(), ClaimState.RELEASED).reason().contains("holds no claim"));
    }

    @Test
    void aFatalControllerPublishFailureFailsTheClaimAtOnce() {
        String plugin = unique("plug");
        String vol = Bus.registerVolume("ns1", unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of("node-a"));
        awaitSchedulable("ns1", vol);
        ClaimRequested write = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        bus.fail(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH), "FAILED_PRECONDITION",
                "volume is already published on another node and has no multi-node capability");
        String reason = bus.awaitStatus(write.requestId(), ClaimState.FAILED).reason();
        assertTrue(reason.contains("controller-publish failed: FAILED_PRECONDITION"), reason);
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(0))
                .body("pastClaims[0].state", equalTo("failed"));
        assertTrue(bus.commands(vol).stream().noneMatch(c -> c.kind() == NodeCommandKind.MOUNT));
    }

    /**
     * Two claims of one volume on node-a, whose plugin has a controller: while the first claim's controller-unpublish
     * of the (volume, node) is pending, the second claim's controller-publish is not sent (the second waits, its
     * lastError says why); once the unpublish is answered, the second is controller-published and becomes ready.
     */
    @Test
    void aControllerPublishWaitsForAPendingControllerUnpublishOfTheSameNode() {
        String plugin = unique("plug");
        String vol = Bus.registerVolume("ns1", unique("vol"), plugin, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of("node-a"));
        awaitSchedulable("ns1", vol);
        ClaimRequested first = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(first);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH), null, Map.of());
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(first.requestId(), ClaimState.READY);
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT));
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH); // not answered yet

        ClaimRequested second = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(second);
        bus.awaitStatus(second.requestId(), ClaimState.ACCEPTED);
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> {
            String lastError = given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).extract()
                    .path("claims.find { it.allocationId == 'alloc-2' }.lastError");
            assertTrue(lastError != null && lastError.startsWith("controller-publish waits: another claim of volume ns1/" + vol
                    + " is controller-unpublishing it from node node-a"), String.valueOf(lastError));
        });
        assertEquals(1, bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.CONTROLLER_PUBLISH).count(),
                "only the first claim's controller-publish while its controller-unpublish is pending");

        bus.succeed(unpublish);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        NodeCommand publish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        assertEquals("ext-node-a", publish.externalNodeId());
        bus.succeed(publish, null, Map.of());
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals("alloc-2", mount.allocationId());
        bus.succeed(mount);
        bus.awaitStatus(second.requestId(), ClaimState.READY);
    }

    static void awaitSchedulable(String namespace, String vol) {
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/volumes/" + namespace + "/" + vol).then().statusCode(200).body("schedulable", equalTo(true)));
    }
}
