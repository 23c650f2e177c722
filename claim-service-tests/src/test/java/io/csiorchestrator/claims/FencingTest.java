package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasSize;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Fencing (issue 19) through the real broker and PostgreSQL: the test stands in for the plugin registry (it publishes
 * the node's leases on node-leases and its plugin's status) and for the worker (it answers node commands). Each test
 * uses a node of its own, since the lease book is the application's. Timers: the test profile's (floor 4.1 s, 2 s
 * after a lapse).
 */
@QuarkusTest
class FencingTest {

    final Bus bus = new Bus();

    @Inject
    FencingSettings fencing;
    @Inject
    ClaimSettings claimSettings;

    @AfterEach
    void close() {
        bus.close();
    }

    /** {@code node}'s lease epoch 1 granted, and seen by claim-service. */
    private void granted(String node) {
        bus.lease(node, 1, NodeLeaseState.VALID);
        Bus.awaitLease(node, 1, "valid");
    }

    /** {@code node}'s lease epoch {@code epoch - 1} lapsed and {@code epoch} granted, the grant seen by claim-service. */
    private void renewed(String node, long epoch) {
        bus.lease(node, epoch - 1, NodeLeaseState.LAPSED);
        bus.lease(node, epoch, NodeLeaseState.VALID);
        Bus.awaitLease(node, epoch, "valid");
    }

