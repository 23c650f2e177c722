package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.Topic;
import io.quarkus.test.junit.QuarkusTest;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The sequence the chaos suite met on 2026-11-29 (issue 36; test audit 2, untested path 5), through the real broker and
 * PostgreSQL: a READY claim on node X of a single-node-writer volume is ended by claim-service itself, with no release
 * asked (X's lease lapsed and the fence wait passed; X's FENCED report; an operator's detach of X), while a write
 * claim on node Y for the same volume arrives and waits (PENDING, RELEASE_WAIT). Y's claim must not be granted (no
 * ACCEPTED or READY, no controller-publish or mount for it) before the holder is gone, and must be granted after.
 * The holder's end is held back by the test: its plugin needs a controller, and the controller-unpublish that ends
 * the holder (or the unmount before it) is answered only once Y's claim was seen waiting. The test stands in for the
 * registry (leases, plugin status) and the worker (command answers), as in {@link FencingTest}.
 */
@QuarkusTest
class HolderFreedWhileAnotherWaitsTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    /** Nodes X and Y with valid leases, a controller-published volume with a READY {@code mode} claim on X. */
    private record Setup(String x, String y, String vol, ClaimRequested holder) {
    }

    private Setup readyHolder(ClaimMode mode) {
        String x = ClaimFlowTest.unique("node-x");
        String y = ClaimFlowTest.unique("node-y");
        bus.lease(x, 1, NodeLeaseState.VALID);
        bus.lease(y, 1, NodeLeaseState.VALID);
        Bus.awaitLease(x, 1, "valid");
        Bus.awaitLease(y, 1, "valid");
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("vol"), plugin, AccessMode.SINGLE_NODE_WRITER);
        bus.plugin(plugin, true, List.of(ClaimFlowTest.unique("ctrl")), List.of(x, y));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ClaimRequested a = Bus.claim("ns1", vol, "alloc-a", x, mode, AccessMode.SINGLE_NODE_WRITER);
        bus.send(a);
        bus.succeedAt(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH), 1);
        bus.succeedAt(bus.awaitCommand(vol, NodeCommandKind.MOUNT), 1);
        bus.awaitStatus(a.requestId(), ClaimState.READY);
        return new Setup(x, y, vol, a);
    }

    /**
     * Y's write claim, sent while the holder is being ended: PENDING, and, once claim-service answered a later request
     * of the volume (a release of an allocation holding nothing: the same partition, after it), still not granted.
     */
    private ClaimRequested waitingWriter(Setup s, String holderState) {
        ClaimRequested b = Bus.claim("ns1", s.vol(), "alloc-b", s.y(), ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(b);
        ClaimStatus pending = bus.awaitStatus(b.requestId(), ClaimState.PENDING);
        assertTrue(pending.reason().contains("allocation alloc-a") && pending.reason().contains("being released"),
                pending.reason());
        ClaimRequested marker = Bus.release("ns1", s.vol(), "alloc-none");
        bus.send(marker);
        bus.awaitStatus(marker.requestId(), ClaimState.RELEASED);
        assertNotGranted(s, b);
        given().get("/v1/volumes/ns1/" + s.vol()).then().statusCode(200)
                .body("claims.find { it.allocationId == 'alloc-b' }.state", equalTo("release-wait"))
                .body("claims.find { it.allocationId == 'alloc-a' }.state", equalTo(holderState));
        return b;
    }

    private void assertNotGranted(Setup s, ClaimRequested b) {
        assertEquals(List.of(ClaimState.PENDING), bus.statuses(b.requestId()).stream().map(ClaimStatus::state).toList(),
                "Y's claim answered more than pending while the holder was not gone");
        assertTrue(bus.commands(s.vol()).stream().noneMatch(c -> "alloc-b".equals(c.allocationId())
                || ("ext-" + s.y()).equals(c.externalNodeId()) && c.kind() == NodeCommandKind.CONTROLLER_PUBLISH),
                "a command for Y's claim while the holder was not gone: " + bus.commands(s.vol()));
    }

    /**
     * Y's claim is granted now: controller-published for Y, mounted on Y, READY; PENDING, ACCEPTED, READY in order,
     * and on the volume's claim-status the holder's {@code holderEnd} before Y's ACCEPTED (a RELEASED also after Y's
     * PENDING: Y waited for it; a FAILED, the start of a rollback, came before Y was sent).
     */
    private void grantedAfter(Setup s, ClaimRequested b, ClaimState holderEnd) {
        NodeCommand publish = bus.awaitCommand(s.vol(), NodeCommandKind.CONTROLLER_PUBLISH);
        assertEquals("ext-" + s.y(), publish.externalNodeId());
        bus.succeedAt(publish, 1);
        NodeCommand mount = bus.awaitCommand(s.vol(), NodeCommandKind.MOUNT);
        assertEquals("alloc-b", mount.allocationId());
        assertEquals(s.y(), mount.nodeId());
        bus.succeedAt(mount, 1);
        bus.awaitStatus(b.requestId(), ClaimState.READY);
        // The volume's claim-status records, in partition order (key: the volume): the holder's end before Y's grant.
        List<ClaimStatus> order = bus.kafka.readAll(Bus.topic(Topic.CLAIM_STATUS)).stream()
                .filter(r -> s.vol().equals(r.key())).sorted(Comparator.comparingLong(ConsumerRecord::offset))
                .map(r -> EventCodec.decode(ClaimStatus.class, r.value())).toList();
        int end = indexOf(order, "alloc-a", holderEnd);
        int pending = indexOf(order, "alloc-b", ClaimState.PENDING);
        int accepted = indexOf(order, "alloc-b", ClaimState.ACCEPTED);
        boolean waited = holderEnd == ClaimState.RELEASED ? pending < end : end < pending;
        assertTrue(waited && end < accepted && pending < accepted && accepted < indexOf(order, "alloc-b", ClaimState.READY),
                "claim-status of " + s.vol() + ": " + order.stream().map(c -> c.allocationId() + " " + c.state().wire()).toList());
        assertEquals(List.of(ClaimState.PENDING, ClaimState.ACCEPTED, ClaimState.READY),
                bus.statuses(b.requestId()).stream().map(ClaimStatus::state).toList());
    }

    private static int indexOf(List<ClaimStatus> order, String alloc, ClaimState state) {
        for (int i = 0; i < order.size(); i++) {
            if (order.get(i).allocationId().equals(alloc) && order.get(i).state() == state) {
                return i;
            }
        }
        throw new AssertionError("no " + state.wire() + " of " + alloc + " in " + order);
    }

    /**
     * X's lease lapses with a READY reader on X (the 11-29 case: a read claim, then a writer on the other node): once
     * the fence wait passed claim-service frees it (RELEASING "... lapsed and the fence wait passed: assumed detached"
     * under the reader's own request) and sends its controller-unpublish. Y's writer waits for that; it is granted
     * only after the reader's RELEASED.
     */
    @Test
    void aReaderFreedAfterItsNodesLapseHoldsOffTheOtherNodesWriterUntilItsReleased() {
        Setup s = readyHolder(ClaimMode.READ);
        bus.lease(s.x(), 1, NodeLeaseState.LAPSED);
        String why = s.x() + "'s lease epoch 1 lapsed and the fence wait passed: assumed detached";
        bus.awaitStatus(s.holder().requestId(), ClaimState.RELEASING, why::equals);
        NodeCommand unpublish = bus.awaitCommand(s.vol(), NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals("ext-" + s.x(), unpublish.externalNodeId());

        ClaimRequested b = waitingWriter(s, "controller-unpublishing");
        bus.succeedAt(unpublish, 1);
        ClaimStatus released = bus.awaitStatus(s.holder().requestId(), ClaimState.RELEASED);
        assertEquals(why, released.reason());
        grantedAfter(s, b, ClaimState.RELEASED);
    }

    /**
     * X's worker reports it fenced itself at epoch 1 and removed the writer's mount (its own lease expiry; the
     * registry has not declared the lapse): the writer ends FAILED "X fenced at epoch 1: mount removed" and is rolled
     * back through its controller-unpublish. Y's writer waits for the rollback, not only for the FAILED: nothing is
     * sent for it before the unpublish was answered.
     */
    @Test
    void aWriterEndedByItsNodesFencedReportHoldsOffTheOtherNodesWriterUntilItsRollbackEnded() {
        Setup s = readyHolder(ClaimMode.WRITE);
        bus.send(new io.csiorchestrator.events.NodeEvent(s.x(), null, io.csiorchestrator.events.NodeEventKind.FENCED,
                "Fenced at lease epoch 1", null, null, null, null, true, null,
                Map.of("epoch", "1", "fencedBy", "worker", "unmounted", "ns1/" + s.vol() + "/alloc-a"),
                java.time.Instant.now(), 1L));
        ClaimStatus failed = bus.awaitStatus(s.holder().requestId(), ClaimState.FAILED);
        assertEquals(s.x() + " fenced at epoch 1: mount removed", failed.reason());
        NodeCommand unpublish = bus.awaitCommand(s.vol(), NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals("ext-" + s.x(), unpublish.externalNodeId());

        ClaimRequested b = waitingWriter(s, "controller-unpublishing");
        bus.succeedAt(unpublish, 1);
        grantedAfter(s, b, ClaimState.FAILED);
    }

    /**
     * An operator detaches X from the volume (X live: the unmount is sent there) with a READY writer on X: RELEASING
     * under the writer's own request. Y's writer waits through the unmount and the controller-unpublish; it is
     * granted only after the writer's RELEASED.
     */
    @Test
    void aWriterDetachedByAnOperatorHoldsOffTheOtherNodesWriterUntilItsReleased() {
        Setup s = readyHolder(ClaimMode.WRITE);
        given().post("/v1/volumes/ns1/" + s.vol() + "/detach?node=" + s.x()).then().statusCode(202);
        bus.awaitStatus(s.holder().requestId(), ClaimState.RELEASING);
        NodeCommand unmount = bus.awaitCommand(s.vol(), NodeCommandKind.UNMOUNT);
        assertEquals(s.x(), unmount.nodeId());

        ClaimRequested b = waitingWriter(s, "unmounting");
        bus.succeedAt(unmount, 1);
        NodeCommand unpublish = bus.awaitCommand(s.vol(), NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals("ext-" + s.x(), unpublish.externalNodeId());
        assertNotGranted(s, b);
        bus.succeedAt(unpublish, 1);
        bus.awaitStatus(s.holder().requestId(), ClaimState.RELEASED);
        grantedAfter(s, b, ClaimState.RELEASED);
    }
}
