package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.ReportedMount;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.HostileRecords;
import io.csiorchestrator.testkit.TestIdentities;
import io.quarkus.test.junit.QuarkusTest;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * No record can stop one of claim-service's channels: to each topic it consumes (claim-requested,
 * mount-done, plugin-status, node-state, node-events) the test sends every kind of {@link HostileRecords} (bad CloudEvents
 * headers, bodies that are not the event) on one partition, then a valid record on the same partition.
 * The valid record is handled (its answer arrives within {@link Bus#WAIT}) and every hostile record is
 * on {@code <topic>-dead-letter} with a reason naming its header or field. To the topics of signed records
 * (claim-requested from schedulers; mount-done, node-state, node-events from nodes) it also sends the
 * {@link HostileRecords#unauthentic} kinds (unsigned, forged, unknown key, re-signed by another principal, altered
 * header or value after signing, and for claim requests a ce_time outside the replay window), each dead-lettered
 * with its reason; and a signed claim request sent twice is dead-lettered "replayed" the second time.
 */
@QuarkusTest
class HostileRecordsTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    @Test
    void claimRequestedDeadLettersEveryHostileKindAndAnswersTheValidClaimAfterThem() {
        String node = ClaimFlowTest.unique("node-h");
        String vol = bus.schedulableVolume("ns1", "hostile", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested template = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        Map<HostileRecords.Kind, RecordMetadata> sent = sendHostile(template, EventType.MOUNT_DONE,
                List.of("requestId", "namespace", "volumeId", "allocationId", "nodeId", "mode", "accessMode", "attachmentMode"),
                List.of("namespace", "volumeId", "allocationId", "nodeId"), List.of("mode", "accessMode", "attachmentMode"),
                List.of("requestedAt"), mountDoneOf(vol, node));
        sent.putAll(sendUnauthentic(template, TestIdentities.node(node), "not a scheduler", 10));

        ClaimRequested valid = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(valid);
        bus.awaitStatus(valid.requestId(), ClaimState.ACCEPTED);
        assertAllDeadLettered(Topic.CLAIM_REQUESTED, sent);
    }

    @Test
    void mountDoneDeadLettersEveryHostileKindAndHandlesTheValidAnswerAfterThem() {
        String node = ClaimFlowTest.unique("node-h");
        String vol = bus.schedulableVolume("ns1", "hostile", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(claim);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        MountDone done = new MountDone(mount.commandId(), node, NodeCommandKind.MOUNT, "ns1", vol, "alloc-1", true, null, null,
                Map.of(), "/var/lib/csi/" + vol + "/alloc-1", null, Instant.now());
        Map<HostileRecords.Kind, RecordMetadata> sent = sendHostile(done, EventType.PLUGIN_STATUS,
                List.of("commandId", "nodeId", "kind", "namespace", "volumeId", "success", "completedAt"),
                List.of("nodeId", "namespace", "volumeId", "allocationId"), List.of("kind"), List.of("completedAt"),
                EventCodec.encodeToString(claim));
        sent.putAll(sendUnauthentic(done, TestIdentities.node(node + "-other"), "node mismatch", 0));

        bus.succeed(mount);
        bus.awaitStatus(claim.requestId(), ClaimState.READY);
        assertAllDeadLettered(Topic.MOUNT_DONE, sent);
    }

    @Test
    void pluginStatusDeadLettersEveryHostileKindAndAppliesTheValidStatusAfterThem() {
        String plugin = ClaimFlowTest.unique("plug-h");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("hostile"), plugin, AccessMode.SINGLE_NODE_WRITER);
        PluginStatus status = status(plugin);
        Map<HostileRecords.Kind, RecordMetadata> sent = sendHostile(status, EventType.CLAIM_REQUESTED,
                List.of("pluginId", "controllersHealthy", "controllersExpected", "nodesHealthy", "nodesExpected", "updatedAt"),
                List.of("pluginId"), List.of(), List.of("updatedAt"), mountDoneOf(vol, "node-a"));

        bus.send(status(plugin));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        assertAllDeadLettered(Topic.PLUGIN_STATUS, sent);
    }

    @Test
    void nodeStateDeadLettersEveryHostileKindAndHandlesTheValidReportsAfterThem() {
        String node = ClaimFlowTest.unique("node-h");
        String vol = Bus.registerVolume("ns1", ClaimFlowTest.unique("hostile"), ClaimFlowTest.unique("plug-h"),
                AccessMode.SINGLE_NODE_WRITER);
        Instant t0 = Instant.now();
        Map<HostileRecords.Kind, RecordMetadata> sent = sendHostile(nodeState(node, vol, 1, t0), EventType.PLUGIN_STATUS,
                List.of("nodeId", "sequence", "takenAt"), List.of("nodeId"), List.of(), List.of("takenAt"),
                EventCodec.encodeToString(status(ClaimFlowTest.unique("plug-h"))));
        sent.putAll(sendUnauthentic(nodeState(node, vol, 1, t0), TestIdentities.node(node + "-other"), "node mismatch", 0));

        // two valid reports a grace apart showing a mount nobody claimed: its unmount is the answer
        bus.send(nodeState(node, vol, 2, t0));
        bus.send(nodeState(node, vol, 3, t0.plusSeconds(3)));
        bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        assertAllDeadLettered(Topic.NODE_STATE, sent);
    }

    private static NodeStateReported nodeState(String node, String vol, long sequence, Instant takenAt) {
        return new NodeStateReported(node, sequence, takenAt, List.of(new NodeStateReported.VolumeState("ns1", vol, "plug",
                "ext-" + vol, ReportedMount.MOUNTED, List.of(new NodeStateReported.Publication("alloc-1",
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, ReportedMount.MOUNTED, "cmd-1")), List.of())));
    }

    @Test
    void nodeEventsDeadLettersEveryHostileKindAndStoresTheValidVolumeConditionAfterThem() {
        String node = ClaimFlowTest.unique("node-h");
        String vol = bus.schedulableVolume("ns1", "hostile", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(claim);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(claim.requestId(), ClaimState.READY);
        NodeEvent condition = new NodeEvent(node, null, NodeEventKind.VOLUME_CONDITION, "Volume condition abnormal",
                "plug", "ns1", vol, null, null, null, Map.of("condition", "abnormal", "message", "disk failing"),
                Instant.now());
        Map<HostileRecords.Kind, RecordMetadata> sent = sendHostile(condition, EventType.MOUNT_DONE,
                List.of("nodeId", "kind", "message", "occurredAt"), List.of("nodeId", "pluginId", "namespace", "volumeId"),
                List.of("kind"), List.of("occurredAt"), EventCodec.encodeToString(status("plug")));
        sent.putAll(sendUnauthentic(condition, TestIdentities.node(node + "-other"), "node mismatch", 0));

        bus.send(condition);
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> io.restassured.RestAssured.given()
                .get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("conditions[0].condition", org.hamcrest.Matchers.equalTo("abnormal")));
        assertAllDeadLettered(Topic.NODE_EVENTS, sent);
    }

    /**
     * A node acting as another (Kubernetes' NodeRestriction, issue 20 item 3): node r1's worker, connected as its own
     * Kafka principal {@code node-<r1>} (whose ACLs allow mount-done: Kafka cannot limit a principal to its own
     * records) and signing with its own key, writes a successful answer to node r2's mount command. claim-service
     * dead-letters it "node mismatch: signed by node:<r1>" and nothing changes: no READY answer, the claim not ready,
     * until r2's own answer makes it ready (once).
     */
    @Test
    void aNodeAnsweringAnotherNodesMountIsDeadLetteredNodeMismatchAndChangesNothing() {
        String node1 = ClaimFlowTest.unique("node-r1");
        String node2 = ClaimFlowTest.unique("node-r2");
        String vol = bus.schedulableVolume("ns1", "restrict", AccessMode.SINGLE_NODE_WRITER, node2);
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node2, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(claim);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        MountDone forged = new MountDone(mount.commandId(), node2, NodeCommandKind.MOUNT, "ns1", vol, "alloc-1", true, null,
                null, Map.of(), "/var/lib/csi/" + vol + "/alloc-1", null, Instant.now());
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(forged.eventType(), "/test").writeTo(headers);
        Map<String, String> ce = new LinkedHashMap<>();
        headers.forEach(h -> ce.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
        String value = EventCodec.encodeToString(forged);
        List<org.apache.kafka.common.header.Header> signed = new java.util.ArrayList<>();
        TestIdentities.signed(TestIdentities.node(node1), forged.recordKey(), value, ce).forEach((k, v) -> signed.add(
                new org.apache.kafka.common.header.internals.RecordHeader(k, v.getBytes(StandardCharsets.UTF_8))));
        HostileRecords.Kind asAnother = new HostileRecords.Kind("node-1 answers for node-2", forged.recordKey(), value, signed,
                "node mismatch: signed by node:" + node1);

        Map<HostileRecords.Kind, RecordMetadata> sent = HostileRecords.send(
                bus.writer(io.csiorchestrator.events.KafkaAccess.Principal.node(node1)), Bus.topic(Topic.MOUNT_DONE),
                List.of(asAnother));
        assertAllDeadLettered(Topic.MOUNT_DONE, sent);
        assertTrue(bus.statuses(claim.requestId()).stream().noneMatch(st -> st.state() == ClaimState.READY),
                "no READY answer for another node's mount-done");
        io.restassured.RestAssured.given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                .body("claims", org.hamcrest.Matchers.hasSize(1))
                .body("claims[0].state", org.hamcrest.Matchers.not(org.hamcrest.Matchers.equalTo("ready")));

        bus.succeed(mount);
        bus.awaitStatus(claim.requestId(), ClaimState.READY);
        assertEquals(1, bus.statuses(claim.requestId()).stream().filter(st -> st.state() == ClaimState.READY).count());
    }

    /**
     * A claim request signed by the tests' scheduler and accepted, sent again byte for byte (same ce_id, same
     * signature): the copy is dead-lettered "replayed" and the request is answered accepted once.
     */
    @Test
    void claimRequestedReplayIsDeadLetteredAndAnsweredOnce() {
        String node = ClaimFlowTest.unique("node-h");
        String vol = bus.schedulableVolume("ns1", "replay", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(claim.eventType(), "/test").writeTo(headers);
        Map<String, String> ce = new LinkedHashMap<>();
        headers.forEach(h -> ce.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
        String value = EventCodec.encodeToString(claim);
        Map<String, String> signed = TestIdentities.signed(Bus.signer(claim), claim.recordKey(), value, ce);
        List<org.apache.kafka.common.header.Header> list = new java.util.ArrayList<>();
        signed.forEach((k, v) -> list.add(new org.apache.kafka.common.header.internals.RecordHeader(k,
                v.getBytes(StandardCharsets.UTF_8))));
        HostileRecords.Kind replay = new HostileRecords.Kind("replayed", claim.recordKey(), value, list, "replayed");

        bus.kafka.send(replay.toRecord(Bus.topic(Topic.CLAIM_REQUESTED), null));
        bus.awaitStatus(claim.requestId(), ClaimState.ACCEPTED);
        Map<HostileRecords.Kind, RecordMetadata> sent = HostileRecords.send(bus.kafka, Bus.topic(Topic.CLAIM_REQUESTED),
                List.of(replay));
        assertAllDeadLettered(Topic.CLAIM_REQUESTED, sent);
        assertEquals(1, bus.statuses(claim.requestId()).stream().filter(st -> st.state() == ClaimState.ACCEPTED).count());
    }

    /** Sends {@link HostileRecords#unauthentic} kinds made from {@code valid} (signed by its rightful key) to its topic. */
    private Map<HostileRecords.Kind, RecordMetadata> sendUnauthentic(ContractEvent valid,
                                                                     io.csiorchestrator.events.identity.IdentityKey otherTrusted,
                                                                     String otherReason, long staleMinutes) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(valid.eventType(), "/test").writeTo(headers);
        Map<String, String> ce = new LinkedHashMap<>();
        headers.forEach(h -> ce.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
        io.csiorchestrator.events.identity.IdentityKey signer = Bus.signer(valid);
        HostileRecords.Template template = new HostileRecords.Template(valid.recordKey(), EventCodec.encodeToString(valid), ce,
                valid.eventType().cloudEventType(), null, List.of(), List.of(), List.of(), List.of(), null);
        List<HostileRecords.Kind> kinds = HostileRecords.unauthentic(template, signer, otherTrusted,
                TestIdentities.stranger(signer.principal()), otherReason, staleMinutes);
        return HostileRecords.send(bus.kafka, Bus.topic(valid.eventType().topic()), kinds);
    }

    private static PluginStatus status(String plugin) {
        return new PluginStatus(plugin, "test.csi", "1.0", false, 0, 0, 1, 1, List.of(),
                List.of(new PluginStatus.NodeInstance("node-a", "ext-node-a", 10L, Map.of(), true, "ok", Instant.now())),
                Instant.now());
    }

    private static String mountDoneOf(String vol, String node) {
        return EventCodec.encodeToString(new MountDone("cmd-other", node, NodeCommandKind.UNMOUNT, "ns1", vol, "alloc-1", true,
                null, null, Map.of(), null, null, Instant.now()));
    }

    /** Sends every hostile kind made from {@code valid} to its topic, keyed like it. */
    private Map<HostileRecords.Kind, RecordMetadata> sendHostile(ContractEvent valid, EventType other, List<String> required,
                                                                 List<String> ids, List<String> enums, List<String> times,
                                                                 String otherBody) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(valid.eventType(), "/test").writeTo(headers);
        Map<String, String> ce = new LinkedHashMap<>();
        headers.forEach(h -> ce.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
        HostileRecords.Template template = new HostileRecords.Template(valid.recordKey(), EventCodec.encodeToString(valid), ce,
                valid.eventType().cloudEventType(), other.cloudEventType(), required, ids, enums, times, otherBody);
        List<HostileRecords.Kind> kinds = HostileRecords.of(template);
        assertTrue(kinds.size() >= 50, kinds.size() + " kinds");
        return HostileRecords.send(bus.kafka, Bus.topic(valid.eventType().topic()), kinds);
    }

    private void assertAllDeadLettered(Topic topic, Map<HostileRecords.Kind, RecordMetadata> sent) {
        List<String> problems = HostileRecords.deadLetterProblems(bus.kafka, Bus.topic(topic) + "-dead-letter", sent, Bus.WAIT);
        assertEquals(List.of(), problems, problems.size() + " of " + sent.size() + " hostile " + topic.baseName()
                + " records not dead-lettered with their reason");
    }
}