    /**
     * Allocation alloc-a's write claim on {@code x} (of a volume schedulable on {@code x} and {@code y}) READY, then its
     * release, whose unmount fails: RELEASING, waiting for {@code x}'s lease to lapse.
     */
    private ReleaseWaiting releaseWaitingForTheLease(String x, String y) {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.SINGLE_NODE_WRITER, x, y);
        ClaimRequested a = Bus.claim("ns1", vol, "alloc-a", x, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(a);
        bus.succeedAt(bus.awaitCommand(vol, NodeCommandKind.MOUNT), 1);
        bus.awaitStatus(a.requestId(), ClaimState.READY);
        ClaimRequested release = Bus.release("ns1", vol, "alloc-a");
        bus.send(release);
        bus.fail(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT), "INTERNAL", "device busy");
        bus.awaitStatus(release.requestId(), ClaimState.RELEASING, r -> r.startsWith("waiting for " + x + "'s lease to lapse"));
        return new ReleaseWaiting(vol, release);
    }

    /** The volume and the release of {@link #releaseWaitingForTheLease}. */
    private record ReleaseWaiting(String vol, ClaimRequested release) {
    }

    /** A single-node-writer volume of a fresh node-only plugin with a healthy instance on {@code node}; {plugin, volume}. */
    private String[] volumeOn(String node) {
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, false, List.of(), List.of(node));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        return new String[] {plugin, vol};
    }

    /**
     * A release on a node whose lease is valid, with no unmount answered (every unmount fails, and the node's plugin
     * instance is gone longer than the old node-gone-timeout and the lease floor), is never freed; once the registry
     * says the lease lapsed, the release first says it waits for the node's fence and only then is RELEASED as assumed
     * detached. Also: the mount carried the node's lease epoch, the claim's generation and fenceOnLapse.
     */
    @Test
    void aReleaseOnANodeWithAValidLeaseIsNeverFreedWithoutItsAnswerAndIsFreedAfterTheLapseAndTheFenceWait() {
        String node = ClaimFlowTest.unique("node");
        granted(node);
        java.time.Instant leaseSeen = java.time.Instant.now(); // the application had the lease by then
        String[] pv = volumeOn(node);
        String vol = pv[1];
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals(1L, mount.leaseEpoch());
        assertTrue(mount.claimGeneration() != null && mount.claimGeneration() >= 1, "claimGeneration " + mount.claimGeneration());
        assertEquals(Boolean.TRUE, mount.fenceOnLapse());
        bus.succeedAt(mount, 1);
        bus.awaitStatus(w.requestId(), ClaimState.READY);

        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals(1L, unmount.leaseEpoch());
        bus.plugin(pv[0], false, List.of(), List.of()); // the node's plugin instance disappears
        bus.fail(unmount, "INTERNAL", "device busy");
        ClaimStatus waiting = bus.awaitStatus(release.requestId(), ClaimState.RELEASING,
                r -> r.startsWith("waiting for " + node + "'s lease to lapse: "));
        assertTrue(waiting.reason().endsWith(" s left"), waiting.reason());
        java.time.Instant goneSeen = java.time.Instant.now();
        // Six more unmounts, each failed, and more until past the floor since the VALID lease and past
        // node-gone-timeout since the plugin instance went (the retries' pace alone need not cover both); still held.
        for (int i = 0; i < 6 || java.time.Instant.now().isBefore(leaseSeen.plus(fencing.timers().effectiveFailoverWait()))
                || java.time.Instant.now().isBefore(goneSeen.plus(claimSettings.nodeGoneTimeout())); i++) {
            bus.fail(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT), "INTERNAL", "device busy");
        }
        bus.awaitCommand(vol, NodeCommandKind.UNMOUNT); // the reconciler went round again after the last failure
        assertTrue(bus.statuses(release.requestId()).stream().noneMatch(s -> s.state() == ClaimState.RELEASED),
                "released while the node's lease was valid: " + bus.statuses(release.requestId()));
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(1))
                .body("claims[0].state", equalTo("unmounting"));

        bus.lease(node, 1, NodeLeaseState.LAPSED);
        ClaimStatus fenceWait = bus.awaitStatus(release.requestId(), ClaimState.RELEASING,
                r -> r.startsWith(node + " lease lapsed, waiting for its fence: "));
        ClaimStatus released = bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        assertEquals(node + "'s lease epoch 1 lapsed and the fence wait passed: assumed detached", released.reason());
        List<ClaimStatus> order = bus.statuses(release.requestId());
        assertTrue(order.indexOf(fenceWait) < order.indexOf(released), "fence wait said before RELEASED: " + order);
        assertTrue(order.indexOf(waiting) < order.indexOf(fenceWait), order.toString());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(0));
    }

    /**
     * A release on a node whose lease lapsed, of a plugin with a controller: the node side is assumed detached once the
     * fence wait passed (no unmount answered), the controller side still gets its unpublish, and the RELEASED that
     * follows it says why the node side was freed (it had no reason when the controller-unpublish came between).
     */
    @Test
    void theReleasedAfterALapseDrivenControllerUnpublishSaysWhyTheNodeWasAssumedDetached() {
        String node = ClaimFlowTest.unique("node");
        granted(node);
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of(node));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH), null, java.util.Map.of());
        bus.succeedAt(bus.awaitCommand(vol, NodeCommandKind.MOUNT), 1);
        bus.awaitStatus(w.requestId(), ClaimState.READY);

        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.fail(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT), "INTERNAL", "device busy");
        bus.lease(node, 1, NodeLeaseState.LAPSED);
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertTrue(bus.statuses(release.requestId()).stream().noneMatch(s -> s.state() == ClaimState.RELEASED),
                "released before its controller-unpublish was done: " + bus.statuses(release.requestId()));
        bus.succeed(unpublish, null, java.util.Map.of());
        ClaimStatus released = bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        assertEquals(node + "'s lease epoch 1 lapsed and the fence wait passed: assumed detached", released.reason());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(0));
    }

    /**
     * A mount-done of a lease epoch older than the node's newest is ignored: dead-lettered with the reason and
     * counted; the claim stays mounting until an answer of the current epoch comes.
     */
    @Test
    void aMountDoneOfAStaleLeaseEpochIsDeadLetteredAndCounted() {
        String node = ClaimFlowTest.unique("node");
        bus.lease(node, 1, NodeLeaseState.VALID);
        renewed(node, 2);
        String vol = volumeOn(node)[1];
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals(2L, mount.leaseEpoch());
        bus.succeedAt(mount, 1);
        ConsumerRecord<String, String> dead = bus.kafka.awaitRecord(Bus.topic(Topic.MOUNT_DONE) + "-dead-letter",
                r -> r.value() != null && r.value().contains(mount.commandId()), Bus.WAIT);
        assertEquals("stale lease epoch 1 < 2 for " + node, KafkaTestClient.header(dead, DeadLetters.REASON));
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims[0].state", equalTo("mounting"));
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> {
            String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
            assertTrue(metrics.lines().anyMatch(l -> l.startsWith("csi_claims_stale_epoch_total{")
                    && l.contains("topic=\"mount-done\"")), "no csi_claims_stale_epoch_total{topic=\"mount-done\"}");
        });
        // the claim waiting for that mount asks again under epoch 2 (MountAnswers#onStaleAnswer)
        NodeCommand again = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals(2L, again.leaseEpoch());
        assertTrue(!again.commandId().equals(mount.commandId()), "the mount asked again is a new command");
        assertEquals(attemptOf(mount), attemptOf(again), "asked again in the same attempt, not retried after the command timeout");
        bus.succeedAt(again, 2);
        bus.awaitStatus(w.requestId(), ClaimState.READY);
    }

    /** The attempt a command id names ("{claim}.{kind}.{attempt}.{nonce}", ClaimEffects). */
    private static String attemptOf(NodeCommand c) {
        String[] parts = c.commandId().split("\\.");
        return parts[parts.length - 2];
    }

    /**
     * The sequence ChaosIT found on 7a65ae6 (2026-12-01): a mount fails after the plugin was called and is rolled back
     * with an unmount sent under lease epoch 1; the registry then grants epoch 2, which claim-service sees before the
     * worker answers the unmount, still under epoch 1. The answer is dead-lettered as stale and the claim asks again
     * under epoch 2 at once (after its backoff, not after the command timeout); that answer ends the rollback and the
     * volume holds no claim. Before the fix the claim stayed unmounting until the command timeout.
     */
    @Test
    void anUnmountAnsweredUnderAnEpochThatEndedMeanwhileIsAskedAgainUnderTheNewOne() {
        String node = ClaimFlowTest.unique("node");
        granted(node);
        String vol = volumeOn(node)[1];
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        bus.send(new io.csiorchestrator.events.MountDone(mount.commandId(), node, NodeCommandKind.MOUNT, "ns1", vol, "alloc-1",
                false, "INTERNAL", "NodePublishVolume: disk on fire", java.util.Map.of(), null, null, java.time.Instant.now())
                .withFencing(1L, mount.claimGeneration()));
        bus.awaitStatus(w.requestId(), ClaimState.FAILED);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals(1L, unmount.leaseEpoch());
        renewed(node, 2);
        bus.succeedAt(unmount, 1);
        ConsumerRecord<String, String> dead = bus.kafka.awaitRecord(Bus.topic(Topic.MOUNT_DONE) + "-dead-letter",
                r -> r.value() != null && r.value().contains(unmount.commandId()), Bus.WAIT);
        assertEquals("stale lease epoch 1 < 2 for " + node, KafkaTestClient.header(dead, DeadLetters.REASON));
        NodeCommand again = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals(2L, again.leaseEpoch());
        assertEquals("alloc-1", again.allocationId());
        // the command timeout's retry would be the next attempt (DEADLINE_EXCEEDED), the stale answer's is the same one
        assertEquals(attemptOf(unmount), attemptOf(again), "asked again in the same attempt, not retried after the command timeout");
        bus.succeedAt(again, 2);
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(0)));
    }

    /**
     * The operator's detach of a node whose lease is valid sends the unmount there and frees the claim only once the
     * node reports it (RELEASING and the unmount come before RELEASED); a second volume's forced detach on the same
     * live node frees its claim at once without any unmount, with "forced by the caller (the test token's subject "test"), only if the node is powered
     * off" in the response and the claim-status reason (the audit).
     */
    @Test
    void anOperatorsDetachOfALiveNodeUnmountsThereFirstAndAForcedOneIsAudited() {
        String node = ClaimFlowTest.unique("node");
        granted(node);
        String vol = volumeOn(node)[1];
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        bus.succeedAt(bus.awaitCommand(vol, NodeCommandKind.MOUNT), 1);
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        given().post("/v1/volumes/ns1/" + vol + "/detach?node=" + node).then().statusCode(202)
                .body("allocations", equalTo(List.of("alloc-1")))
                .body("action", org.hamcrest.Matchers.startsWith("detaching node " + node + ": unmounts sent"));
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals(node, unmount.nodeId());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(1));
        assertTrue(bus.statuses(w.requestId()).stream().noneMatch(s -> s.state() == ClaimState.RELEASED),
                "freed before the node reported the unmount");
        bus.succeedAt(unmount, 1);
        bus.awaitStatus(w.requestId(), ClaimState.RELEASED);
        List<ClaimState> states = bus.statuses(w.requestId()).stream().map(ClaimStatus::state).toList();
        assertEquals(List.of(ClaimState.ACCEPTED, ClaimState.READY, ClaimState.RELEASING, ClaimState.RELEASED), states);

        String vol2 = volumeOn(node)[1];
        ClaimRequested w2 = Bus.claim("ns1", vol2, "alloc-2", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w2);
        bus.succeedAt(bus.awaitCommand(vol2, NodeCommandKind.MOUNT), 1);
        bus.awaitStatus(w2.requestId(), ClaimState.READY);
        given().post("/v1/volumes/ns1/" + vol2 + "/detach?node=" + node + "&force=true").then().statusCode(202)
                .body("action", equalTo("forced detach of node " + node + " by test (only if the node is powered off)"));
        ClaimStatus released = bus.awaitStatus(w2.requestId(), ClaimState.RELEASED);
        assertEquals("detach of node " + node + " from volume ns1/" + vol2 + " forced by test, only if the node is"
                + " powered off: the node is assumed detached", released.reason());
        assertEquals(List.of(NodeCommandKind.MOUNT), bus.commands(vol2).stream().map(NodeCommand::kind).toList(),
                "a forced detach sends nothing to the node");
    }

    /**
     * A volume registered with failover "manual" (issue 19 item 7): its mount is not fenced on a lapse (no
     * fenceOnLapse), and its release on a node whose lease lapsed is never freed by the lapse: it says it waits for the
     * node's unmount or an operator's forced detach, stays held through failed unmounts past the fence wait, and is
     * released only when the node reports the unmount. An unknown failover value is refused with the field named.
     */
    @Test
    void aManualFailoverVolumeIsNeverFreedByALapse() {
        io.restassured.RestAssured.given().contentType(io.restassured.http.ContentType.JSON)
                .body(java.util.Map.of("id", ClaimFlowTest.unique("vol"), "pluginId", "p", "externalId", "e",
                        "accessMode", "single-node-writer", "attachmentMode", "file-system", "failover", "auto"))
                .post("/v1/volumes").then().statusCode(400).body("problems[0].field", equalTo("failover"));
        String node = ClaimFlowTest.unique("node");
        granted(node);
        String plugin = ClaimFlowTest.unique("plug");
        String vol = ClaimFlowTest.unique("vol");
        io.restassured.RestAssured.given().contentType(io.restassured.http.ContentType.JSON)
                .body(java.util.Map.of("id", vol, "namespace", "ns1", "externalId", "ext-" + vol, "pluginId", plugin,
                        "accessMode", "single-node-writer", "attachmentMode", "file-system", "failover", "manual"))
                .post("/v1/volumes").then().statusCode(201);
        bus.plugin(plugin, false, List.of(), List.of(node));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("failover", equalTo("manual"));
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals(false, mount.fencesOnLapse(), "a manual volume's mount is not fenced on a lapse");
        bus.succeedAt(mount, 1);
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        bus.lease(node, 1, NodeLeaseState.LAPSED);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASING, r -> r.equals("volume ns1/" + vol
                + " has failover manual: waiting for " + node + " to report the unmount, or an operator's forced detach"));
        // Past the fence wait (2 s after the lapse in this profile): seven failed unmounts later it is still held.
        bus.fail(unmount, "INTERNAL", "device busy");
        for (int i = 0; i < 6; i++) {
            bus.fail(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT), "INTERNAL", "device busy");
        }
        NodeCommand last = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertTrue(bus.statuses(release.requestId()).stream().noneMatch(s -> s.state() == ClaimState.RELEASED),
                "a manual volume was freed by the lapse: " + bus.statuses(release.requestId()));
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(1));
        bus.succeed(last);
        ClaimStatus released = bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        assertEquals(null, released.reason());
    }

    /**
     * Every mount of a volume whose failover is fence is fenced on a lapse, a reader's too (so that what claim-service
     * frees after a lapse is really unmounted): the writer's and both readers' mount commands carry fenceOnLapse. A
     * FENCED node event (the worker, back from a lapse, reports the mounts it removed at epoch 1: the writer's and one
     * reader's) ends both listed claims FAILED with "node fenced at epoch 1: mount removed", sends no unmount for them,
     * and leaves the other reader, whose mount it does not list, ready. The event carries the worker's old epoch while
     * the registry has granted epoch 2 already: a fenced report is not refused as stale.
     */
    @Test
    void aFencedNodeEventEndsEveryClaimWhoseMountItRemovedReadersIncluded() {
        String node = ClaimFlowTest.unique("node");
        granted(node);
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.MULTI_NODE_SINGLE_WRITER);
        bus.plugin(plugin, false, List.of(), List.of(node));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        List<ClaimRequested> claims = List.of(
                Bus.claim("ns1", vol, "alloc-w", node, ClaimMode.WRITE, AccessMode.MULTI_NODE_SINGLE_WRITER),
                Bus.claim("ns1", vol, "alloc-r", node, ClaimMode.READ, AccessMode.MULTI_NODE_SINGLE_WRITER),
                Bus.claim("ns1", vol, "alloc-kept", node, ClaimMode.READ, AccessMode.MULTI_NODE_SINGLE_WRITER));
        for (ClaimRequested c : claims) {
            bus.send(c);
            NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
            assertEquals(c.allocationId(), mount.allocationId());
            assertEquals(Boolean.TRUE, mount.fenceOnLapse(), "fenceOnLapse of " + c.allocationId() + "'s mount");
            bus.succeedAt(mount, 1);
            bus.awaitStatus(c.requestId(), ClaimState.READY);
        }

        renewed(node, 2);
        bus.send(new io.csiorchestrator.events.NodeEvent(node, null, io.csiorchestrator.events.NodeEventKind.FENCED,
                "Fenced at lease epoch 1", null, null, null, null, true, null,
                java.util.Map.of("epoch", "1", "fencedBy", "worker", "unmounted", "ns1/" + vol + "/alloc-w",
                        "lazilyDetached", "ns1/" + vol + "/alloc-r"),
                java.time.Instant.now(), 1L));
        for (ClaimRequested ended : claims.subList(0, 2)) {
            ClaimStatus failed = bus.awaitStatus(ended.requestId(), ClaimState.FAILED);
            assertEquals(node + " fenced at epoch 1: mount removed", failed.reason(), ended.allocationId());
        }
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("claims", hasSize(1)).body("claims[0].allocationId", equalTo("alloc-kept"))
                .body("claims[0].state", equalTo("ready")));
        assertTrue(bus.commands(vol).stream().noneMatch(c -> c.kind() == NodeCommandKind.UNMOUNT),
                "no unmount sent for a mount the node removed itself");
    }

    /**
     * A mount the worker refuses as "stale lease epoch 1 < 2" (its lease was renewed at a new epoch that claim-service
     * had not seen when it sent the mount) is sent again, carrying the new epoch once node-leases brought it.
     */
    @Test
    void aMountRefusedForAStaleEpochIsSentAgainWithTheNewEpoch() {
        MountAcrossRenewal m = mountSentThenLeaseRenewed();
        refuse(m, "STALE_LEASE_EPOCH", "stale lease epoch 1 < 2", 2L);
        bus.succeedAt(awaitSentAgain(m), 2);
        bus.awaitStatus(m.claim().requestId(), ClaimState.READY);
    }

    /**
     * A mount the worker refused for want of a lease, stamped with the epoch it held (lapsed) and read by
     * claim-service only after the registry granted the next epoch, is taken, not dead-lettered as stale: the mount is
     * sent again with the new epoch. Dead-lettered, the claim stayed mounting until the node's next lapse or the
     * command timeout (full chaos run of 2026-11-29, partition-node-1-in: converged 108.9 s after the heal). A
     * successful mount of the older epoch stays refused (aMountDoneOfAStaleLeaseEpochIsDeadLetteredAndCounted).
     */
    @Test
    void aMountRefusedForWantOfALeaseUnderTheLapsedEpochIsTakenAfterTheNextGrantAndSentAgain() {
        MountAcrossRenewal m = mountSentThenLeaseRenewed();
        refuse(m, "NO_VALID_LEASE", m.node() + " has no valid lease (epoch 1 lapsed)", 1L);
        NodeCommand again = awaitSentAgain(m);
        assertTrue(bus.kafka.readAll(Bus.topic(Topic.MOUNT_DONE) + "-dead-letter").stream()
                .noneMatch(r -> r.value() != null && r.value().contains(m.first().commandId())), "the refusal was dead-lettered");
        bus.succeedAt(again, 2);
        bus.awaitStatus(m.claim().requestId(), ClaimState.READY);
    }

    /**
     * A write claim on a new node whose mount was sent at lease epoch 1, after which the lease lapsed and epoch 2 was
     * granted (claim-service has seen it): the set-up of the refused-mount tests above.
     */
    private MountAcrossRenewal mountSentThenLeaseRenewed() {
        String node = ClaimFlowTest.unique("node");
        granted(node);
        String vol = volumeOn(node)[1];
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        NodeCommand first = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals(1L, first.leaseEpoch());
        renewed(node, 2);
        return new MountAcrossRenewal(node, vol, w, first);
    }

    /** The claim, its node and volume, and its first mount command (sent at epoch 1), of {@link #mountSentThenLeaseRenewed}. */
    private record MountAcrossRenewal(String node, String vol, ClaimRequested claim, NodeCommand first) {
    }

    /** The worker's refusal of {@code m}'s first mount, {@code code} and {@code message}, stamped with {@code epoch}. */
    private void refuse(MountAcrossRenewal m, String code, String message, long epoch) {
        bus.send(new io.csiorchestrator.events.MountDone(m.first().commandId(), m.node(), NodeCommandKind.MOUNT, "ns1",
                m.vol(), "alloc-1", false, code, message, java.util.Map.of(), null, null, java.time.Instant.now())
                .withFencing(epoch, m.first().claimGeneration()));
    }

    /** {@code m}'s mount sent again, at epoch 2. */
    private NodeCommand awaitSentAgain(MountAcrossRenewal m) {
        NodeCommand again = bus.awaitCommand(m.vol(), NodeCommandKind.MOUNT);
        assertEquals(2L, again.leaseEpoch());
        return again;
    }

    /**
     * A controller-publish answered under an epoch older than the controller node's newest (the node's lease changed
     * epoch while the command ran) is taken: it is the storage's result, not the node's mounts, and it is the claim's
     * current command. It was dropped as stale, and the claim waited out the command timeout each time.
     */
    @Test
    void aControllerPublishAnsweredUnderAnOlderEpochOfTheControllersNodeIsTaken() {
        String node = ClaimFlowTest.unique("node");
        String controller = ClaimFlowTest.unique("ctrl");
        bus.lease(node, 1, NodeLeaseState.VALID);
        granted(controller);
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, true, List.of(controller), List.of(node));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        NodeCommand publish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        assertEquals(controller, publish.nodeId());
        renewed(controller, 2);
        bus.succeedAt(publish, 1);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        bus.succeedAt(mount, 1);
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        assertEquals(1, bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.CONTROLLER_PUBLISH).count(),
                "published once: the answer was taken, not waited out and sent again");
    }

    /**
     * A writer on node X and a second node Y, both with a controller and a node instance of {@code plugin} (a
     * storage-fencing plugin of the test profile) and a valid lease; the claim on X is READY. {x, y, vol, requestId}.
     */
    private String[] storageFencedWriter(String plugin) {
        // Named so that X sorts first: X's controller is the one any plain unpublish goes to.
        String x = ClaimFlowTest.unique("node-a");
        String y = ClaimFlowTest.unique("node-b");
        granted(x);
        granted(y);
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, true, List.of(x, y), List.of(x, y));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ClaimRequested w = Bus.claim("ns1", vol, "alloc-a", x, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(w);
        // X's own controller: one mount with the controller steps (issue 36 item 1)
        NodeCommand attach = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertTrue(attach.controllerSteps(), "published through X's own controller, in X's mount");
        assertEquals("ext-" + x, attach.externalNodeId());
        assertEquals(x, attach.nodeId());
        bus.succeedAt(attach, 1);
        bus.awaitStatus(w.requestId(), ClaimState.READY);
        return new String[] {x, y, vol, w.requestId()};
    }

    /**
     * Storage fencing (issue 19 item 4): the release of a write claim of a storage-fencing plugin on node X, whose
     * unmount gets no answer and whose lease the registry declares LAPSED, is not left to the lease wait: claim-service
     * sends ControllerUnpublish(volume, X) to the controller on the other node Y (never to X's own controller), says so
     * in a RELEASING status, and the fence's success releases the claim with "storage-fenced X by ControllerUnpublish"
     * (the lease path's "assumed detached" never comes, and no second ControllerUnpublish is sent). A new writer on Y
     * sent during the fence is PENDING ("waiting for the storage fence of X by ControllerUnpublish (...)"), nothing is
     * sent for it until the fence succeeded, then it is ACCEPTED, controller-published on Y and READY.
     */
    @Test
    void aReleaseOnAnUnreachableNodeOfAStorageFencingPluginIsFreedByAControllerUnpublishFromAnotherNode() {
        String[] xv = storageFencedWriter("sf-1.test.csi");
        String x = xv[0];
        String y = xv[1];
        String vol = xv[2];
        ClaimRequested release = Bus.release("ns1", vol, "alloc-a");
        bus.send(release);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals(x, unmount.nodeId());
        bus.lease(x, 1, NodeLeaseState.LAPSED); // X is cut off: its unmount is never answered

        NodeCommand fence = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals(y, fence.nodeId(), "the fence goes to the controller on another node, not the unreachable one");
        assertEquals("ext-" + x, fence.externalNodeId());
        ClaimStatus fencing = bus.awaitStatus(release.requestId(), ClaimState.RELEASING, r -> r.startsWith(x + " is unreachable"));
        assertEquals(x + " is unreachable (its lease is not valid): storage-fencing it by ControllerUnpublish through the"
                + " controller on " + y, fencing.reason());

        // A new writer on Y meanwhile is pending on the fence, and nothing is published for it before the fence ended.
        ClaimRequested next = Bus.claim("ns1", vol, "alloc-b", y, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(next);
        ClaimStatus pending = bus.awaitStatus(next.requestId(), ClaimState.PENDING);
        assertTrue(pending.reason().startsWith("waiting for the storage fence of " + x + " by ControllerUnpublish ("),
                pending.reason());
        assertTrue(bus.commands(vol).stream().noneMatch(c -> "alloc-b".equals(c.allocationId())
                || c.kind() == NodeCommandKind.CONTROLLER_PUBLISH && ("ext-" + y).equals(c.externalNodeId())),
                "sent for the pending claim before the fence ended: " + bus.commands(vol));
        bus.succeedAt(fence, 1);
        ClaimStatus released = bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        assertEquals("storage-fenced " + x + " by ControllerUnpublish", released.reason());

        NodeCommand attachY = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals(y, attachY.nodeId());
        assertTrue(attachY.controllerSteps(), "controller-published by Y's own controller, in Y's mount");
        assertEquals("ext-" + y, attachY.externalNodeId());
        bus.succeedAt(attachY, 1);
        bus.awaitStatus(next.requestId(), ClaimState.READY);
        assertEquals(List.of(ClaimState.PENDING, ClaimState.ACCEPTED, ClaimState.READY),
                bus.statuses(next.requestId()).stream().map(ClaimStatus::state).toList());
        List<NodeCommand> unpublishes = bus.commands(vol).stream()
                .filter(c -> c.kind() == NodeCommandKind.CONTROLLER_UNPUBLISH).toList();
        assertEquals(List.of(fence.commandId()), unpublishes.stream().map(NodeCommand::commandId).toList(),
                "one ControllerUnpublish: the fence");
        assertTrue(bus.statuses(release.requestId()).stream().noneMatch(s -> s.reason() != null
                && s.reason().contains("assumed detached")), "freed by the lease wait: " + bus.statuses(release.requestId()));
    }

    /**
     * A storage fence whose ControllerUnpublish fails is no fence (issue 19 item 4): the release says so and falls back
     * to the lease wait ("... failed (INTERNAL: ...): not a fence, falling back to the lease wait: X lease lapsed,
     * waiting for its fence: N s left", or "... the fence wait passed" when the failure came back after it), the unmount
     * is sent to X again, and the claim is released only by the lease path ("assumed detached") once the fence wait
     * passed.
     */
    @Test
    void aFailedStorageFenceIsNoFenceAndTheReleaseFallsBackToTheLeaseWait() {
        String[] xv = storageFencedWriter("sf-2.test.csi");
        String x = xv[0];
        String vol = xv[2];
        ClaimRequested release = Bus.release("ns1", vol, "alloc-a");
        bus.send(release);
        bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        bus.lease(x, 1, NodeLeaseState.LAPSED);
        NodeCommand fence = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        bus.fail(fence, "INTERNAL", "the storage API refused");
        ClaimStatus fallback = bus.awaitStatus(release.requestId(), ClaimState.RELEASING, r -> r.startsWith("storage fence"));
        String fallbackPrefix = "storage fence of " + x + " by ControllerUnpublish failed (INTERNAL: the storage API"
                + " refused): not a fence, falling back to the lease wait: ";
        assertTrue(fallback.reason().startsWith(fallbackPrefix), fallback.reason());
        // The lease wait as it stood when the failure came back: still running, or (the failure's round trip through
        // Kafka longer than the test profile's 2 s fence wait, as on a loaded CI machine) already passed.
        String wait = fallback.reason().substring(fallbackPrefix.length());
        assertTrue(wait.startsWith(x + " lease lapsed, waiting for its fence: ")
                || wait.equals(x + "'s lease epoch 1 lapsed and the fence wait passed: assumed detached"), wait);
        // The failed fence sends the claim back to unmounting X, its retry after a backoff: sent while the fence wait
        // still runs, skipped when the wait has passed by then (on a loaded CI machine it had: session 27). Only the
        // lease path (the fence wait passed) frees the node side; the controller side, still owed since the fence
        // failed, is then unpublished like any release's.
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertTrue(bus.statuses(release.requestId()).stream().noneMatch(s -> s.state() == ClaimState.RELEASED),
                "released before the controller side was unpublished: " + bus.statuses(release.requestId()));
        bus.succeedAt(unpublish, 1);
        ClaimStatus released = bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        assertEquals(x + "'s lease epoch 1 lapsed and the fence wait passed: assumed detached", released.reason(),
                "freed by the lease wait, which the RELEASED after the controller side says; a failed fence is not one");
        List<ClaimStatus> order = bus.statuses(release.requestId());
        assertTrue(order.indexOf(fallback) < order.indexOf(released), order.toString());
        assertTrue(bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.UNMOUNT)
                .allMatch(c -> c.nodeId().equals(x)), "every unmount, the retry included, goes to X: " + bus.commands(vol));
    }

    /**
     * A write claim on Y for a single-node-writer volume whose writer on X is being released and waits for X's lease
     * (its unmount fails) is PENDING, not rejected, with "waiting for X's lease to lapse: N s left (...)"; nothing is
     * sent for it. When the release ends (the lease lapsed and the fence wait passed) the pending claim is woken by that
     * end (its mount is sent before its pendingUntil, when its timer would have decided it again), ACCEPTED, mounted on
     * Y and READY.
     */
    @Test
    void aNewWriterIsPendingWhileThePreviousWritersReleaseWaitsForTheLeaseAndGoesOnWhenItEnds() {
        String x = ClaimFlowTest.unique("node");
        String y = ClaimFlowTest.unique("node");
        granted(x);
        granted(y);
        ReleaseWaiting held = releaseWaitingForTheLease(x, y);
        String vol = held.vol();
        ClaimRequested release = held.release();

        ClaimRequested b = Bus.claim("ns1", vol, "alloc-b", y, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(b);
        ClaimStatus pending = bus.awaitStatus(b.requestId(), ClaimState.PENDING);
        assertTrue(pending.reason().matches("waiting for " + x + "'s lease to lapse: \\d+ s left \\(volume ns1/" + vol
                + ": write claim by allocation alloc-b on node " + y + " .* pending: .*allocation alloc-a on node " + x
                + " holds the write claim, being released\\)"), pending.reason());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims.find { it.allocationId == 'alloc-b' }.state",
                equalTo("release-wait"));
        java.time.Instant pendingUntil = java.time.Instant.parse(given().get("/v1/volumes/ns1/" + vol).then().extract()
                .path("claims.find { it.allocationId == 'alloc-b' }.pendingUntil"));
        assertTrue(bus.commands(vol).stream().noneMatch(c -> "alloc-b".equals(c.allocationId())), "sent while pending");

        bus.lease(x, 1, NodeLeaseState.LAPSED);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        NodeCommand mountB = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals("alloc-b", mountB.allocationId());
        assertEquals(y, mountB.nodeId());
        assertTrue(mountB.issuedAt().isBefore(pendingUntil), "sent when the release ended (" + mountB.issuedAt()
                + "), not when the pending claim's timer came due (" + pendingUntil + ")");
        bus.succeedAt(mountB, 1);
        bus.awaitStatus(b.requestId(), ClaimState.READY);
        assertEquals(List.of(ClaimState.PENDING, ClaimState.ACCEPTED, ClaimState.READY),
                bus.statuses(b.requestId()).stream().map(ClaimStatus::state).toList());
    }

    /**
     * A pending claim whose blocking release never ends (X's lease stays valid, its unmount keeps failing) is rejected
     * once csi.claims.pending-timeout (10 s here) passed, with what it waited for; nothing was ever sent for it, and
     * the release it waited for is still held.
     */
    @Test
    void aPendingClaimIsRejectedPastThePendingTimeoutWithWhatItWaitedFor() {
        String x = ClaimFlowTest.unique("node");
        String y = ClaimFlowTest.unique("node");
        granted(x);
        ReleaseWaiting held = releaseWaitingForTheLease(x, y);
        String vol = held.vol();
        ClaimRequested release = held.release();
        ClaimRequested b = Bus.claim("ns1", vol, "alloc-b", y, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(b);
        bus.awaitStatus(b.requestId(), ClaimState.PENDING);
        ClaimStatus rejected = bus.awaitStatus(b.requestId(), ClaimState.REJECTED);
        assertTrue(rejected.reason().contains("write claim by allocation alloc-b on node " + y)
                && rejected.reason().contains(" rejected: still pending after "
                + io.csiorchestrator.claims.domain.FenceTimers.text(claimSettings.pendingTimeout()) + ", access mode single-node-writer allows a"
                + " single writer and allocation alloc-a on node " + x + " holds the write claim, being released; waiting for "
                + x + "'s lease to lapse: "), rejected.reason());
        assertTrue(bus.commands(vol).stream().noneMatch(c -> "alloc-b".equals(c.allocationId())), "sent for a pending claim");
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("claims", hasSize(1))
                .body("claims[0].allocationId", equalTo("alloc-a"));
    }
}
