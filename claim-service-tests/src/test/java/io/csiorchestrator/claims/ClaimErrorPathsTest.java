package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.PluginStatus;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The error branches of the claim state machine end to end: claim-requested, mount-done and plugin-status go in over
 * Kafka, the claim's checkpoint is kept in PostgreSQL, node-commands and claim-status come out. The test plays the
 * scheduler, the plugin registry and the worker (as {@link ClaimFlowTest} does). The command timeout needs a short
 * timeout and has its own profile: {@link ClaimCommandTimeoutTest}.
 */
@QuarkusTest
class ClaimErrorPathsTest {

    final Bus bus = new Bus();

    @Inject
    ClaimSettings settings;

    @AfterEach
    void close() {
        bus.close();
    }

    /** The reason given when {@code node}'s lease epoch 1 lapsed and the fence wait passed (issue 19). */
    private static String nodeGone(String node) {
        return node + "'s lease epoch 1 lapsed and the fence wait passed: assumed detached";
    }

    /** A node of this test's own (the lease book is the application's) with a valid lease at epoch 1. */
    private String leasedNode() {
        String node = ClaimFlowTest.unique("node");
        bus.lease(node, 1, io.csiorchestrator.events.NodeLeaseState.VALID);
        Bus.awaitLease(node, 1, "valid");
        return node;
    }

