package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.quarkus.test.junit.QuarkusTest;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 36 item 1 through Kafka and PostgreSQL: when the claim's controller instance runs on the claiming node, an
 * attach is one mount command and a detach one unmount command, each carrying the controller steps
 * ({@code withController}); the test answers as the worker would.
 */
@QuarkusTest
class NodeLocalControllerFlowTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    /** A schedulable volume of a new plugin that needs a controller, its only controller instance on node-a. */
    private String volume(AccessMode mode, String... nodes) {
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, mode);
        bus.plugin(plugin, true, List.of("node-a"), List.of(nodes));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        return vol;
    }

    @Test
    void anAttachAndADetachAreOneNodeCommandEach() {
        String vol = volume(AccessMode.SINGLE_NODE_WRITER, "node-a", "node-b");

        ClaimRequested write = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        NodeCommand attach = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals("node-a", attach.nodeId());
        assertTrue(attach.controllerSteps(), "the mount carries the controller-publish");
        assertEquals("ext-node-a", attach.externalNodeId(), "for the claiming node's external id");
        assertEquals(AccessMode.SINGLE_NODE_WRITER, attach.accessMode());
        bus.succeed(attach);
        bus.awaitStatus(write.requestId(), ClaimState.READY);

        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        NodeCommand detach = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertTrue(detach.controllerSteps(), "the unmount carries the controller-unpublish");
        assertEquals("ext-node-a", detach.externalNodeId());
        bus.succeed(detach);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        assertEquals(List.of(NodeCommandKind.MOUNT, NodeCommandKind.UNMOUNT),
                bus.commands(vol).stream().map(NodeCommand::kind).toList(), "no controller command of its own");
    }

    /** A claim on a node without a controller instance keeps the two-step path (controller commands of their own). */
    @Test
    void aClaimOnANodeWithoutAControllerKeepsTheTwoStepPath() {
        String vol = volume(AccessMode.SINGLE_NODE_WRITER, "node-a", "node-b");

        ClaimRequested write = Bus.claim("ns1", vol, "alloc-1", "node-b", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        NodeCommand publish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        assertEquals("node-a", publish.nodeId());
        bus.succeed(publish, null, Map.of("devicePath", "/dev/xvdb"));
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertFalse(mount.controllerSteps());
        assertEquals(Map.of("devicePath", "/dev/xvdb"), mount.publishContext());
    }

    /**
     * Two claims of one volume on the node: the first detach leaves the controller publication to the second (its
     * unmount carries no controller step), the last detach ends it. A failed attach (NodePublish INTERNAL) fails the
     * claim with the plugin's message and is rolled back by one detach with the controller step.
     */
    @Test
    void theLastDetachOnTheNodeEndsThePublicationAndAFailedAttachRollsBackWithOneDetach() {
        String vol = volume(AccessMode.MULTI_NODE_MULTI_WRITER, "node-a");

        ClaimRequested first = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(first);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(first.requestId(), ClaimState.READY);
        ClaimRequested second = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(second);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(second.requestId(), ClaimState.READY);

        ClaimRequested releaseFirst = Bus.release("ns1", vol, "alloc-1");
        bus.send(releaseFirst);
        NodeCommand detachFirst = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertFalse(detachFirst.controllerSteps(), "alloc-2 on the same node still uses the publication");
        bus.succeed(detachFirst);
        bus.awaitStatus(releaseFirst.requestId(), ClaimState.RELEASED);
        ClaimRequested releaseSecond = Bus.release("ns1", vol, "alloc-2");
        bus.send(releaseSecond);
        NodeCommand detachSecond = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertTrue(detachSecond.controllerSteps(), "the last claim on the node ends the publication");
        bus.succeed(detachSecond);
        bus.awaitStatus(releaseSecond.requestId(), ClaimState.RELEASED);

        ClaimRequested third = Bus.claim("ns1", vol, "alloc-3", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(third);
        bus.fail(bus.awaitCommand(vol, NodeCommandKind.MOUNT), "INTERNAL", "NodePublish: disk on fire");
        String reason = bus.awaitStatus(third.requestId(), ClaimState.FAILED).reason();
        assertTrue(reason.contains("INTERNAL") && reason.contains("disk on fire"), reason);
        NodeCommand rollback = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertTrue(rollback.controllerSteps(), "the rollback's unmount ends the controller publication too");
        bus.succeed(rollback);
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                io.restassured.RestAssured.given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                        .body("claims", org.hamcrest.Matchers.hasSize(0)));
        assertTrue(bus.commands(vol).stream().noneMatch(c -> c.kind() == NodeCommandKind.CONTROLLER_UNPUBLISH
                || c.kind() == NodeCommandKind.CONTROLLER_PUBLISH), "no controller command of its own");
    }
}
