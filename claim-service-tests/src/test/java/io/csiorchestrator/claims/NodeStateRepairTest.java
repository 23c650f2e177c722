package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.ReportedMount;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.PostgresResource;
import io.quarkus.test.junit.QuarkusTest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Anti-entropy through Kafka and PostgreSQL: the test plays the node's worker, sending its {@code node-state}
 * reports (grace 3 s in the test profile; the reports' {@code takenAt} set by the test) and answering node commands.
 * Every repair is a claim-status record, a node command, a {@code reconcile} node event and a
 * {@code csi_claims_repairs_total} count.
 */
@QuarkusTest
class NodeStateRepairTest {

    static final Duration GRACE = Duration.ofSeconds(3);

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    /** A READY write claim of {@code alloc} on {@code node}; its mount command. */
    private NodeCommand readyClaim(String vol, String alloc, String node, ClaimRequested claim) {
        bus.send(claim);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        bus.succeed(mount);
        bus.awaitStatus(claim.requestId(), ClaimState.READY);
        return mount;
    }

    private static NodeStateReported.VolumeState volume(String vol, String alloc, ReportedMount state, String commandId) {
        return new NodeStateReported.VolumeState("ns1", vol, "plug", "ext-" + vol, ReportedMount.MOUNTED,
                List.of(new NodeStateReported.Publication(alloc, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM,
                        false, state, commandId)), List.of());
    }

    private long sequence = 0;

    private void report(String node, Instant takenAt, NodeStateReported.VolumeState... volumes) {
        bus.send(new NodeStateReported(node, ++sequence, takenAt, List.of(volumes)));
    }

    private static void deleteClaimRows(String vol) throws Exception {
        org.postgresql.ds.PGSimpleDataSource source = new org.postgresql.ds.PGSimpleDataSource();
        source.setUrl(ConfigProvider.getConfig().getValue("quarkus.datasource.jdbc.url", String.class));
        source.setUser(PostgresResource.username());
        source.setPassword(PostgresResource.password());
        try (Connection db = source.getConnection();
             PreparedStatement delete = db.prepareStatement("DELETE FROM claims WHERE volume_id = ?")) {
            delete.setString(1, vol);
            assertEquals(1, delete.executeUpdate(), "the claim row of " + vol);
        }
    }

    private ClaimStatus awaitStatusOf(String vol, ClaimState state, String reasonPart) {
        ConsumerRecord<String, String> r = bus.kafka.awaitRecord(Bus.topic(Topic.CLAIM_STATUS), rec -> {
            ClaimStatus s = EventCodec.decode(ClaimStatus.class, rec.value());
            return s.volumeId().equals(vol) && s.state() == state && (reasonPart == null
                    || (s.reason() != null && s.reason().contains(reasonPart)));
        }, Bus.WAIT);
        return EventCodec.decode(ClaimStatus.class, r.value());
    }

    private NodeEvent awaitReconcileEvent(String vol, String repair) {
        // node-events also carries HostileRecordsTest's garbage (claim-service consumes the topic): read past it
        ConsumerRecord<String, String> r = bus.kafka.awaitRecord(Bus.topic(Topic.NODE_EVENTS), rec -> {
            NodeEvent e;
            try {
                e = EventCodec.decode(NodeEvent.class, rec.value());
            } catch (io.csiorchestrator.events.MalformedEventException malformed) {
                return false;
            }
            return e.kind() == NodeEventKind.RECONCILE && vol.equals(e.volumeId()) && repair.equals(e.details().get("repair"));
        }, Bus.WAIT);
        CloudEventHeaders.requireValid(r.headers(), EventType.NODE_EVENT);
        return EventCodec.decode(NodeEvent.class, r.value());
    }

    private static double repairs(String kind) {
        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
        return metrics.lines().filter(l -> l.startsWith("csi_claims_repairs_total{") && l.contains("kind=\"" + kind + "\""))
                // "name{labels} value" and maybe " # {exemplar} value time"
                .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf("} ") + 2).split(" ")[0])).sum();
    }

    /**
     * An orphan made for a marker: a second volume, never claimed, that the node reports mounted for as long as the
     * grace; its unmount command arriving proves that every report of the node sent before was handled (one node's
     * reports share one partition and are handled in order).
     */
    private NodeCommand orphanMarker(String node, Instant from, NodeStateReported.VolumeState... alsoReported) {
        String marker = Bus.registerVolume("ns1", ClaimFlowTest.unique("marker"), "plug-unused", AccessMode.SINGLE_NODE_WRITER);
        List<NodeStateReported.VolumeState> volumes = new ArrayList<>(List.of(alsoReported));
        volumes.add(volume(marker, "alloc-m", ReportedMount.MOUNTED, "cmd-m"));
        report(node, from, volumes.toArray(NodeStateReported.VolumeState[]::new));
        report(node, from.plus(GRACE), volumes.toArray(NodeStateReported.VolumeState[]::new));
        return bus.awaitCommand(marker, NodeCommandKind.UNMOUNT);
    }

    /**
     * An orphan made by deleting a claim's row behind the service's back (the node still has the READY claim's mount):
     * once two reports a grace apart show it, claim-service unmounts it on that node (with a releasing, then a
     * released claim-status, a reconcile node event and the repair counted), and a redelivered report does not
     * unmount it twice.
     */
    @Test
    void anOrphanLeftByADeletedClaimRowIsUnmountedOnceAfterTheGrace() throws Exception {
        String node = ClaimFlowTest.unique("node-ae");
        String vol = bus.schedulableVolume("ns1", "orphan", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        NodeCommand mount = readyClaim(vol, "alloc-1", node, claim);
        deleteClaimRows(vol);
        double before = repairs("orphan-unmounted");

        Instant t0 = Instant.now();
        report(node, t0, volume(vol, "alloc-1", ReportedMount.MOUNTED, mount.commandId()));
        report(node, t0.plus(GRACE), volume(vol, "alloc-1", ReportedMount.MOUNTED, mount.commandId()));

        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals(node, unmount.nodeId());
        assertEquals("alloc-1", unmount.allocationId());
        assertEquals("ext-" + vol, unmount.externalVolumeId());
        ClaimStatus releasing = awaitStatusOf(vol, ClaimState.RELEASING, "holds no claim");
        assertEquals("alloc-1", releasing.allocationId());
        assertEquals(node, releasing.nodeId());
        NodeEvent event = awaitReconcileEvent(vol, "orphan-unmounted");
        assertEquals(node, event.nodeId());
        assertEquals("alloc-1", event.allocationId());
        bus.succeed(unmount);
        ClaimStatus released = bus.awaitStatus(releasing.requestId(), ClaimState.RELEASED);
        assertEquals(vol, released.volumeId());
        assertEquals(before + 1, repairs("orphan-unmounted"));

        // the second report redelivered, then a marker: the orphan's unmount was sent once only
        report(node, t0.plus(GRACE), volume(vol, "alloc-1", ReportedMount.MOUNTED, mount.commandId()));
        orphanMarker(node, t0.plus(GRACE).plusSeconds(1));
        assertEquals(1, bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.UNMOUNT).count(),
                "one unmount of the orphan: " + bus.commands(vol));
    }

    /**
     * A READY claim whose target was unmounted behind the worker's back (the node reports it missing for the grace)
     * is mounted again on its node: an accepted claim-status saying so, a new mount command, a reconcile node event,
     * the repair counted; once that mount is done the claim is READY again.
     */
    @Test
    void aReadyClaimWhoseMountVanishedIsMountedAgainAndEndsReady() {
        String node = ClaimFlowTest.unique("node-ae");
        String vol = bus.schedulableVolume("ns1", "lost", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        NodeCommand mount = readyClaim(vol, "alloc-1", node, claim);
        double before = repairs("mount-redriven");

        Instant t0 = Instant.now();
        report(node, t0, volume(vol, "alloc-1", ReportedMount.MISSING, mount.commandId()));
        report(node, t0.plus(GRACE), volume(vol, "alloc-1", ReportedMount.MISSING, mount.commandId()));

        ClaimStatus again = awaitStatusOf(vol, ClaimState.ACCEPTED, "missing from its mount table");
        assertEquals(claim.requestId(), again.requestId(), "the claim's own request");
        NodeCommand remount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        List<ClaimStatus> accepted = bus.statuses(claim.requestId()).stream().filter(s -> s.state() == ClaimState.ACCEPTED).toList();
        assertEquals(2, accepted.size(), accepted.toString());
        assertTrue(accepted.get(1).reason().contains("missing from its mount table"), accepted.get(1).reason());
        assertEquals(node, remount.nodeId());
        assertEquals("alloc-1", remount.allocationId());
        awaitReconcileEvent(vol, "mount-redriven");
        bus.succeed(remount);
        List<ClaimStatus> ready = bus.kafka.awaitRecords(Bus.topic(Topic.CLAIM_STATUS), r -> {
            ClaimStatus s = EventCodec.decode(ClaimStatus.class, r.value());
            return s.requestId().equals(claim.requestId()) && s.state() == ClaimState.READY;
        }, 2, Bus.WAIT).stream().map(r -> EventCodec.decode(ClaimStatus.class, r.value())).toList();
        assertEquals(2, ready.size());
        assertEquals(before + 1, repairs("mount-redriven"));
    }

    /**
     * Reports taken before a claim's last transition change nothing: the node's reports of moments before the claim
     * was granted (no mount yet) and while it was still mounted (the mount for the grace) arrive only after the claim
     * was released. No mount is sent again, no second unmount, no status is added (a marker orphan on the same node
     * proves every report was handled).
     */
    @Test
    void reportsOlderThanTheClaimsLastTransitionChangeNothing() {
        String node = ClaimFlowTest.unique("node-ae");
        String vol = bus.schedulableVolume("ns1", "late", AccessMode.SINGLE_NODE_WRITER, node);
        Instant t0 = Instant.now().minusSeconds(20);
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        NodeCommand mount = readyClaim(vol, "alloc-1", node, claim);
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT));
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        int statuses = bus.statuses(claim.requestId()).size() + bus.statuses(release.requestId()).size();

        report(node, t0);                  // before the claim: no mount
        report(node, t0.plus(GRACE));
        report(node, t0.plusSeconds(10), volume(vol, "alloc-1", ReportedMount.MOUNTED, mount.commandId())); // mounted
        report(node, t0.plusSeconds(10).plus(GRACE), volume(vol, "alloc-1", ReportedMount.MOUNTED, mount.commandId()));
        orphanMarker(node, Instant.now());

        assertEquals(1, bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.MOUNT).count(),
                "no second mount: " + bus.commands(vol));
        assertEquals(1, bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.UNMOUNT).count(),
                "no second unmount: " + bus.commands(vol));
        assertEquals(statuses, bus.statuses(claim.requestId()).size() + bus.statuses(release.requestId()).size(),
                "no status added");
    }

    /**
     * The controller publication of (volume, node) is released by the last claim to leave the node, an orphan's too
     * (plugin with a controller): a claim's row deleted makes its mount an orphan while a second claim of the volume
     * is READY on the node; the second is released while the orphan's unmount is pending, so its controller-unpublish
     * is skipped (its RELEASED says so); once the orphan's unmount is done, the orphan, last on the node, sends the
     * controller-unpublish and ends released.
     */
    @Test
    void anOrphanLeftLastOnItsNodeControllerUnpublishesTheVolume() throws Exception {
        String node = ClaimFlowTest.unique("node-ae");
        String plugin = ClaimFlowTest.unique("plug");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("shared"), plugin, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of(node));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        NodeCommand[] mounts = new NodeCommand[2];
        for (int i = 0; i < 2; i++) {
            if (i == 1) {
                deleteClaimRows(vol); // alloc-1's mount stays on the node: an orphan
            }
            ClaimRequested claim = Bus.claim("ns1", vol, "alloc-" + (i + 1), node, ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
            bus.send(claim);
            bus.succeed(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH), null, java.util.Map.of());
            mounts[i] = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
            bus.succeed(mounts[i]);
            bus.awaitStatus(claim.requestId(), ClaimState.READY);
        }
        Instant t0 = Instant.now();
        NodeStateReported.VolumeState both = new NodeStateReported.VolumeState("ns1", vol, plugin, "ext-" + vol,
                ReportedMount.MOUNTED, List.of(
                new NodeStateReported.Publication("alloc-1", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                        false, ReportedMount.MOUNTED, mounts[0].commandId()),
                new NodeStateReported.Publication("alloc-2", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                        false, ReportedMount.MOUNTED, mounts[1].commandId())), List.of());
        report(node, t0, both);
        report(node, t0.plus(GRACE), both);
        NodeCommand orphanUnmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals("alloc-1", orphanUnmount.allocationId());
        ClaimStatus orphanReleasing = awaitStatusOf(vol, ClaimState.RELEASING, "holds no claim");

        ClaimRequested release = Bus.release("ns1", vol, "alloc-2");
        bus.send(release);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertEquals("alloc-2", unmount.allocationId());
        bus.succeed(unmount);
        String reason = bus.awaitStatus(release.requestId(), ClaimState.RELEASED).reason();
        assertTrue(reason != null && reason.contains("controller-unpublish skipped"), String.valueOf(reason));
        assertEquals(0, bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.CONTROLLER_UNPUBLISH).count(),
                "no controller-unpublish while the orphan's mount is on the node");

        bus.succeed(orphanUnmount);
        NodeCommand unpublish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH);
        assertEquals("ext-" + node, unpublish.externalNodeId());
        bus.succeed(unpublish);
        bus.awaitStatus(orphanReleasing.requestId(), ClaimState.RELEASED);
    }
}