    /** A registered single-node-writer volume of a fresh plugin, schedulable; returns {plugin, volume}. */
    private String[] volume(boolean controllerRequired, List<String> controllers, List<String> nodes) {
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, controllerRequired, controllers, nodes);
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        return new String[] {plugin, vol};
    }

    private static ClaimRequested write(String vol, String alloc) {
        return Bus.claim("ns1", vol, alloc, "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
    }

    private List<ClaimState> states(String requestId) {
        return bus.statuses(requestId).stream().map(ClaimStatus::state).toList();
    }

    private List<NodeCommandKind> kinds(String vol) {
        return bus.commands(vol).stream().map(NodeCommand::kind).toList();
    }

    private static void awaitPastClaim(String vol, String state) {
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("claims", hasSize(0)).body("pastClaims", hasSize(1)).body("pastClaims[0].state", equalTo(state)));
    }

    /**
     * Node gone while CONTROLLER_PUBLISHING (its lease lapsed and the fence wait passed; ClaimMachine.nodeDetached):
     * the claim, never answered, fails with the lapse reason (a claim always ends answered), sends a controller-unpublish
     * to the controller with the node's external id (the publish may have reached it) and, once that is done, ends
     * failed with no second answer; nothing is ever sent to mount.
     */
    @Test
    void aNodeGoneWhileControllerPublishingFailsTheClaimAndIsControllerUnpublished() {
        String node = leasedNode();
        String[] pv = volume(true, List.of("ctrl-1"), List.of(node));
        String plugin = pv[0];
        String vol = pv[1];
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH); // never answered
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of()); // the node's instance disappears
        bus.lease(node, 1, io.csiorchestrator.events.NodeLeaseState.LAPSED);
        assertEquals(nodeGone(node), bus.awaitStatus(w.requestId(), ClaimState.FAILED).reason());
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals("ctrl-1", unpublish.nodeId());
        assertEquals("ext-" + node, unpublish.externalNodeId());
        bus.succeed(unpublish);
        awaitPastClaim(vol, "failed");
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.FAILED), states(w.requestId()));
        assertEquals(List.of(NodeCommandKind.CONTROLLER_PUBLISH, NodeCommandKind.CONTROLLER_UNPUBLISH), kinds(vol));
    }

    /**
     * Node gone while MOUNTING (its lease lapsed and the fence wait passed): the node side is assumed detached, so
     * the claim, never answered, fails with the lapse reason (not only released: a claim always ends answered)
     * and no unmount is sent to the gone node.
     */
    @Test
    void aNodeGoneWhileMountingFailsTheClaimWithoutAnUnmount() {
        String node = leasedNode();
        String[] pv = volume(false, List.of(), List.of(node));
        String vol = pv[1];
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        bus.awaitCommand(vol, NodeCommandKind.MOUNT); // never answered
        bus.plugin(pv[0], false, List.of(), List.of());
        bus.lease(node, 1, io.csiorchestrator.events.NodeLeaseState.LAPSED);
        assertEquals(nodeGone(node), bus.awaitStatus(w.requestId(), ClaimState.FAILED).reason());
        awaitPastClaim(vol, "failed");
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.FAILED), states(w.requestId()));
        assertEquals(List.of(NodeCommandKind.MOUNT), kinds(vol), "no unmount to a gone node");
    }

    /**
     * Node gone while UNMOUNTING (a release waiting on an unmount that never comes, then its lease lapsed and the fence
     * wait passed): the release is answered RELEASED with the lapse reason without the unmount's answer, and no second
     * unmount is sent.
     */
    @Test
    void aNodeGoneWhileUnmountingEndsTheReleaseWithoutTheUnmountsAnswer() {
        String node = leasedNode();
        String[] pv = volume(false, List.of(), List.of(node));
        String vol = pv[1];
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.awaitCommand(vol, NodeCommandKind.UNMOUNT); // never answered
        bus.plugin(pv[0], false, List.of(), List.of());
        bus.lease(node, 1, io.csiorchestrator.events.NodeLeaseState.LAPSED);
        assertEquals(nodeGone(node), bus.awaitStatus(release.requestId(), ClaimState.RELEASED).reason());
        awaitPastClaim(vol, "freed");
        // RELEASING, then the fence wait said (a status of its own), then RELEASED.
        List<ClaimState> states = states(release.requestId());
        assertEquals(ClaimState.RELEASING, states.get(0));
        assertEquals(ClaimState.RELEASED, states.get(states.size() - 1));
        assertEquals(1, states.stream().filter(x -> x == ClaimState.RELEASED).count());
        assertEquals(List.of(NodeCommandKind.MOUNT, NodeCommandKind.UNMOUNT), kinds(vol));
    }

    /**
     * Answers that arrive late change nothing: a failure of the controller-publish after it succeeded (while
     * mounting), and a failure of the mount after READY. The controller runs on another node (ctrl-a: the two-step
     * path; one on the claiming node makes a single command of the attach, NodeLocalControllerFlowTest), so the
     * controller answers travel on ctrl-a's mount-done partition and the mount answers on node-a's; a later claim on
     * the same node and volume is the marker: its controller-publish answer follows the late ones on ctrl-a's
     * partition and its mount answer the late one on node-a's, so its READY comes after anything they caused.
     */
    @Test
    void lateFailuresOfAPastStepOrAfterReadyChangeNothing() {
        String[] pv = volume(true, List.of("ctrl-a"), List.of("node-a"));
        String vol = pv[1];
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        NodeCommand publish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        bus.succeed(publish, null, Map.of());
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        bus.fail(publish, "INTERNAL", "late failure of the controller-publish"); // while MOUNTING
        bus.succeed(mount);
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        bus.fail(mount, "INTERNAL", "late failure of the mount"); // after READY
        bus.fail(publish, "UNAVAILABLE", "late retryable failure of the controller-publish");

        ClaimRequested marker = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.READ, AccessMode.SINGLE_NODE_WRITER);
        bus.send(marker);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH), null, Map.of());
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(marker.requestId(), ClaimState.READY);

        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.READY), states(w.requestId()));
        assertEquals(List.of(NodeCommandKind.CONTROLLER_PUBLISH, NodeCommandKind.MOUNT, NodeCommandKind.CONTROLLER_PUBLISH,
                NodeCommandKind.MOUNT), kinds(vol), "publish and mount of each claim, no retry and no teardown");
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(2))
                .body("claims.find { it.allocationId == 'alloc-1' }.state", equalTo("ready"))
                .body("claims.find { it.allocationId == 'alloc-1' }.lastError", org.hamcrest.Matchers.nullValue());
    }

    /**
     * A release while the claim is rolled back (a fatal mount failure, the cleanup unmount in flight) starts no
     * second teardown: one unmount only. It is answered RELEASING at once and RELEASED when the rollback ends, and
     * the claim ends failed.
     */
    @Test
    void aReleaseDuringRollbackIsAnsweredWhenTheRollbackEnds() {
        String[] pv = volume(false, List.of(), List.of("node-a"));
        String vol = pv[1];
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        bus.fail(bus.awaitCommand(vol, NodeCommandKind.MOUNT), "INVALID_ARGUMENT", "bad fs type");
        bus.awaitStatus(w.requestId(), ClaimState.FAILED);
        NodeCommand cleanup = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        assertEquals("release requested while the failed claim is rolled back; released once that ends",
                bus.awaitStatus(release.requestId(), ClaimState.RELEASING).reason());
        bus.succeed(cleanup);
        assertEquals("the failed claim was rolled back", bus.awaitStatus(release.requestId(), ClaimState.RELEASED).reason());
        awaitPastClaim(vol, "failed");
        assertEquals(List.of(NodeCommandKind.MOUNT, NodeCommandKind.UNMOUNT), kinds(vol));
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.FAILED), states(w.requestId()));
    }

    /**
     * A retryable controller-publish error on every attempt: after max-publish-attempts the claim fails with the
     * last error and "gave up after N attempts". The publish's outcome is uncertain, so it is cancelled with a
     * controller-unpublish to the same controller; once that is done (NOT_FOUND counts) the claim ends failed. No
     * mount is ever sent.
     */
    @Test
    void retriesExhaustedWhileControllerPublishingFailTheClaimAndUnpublishToBeSure() {
        String[] pv = volume(true, List.of("ctrl-1"), List.of("node-a"));
        String vol = pv[1];
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        int attempts = settings.maxPublishAttempts();
        for (int i = 0; i < attempts; i++) {
            bus.fail(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH), "UNAVAILABLE", "controller busy");
        }
        assertEquals("controller-publish failed: UNAVAILABLE: controller busy (gave up after " + attempts + " attempts)",
                bus.awaitStatus(w.requestId(), ClaimState.FAILED).reason());
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals("ctrl-1", unpublish.nodeId());
        assertEquals("ext-node-a", unpublish.externalNodeId());
        bus.fail(unpublish, "NOT_FOUND", "volume is not published to ext-node-a");
        awaitPastClaim(vol, "failed");
        List<NodeCommandKind> expected = new java.util.ArrayList<>(java.util.Collections.nCopies(attempts, NodeCommandKind.CONTROLLER_PUBLISH));
        expected.add(NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals(expected, kinds(vol));
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.FAILED), states(w.requestId()));
    }

    /**
     * No healthy controller when the controller-publish is due (its controller went away after a retryable failure):
     * the claim waits, sending nothing and keeping the reason as its last error; once a controller is healthy the
     * publish goes to it and the claim becomes READY.
     */
    @Test
    void withoutAHealthyControllerTheClaimWaitsAndProceedsOnceOneIsHealthy() {
        String[] pv = volume(true, List.of("ctrl-1"), List.of("node-a"));
        String plugin = pv[0];
        String vol = pv[1];
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        NodeCommand first = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        assertEquals("ctrl-1", first.nodeId());
        bus.plugin(plugin, true, List.of(), List.of("node-a")); // the controller is gone
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("schedulable", equalTo(false)));
        bus.fail(first, "UNAVAILABLE", "controller restarting");
        String waiting = "plugin " + plugin + " has no healthy controller instance; waiting for one";
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("claims[0].lastError", equalTo(waiting)).body("claims[0].state", equalTo("controller-publishing")));
        assertEquals(List.of(NodeCommandKind.CONTROLLER_PUBLISH), kinds(vol), "nothing sent while no controller is healthy");
        assertEquals(List.of(ClaimState.ACCEPTED), states(w.requestId()));

        bus.plugin(plugin, true, List.of("ctrl-2"), List.of("node-a"));
        NodeCommand second = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        assertEquals("ctrl-2", second.nodeId());
        assertEquals("ext-node-a", second.externalNodeId());
        bus.succeed(second, null, Map.of());
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.READY), states(w.requestId()));
    }

    /**
     * The claiming node's plugin instance reports no external node id, so no controller-publish can be addressed:
     * the step fails as NOT_FOUND (fatal), the claim fails with the reason, and no command is sent.
     */
    @Test
    void aNodeUnknownToTheControllerFailsTheClaimWithoutSendingThePublish() {
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        Instant now = Instant.now();
        bus.send(new PluginStatus(plugin, "test.csi", "1.0", true, 1, 1, 1, 1,
                List.of(new PluginStatus.ControllerInstance("ctrl-1", true, "ok", now)),
                List.of(new PluginStatus.NodeInstance("node-a", null, 10L, Map.of(), true, "ok", now)), now));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        assertEquals("controller-publish failed: NOT_FOUND: node node-a is unknown to plugin " + plugin + " (no external node id)",
                bus.awaitStatus(w.requestId(), ClaimState.FAILED).reason());
        awaitPastClaim(vol, "failed");
        assertEquals(List.of(), kinds(vol));
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.FAILED), states(w.requestId()));
    }

    /**
     * A worker that reports a mount done without a host path: the mount counts as failed (INTERNAL, fatal), the claim
     * fails and is rolled back with an unmount, and it never becomes READY.
     */
    @Test
    void aMountReportedDoneWithoutAHostPathFailsAndRollsBack() {
        String[] pv = volume(false, List.of(), List.of("node-a"));
        String vol = pv[1];
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT), null, Map.of());
        assertEquals("mount failed: INTERNAL: the worker of node node-a reported the mount done without a host path",
                bus.awaitStatus(w.requestId(), ClaimState.FAILED).reason());
        NodeCommand cleanup = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals("alloc-1", cleanup.allocationId());
        bus.succeed(cleanup);
        awaitPastClaim(vol, "failed");
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.FAILED), states(w.requestId()));
    }

    /**
     * A release that arrives while the claim's mount is in flight answers the claim request at once: FAILED "released
     * while publishing (mount in flight): ..." (before, the claim request was never answered); the mount that then
     * succeeds is unmounted, never answered READY, and the release ends RELEASED; the claim ends freed.
     */
    @Test
    void aReleaseWhileMountingAnswersTheClaimFailedAndTheReleaseReleased() {
        String[] pv = volume(false, List.of(), List.of("node-a"));
        String vol = pv[1];
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        assertEquals("released while publishing (mount in flight): the claim ends without being ready",
                bus.awaitStatus(w.requestId(), ClaimState.FAILED).reason());
        bus.awaitStatus(release.requestId(), ClaimState.RELEASING);
        bus.succeed(mount);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT));
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        awaitPastClaim(vol, "freed");
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.FAILED), states(w.requestId()));
        assertEquals(List.of(ClaimState.RELEASING, ClaimState.RELEASED), states(release.requestId()));
        assertEquals(List.of(NodeCommandKind.MOUNT, NodeCommandKind.UNMOUNT), kinds(vol));
    }

    /**
     * A second release while the first one's unmount is in flight is answered RELEASING "already being released" and
     * sends nothing; the teardown's RELEASED answers the release that started it.
     */
    @Test
    void aSecondReleaseWhileTearingDownIsAnsweredAndTheFirstGetsTheRelease() {
        String[] pv = volume(false, List.of(), List.of("node-a"));
        String vol = pv[1];
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        ClaimRequested first = Bus.release("ns1", vol, "alloc-1");
        bus.send(first);
        assertNull(bus.awaitStatus(first.requestId(), ClaimState.RELEASING).reason());
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        ClaimRequested second = Bus.release("ns1", vol, "alloc-1");
        bus.send(second);
        assertEquals("the claim of allocation alloc-1 on volume ns1/" + vol + " is already being released (unmounting)",
                bus.awaitStatus(second.requestId(), ClaimState.RELEASING).reason());
        bus.succeed(unmount);
        bus.awaitStatus(first.requestId(), ClaimState.RELEASED);
        awaitPastClaim(vol, "freed");
        assertEquals(List.of(ClaimState.RELEASING, ClaimState.RELEASED), states(first.requestId()));
        assertEquals(List.of(NodeCommandKind.MOUNT, NodeCommandKind.UNMOUNT), kinds(vol));
    }

    /**
     * The allocation that holds a claim asks again under a new request id: answered ACCEPTED while the claim is still
     * mounting and READY with the host path once it is ready, each with the "already holds" reason; no second mount.
     */
    @Test
    void anAlreadyHeldClaimUnderANewRequestIdIsAnsweredWithoutANewMount() {
        String[] pv = volume(false, List.of(), List.of("node-a"));
        String vol = pv[1];
        ClaimRequested w = write(vol, "alloc-1");
        bus.send(w);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        ClaimRequested whileMounting = write(vol, "alloc-1");
        bus.send(whileMounting);
        ClaimStatus accepted = bus.awaitStatus(whileMounting.requestId(), ClaimState.ACCEPTED);
        assertEquals("allocation alloc-1 already holds this claim", accepted.reason());
        assertNull(accepted.hostPath());
        bus.succeed(mount);
        String hostPath = bus.awaitStatus(w.requestId(), ClaimState.READY).hostPath();
        ClaimRequested whenReady = write(vol, "alloc-1");
        bus.send(whenReady);
        ClaimStatus ready = bus.awaitStatus(whenReady.requestId(), ClaimState.READY);
        assertEquals("allocation alloc-1 already holds this claim", ready.reason());
        assertEquals(hostPath, ready.hostPath());
        assertEquals(List.of(NodeCommandKind.MOUNT), kinds(vol));
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(1));
    }
}
