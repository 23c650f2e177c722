package io.csiorchestrator.claims.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.Bus;
import io.csiorchestrator.claims.LogCapture;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.RefusingTrigger;
import io.csiorchestrator.testkit.TestIdentities;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.awaitility.Awaitility;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The records of one poll, handled together ({@link RecordBatches}), against the running claim-service, the real
 * broker and PostgreSQL. Each test sends its records in one produce request under one key
 * ({@link KafkaTestClient#sendTogether}): one partition, one record batch on the log, so one poll reads them all; the
 * log line of the transaction they shared shows they were handled together.
 */
@QuarkusTest
class RecordBatchesTest {

    static final KafkaAccess.Principal SCHEDULER = KafkaAccess.Principal.scheduler(TestIdentities.SCHEDULER);

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    /**
     * A record that cannot be read between two valid claims of its poll: dead-lettered alone with the reason; the two
     * claims are decided in one transaction and answered.
     */
    @Test
    void aPoisonRecordInAPollIsDeadLetteredAloneAndTheOthersAreDecidedInOneTransaction() {
        String vol = bus.schedulableVolume("ns1", "batch-poison", AccessMode.MULTI_NODE_MULTI_WRITER, "node-a");
        ClaimRequested first = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        ClaimRequested second = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        try (LogCapture log = LogCapture.start()) {
            List<RecordMetadata> sent = bus.writer(SCHEDULER).sendTogether(List.of(Bus.record(first, Map.of()),
                    Bus.rawRecord(Topic.CLAIM_REQUESTED, first.recordKey(), "{\"requestId\": \"poison-" + vol + "\", "),
                    Bus.record(second, Map.of())));
            bus.awaitStatus(first.requestId(), ClaimState.ACCEPTED);
            bus.awaitStatus(second.requestId(), ClaimState.ACCEPTED);

            ConsumerRecord<String, String> dead = bus.kafka.awaitRecord(DeadLetterTest.deadLetterTopic(),
                    r -> first.recordKey().equals(r.key()), Bus.WAIT);
            assertEquals(Long.toString(sent.get(1).offset()), KafkaTestClient.header(dead, DeadLetters.OFFSET),
                    "the dead letter is the poison record");
            String reason = KafkaTestClient.header(dead, DeadLetters.REASON);
            assertTrue(reason != null && reason.contains("JSON"), "reason: " + reason);
            assertEquals(1, bus.kafka.readAll(DeadLetterTest.deadLetterTopic()).stream()
                    .filter(r -> first.recordKey().equals(r.key())).count(), "only the poison record is dead-lettered");
            assertTrue(log.lines().stream().anyMatch(l -> l.contains("claim-requested batch of 2 (claim-requested "
                    + first.requestId() + " .. claim-requested " + second.requestId() + "): one transaction")),
                    "the two valid claims shared one transaction: " + batchLines(log));
        }
    }

    /**
     * Two write claims on one single-writer volume from two nodes, and the first one again (a redelivery), in one poll:
     * the second claim sees the first's uncommitted claim in the shared transaction and is rejected; the repeated
     * request is answered once.
     */
    @Test
    void twoClaimsOfOneVolumeInOnePollAreDecidedInOrderAndARepeatedRequestIsAnsweredOnce() {
        String vol = bus.schedulableVolume("ns1", "batch-order", AccessMode.SINGLE_NODE_WRITER, "node-a", "node-b");
        ClaimRequested first = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        ClaimRequested second = Bus.claim("ns1", vol, "alloc-2", "node-b", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        try (LogCapture log = LogCapture.start()) {
            bus.sendTogether(SCHEDULER, List.of(Bus.record(first, Map.of()), Bus.record(second, Map.of()),
                    Bus.record(first, Map.of())));
            bus.awaitStatus(first.requestId(), ClaimState.ACCEPTED);
            ClaimStatus rejected = bus.awaitStatus(second.requestId(), ClaimState.REJECTED);
            // the whole reason: every rejection starts with the claim's own description (which names "writer"), so
            // only the part after "rejected:" tells that the first claim of the same poll was the one in the way
            assertEquals("volume ns1/" + vol + ": write claim by allocation alloc-2 on node node-b (single-node-writer, "
                    + "file-system) rejected: access mode single-node-writer allows a single writer and allocation alloc-1"
                    + " on node node-a holds the write claim", rejected.reason(),
                    "rejected because the first claim holds the volume");
            assertTrue(log.lines().stream().anyMatch(l -> l.contains("claim-requested batch of 3 (claim-requested "
                    + first.requestId() + " .. claim-requested " + first.requestId() + "): one transaction")),
                    "the three records shared one transaction: " + batchLines(log));
            NodeCommand publish = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
            assertEquals("alloc-1", publish.allocationId());
            // nothing more comes for either: one answer each. Read only once a later claim of the same volume (same key,
            // same partition, handled after the three) is answered: claim-service handles a partition in order and the
            // outbox publishes in commit order, so a late second answer to the repeated request would be on the topic
            ClaimRequested marker = Bus.claim("ns1", vol, "alloc-3", "node-b", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
            bus.send(marker);
            bus.awaitStatus(marker.requestId(), ClaimState.REJECTED);
            assertEquals(1, bus.statuses(first.requestId()).size(), "the repeated request is answered once: " + bus.statuses(first.requestId()));
            assertEquals(1, bus.statuses(second.requestId()).size(), bus.statuses(second.requestId()).toString());
            assertEquals(1, bus.commands(vol).size(), "one mount command, for the first claim: " + bus.commands(vol));
        }
    }

    /** Two mount answers for two claims of one volume in one poll of mount-done: applied in one transaction, both ready. */
    @Test
    void twoMountAnswersOfOneVolumeInOnePollAreAppliedInOneTransaction() {
        String vol = bus.schedulableVolume("ns1", "batch-done", AccessMode.MULTI_NODE_MULTI_WRITER, "node-a");
        ClaimRequested first = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        ClaimRequested second = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(first);
        bus.send(second);
        NodeCommand a = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        NodeCommand b = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        try (LogCapture log = LogCapture.start()) {
            bus.sendTogether(KafkaAccess.Principal.node("node-a"), List.of(Bus.record(mounted(a), Map.of()),
                    Bus.record(mounted(b), Map.of())));
            bus.awaitStatus(first.requestId(), ClaimState.READY);
            bus.awaitStatus(second.requestId(), ClaimState.READY);
            assertTrue(log.lines().stream().anyMatch(l -> l.contains("mount-done batch of 2 (mount-done " + a.commandId()
                    + " .. mount-done " + b.commandId() + "): one transaction")), "one transaction: " + batchLines(log));
        }
    }

    /**
     * A valid claim whose handling fails inside the database (a trigger refuses it) between two others of its poll:
     * the shared transaction rolls back, the three are handled again one at a time, the refused one is retried for the
     * budget and dead-lettered with the reason, the other two are answered.
     */
    @Test
    void aRecordThatFailsTheSharedTransactionIsHandledAloneAndDeadLetteredWhileTheOthersTakeEffect() throws Exception {
        String vol = bus.schedulableVolume("ns1", "batch-refused", AccessMode.MULTI_NODE_MULTI_WRITER, "node-a");
        ClaimRequested before = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        ClaimRequested refused = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        ClaimRequested after = Bus.claim("ns1", vol, "alloc-3", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        try (RefusingTrigger trigger = RefusingTrigger.install(ConfigProvider.getConfig().getValue("quarkus.datasource.jdbc.url", String.class),
                "handled_requests", "INSERT", "request_id", refused.requestId(), "test trigger refuses claim-requested");
             LogCapture log = LogCapture.start()) {
            bus.sendTogether(SCHEDULER, List.of(Bus.record(before, Map.of()), Bus.record(refused, Map.of()),
                    Bus.record(after, Map.of())));
            bus.awaitStatus(before.requestId(), ClaimState.ACCEPTED);
            bus.awaitStatus(after.requestId(), ClaimState.ACCEPTED);
            ConsumerRecord<String, String> dead = bus.kafka.awaitRecord(DeadLetterTest.deadLetterTopic(),
                    r -> r.value() != null && r.value().contains(refused.requestId()), Bus.WAIT);
            assertEquals(refused, EventCodec.decode(ClaimRequested.class, dead.value()), "the record goes as it was");
            String reason = KafkaTestClient.header(dead, DeadLetters.REASON);
            assertTrue(reason != null && reason.contains("test trigger refuses claim-requested " + refused.requestId()), reason);
            assertTrue(bus.statuses(refused.requestId()).isEmpty(), "the dead-lettered claim is not answered");
            assertEquals(1, bus.statuses(before.requestId()).size(), "answered once: " + bus.statuses(before.requestId()));
            assertTrue(log.lines().stream().anyMatch(l -> l.contains("claim-requested batch of 3 (claim-requested "
                    + before.requestId() + " .. claim-requested " + after.requestId() + ")")
                    && l.contains("handling its records one at a time")), "the shared transaction failed first: " + batchLines(log));
            assertTrue(trigger.attempts() >= 3, "the shared try, then alone and again within the budget: " + trigger.attempts());
        }
    }

    /**
     * Issue 36 item 1: a record that cannot be read between the answers of two attaches (mounts that carried the
     * controller steps) in one poll: dead-lettered alone with its reason; the two answers are applied in one
     * transaction and both claims are ready, with no controller command of their own.
     */
    @Test
    void aPoisonRecordInABatchOfAttachesIsDeadLetteredAloneAndTheAttachesTakeEffect() {
        String vol = bus.schedulableVolumeWithLocalControllers("ns1", "batch-attach", AccessMode.MULTI_NODE_MULTI_WRITER,
                "node-a");
        ClaimRequested first = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        ClaimRequested second = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(first);
        bus.send(second);
        NodeCommand a = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        NodeCommand b = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertTrue(a.controllerSteps() && b.controllerSteps(), "attaches: " + a + ", " + b);
        try (LogCapture log = LogCapture.start()) {
            List<RecordMetadata> sent = bus.writer(KafkaAccess.Principal.node("node-a")).sendTogether(List.of(
                    Bus.record(mounted(a), Map.of()),
                    Bus.rawRecord(Topic.MOUNT_DONE, "node-a", "{\"commandId\": \"poison-" + vol + "\", "),
                    Bus.record(mounted(b), Map.of())));
            bus.awaitStatus(first.requestId(), ClaimState.READY);
            bus.awaitStatus(second.requestId(), ClaimState.READY);
            ConsumerRecord<String, String> dead = bus.kafka.awaitRecord(Bus.topic(Topic.MOUNT_DONE) + "-dead-letter",
                    r -> Long.toString(sent.get(1).offset()).equals(KafkaTestClient.header(r, DeadLetters.OFFSET))
                            && Integer.toString(sent.get(1).partition()).equals(KafkaTestClient.header(r, DeadLetters.PARTITION)),
                    Bus.WAIT);
            String reason = KafkaTestClient.header(dead, DeadLetters.REASON);
            assertTrue(reason != null && reason.contains("JSON"), "reason: " + reason);
            assertTrue(log.lines().stream().anyMatch(l -> l.contains("mount-done batch of 2 (mount-done " + a.commandId()
                    + " .. mount-done " + b.commandId() + "): one transaction")), "one transaction: " + batchLines(log));
        }
        assertTrue(bus.commands(vol).stream().allMatch(c -> c.kind() == NodeCommandKind.MOUNT), bus.commands(vol).toString());
    }

    private static MountDone mounted(NodeCommand c) {
        return new MountDone(c.commandId(), c.nodeId(), c.kind(), c.namespace(), c.volumeId(), c.allocationId(), true, null,
                null, Map.of(), "/var/lib/csi/" + c.volumeId() + "/" + c.allocationId(), null, Instant.now());
    }

    private static List<String> batchLines(LogCapture log) {
        return log.lines().stream().filter(l -> l.contains("batch of")).toList();
    }
}
