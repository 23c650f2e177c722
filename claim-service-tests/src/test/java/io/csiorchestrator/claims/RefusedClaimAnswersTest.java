package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.testkit.HostileRecords;
import io.csiorchestrator.testkit.TestIdentities;
import io.quarkus.test.junit.QuarkusTest;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 33 items 2 and 4, on the real broker and database: a claim request a known scheduler signed but claim-service
 * refused is answered {@code rejected} on claim-status with the reason (and dead-lettered with it), once, however
 * often the record is sent; a replay, an unsigned or a forged record is dead-lettered only. The record key must be the
 * body's volume ({@code key mismatch}); a value of the wrong JSON type is refused, never coerced; the signature covers
 * the value's raw bytes, so a signed request with plain mount flags (which the consumer redacts before reading) is
 * still known as the scheduler's and answered.
 */
@QuarkusTest
class RefusedClaimAnswersTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    private static IdentityKey scheduler() {
        return TestIdentities.scheduler(TestIdentities.SCHEDULER);
    }

    /** A record of claim-requested, {@code value} under {@code key} with fresh headers (ce_time {@code ceTime}), signed by {@code signer} (null: unsigned). */
    private static HostileRecords.Kind record(String name, String key, String value, Instant ceTime, IdentityKey signer,
                                              String reasonNames) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.CLAIM_REQUESTED, "/test").writeTo(headers);
        Map<String, String> ce = new LinkedHashMap<>();
        headers.forEach(h -> ce.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
        ce.put(CloudEventHeaders.CE_TIME, ceTime.toString());
        Map<String, String> all = signer == null ? ce : TestIdentities.signed(signer, key, value, ce);
        List<Header> list = new ArrayList<>();
        all.forEach((k, v) -> list.add(new RecordHeader(k, v.getBytes(StandardCharsets.UTF_8))));
        return new HostileRecords.Kind(name, key, value, list, reasonNames);
    }

    private Map<HostileRecords.Kind, RecordMetadata> send(HostileRecords.Kind... kinds) {
        return HostileRecords.send(bus.kafka, Bus.topic(Topic.CLAIM_REQUESTED), List.of(kinds));
    }

    private void assertDeadLettered(Map<HostileRecords.Kind, RecordMetadata> sent) {
        List<String> problems = HostileRecords.deadLetterProblems(bus.kafka, Bus.topic(Topic.CLAIM_REQUESTED) + "-dead-letter",
                sent, Bus.WAIT);
        assertEquals(List.of(), problems);
    }

    @Test
    void aSignedRequestOutsideTheWindowIsAnsweredRejectedOnceAndDeadLettered() {
        String node = ClaimFlowTest.unique("node-r");
        String vol = bus.schedulableVolume("ns1", "refused", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        HostileRecords.Kind stale = record("signed, 10 minutes old", vol, EventCodec.encodeToString(claim),
                Instant.now().minusSeconds(600), scheduler(), "outside window");
        HostileRecords.Kind future = record("signed, 10 minutes ahead", vol, EventCodec.encodeToString(claim),
                Instant.now().plusSeconds(600), scheduler(), "outside window");
        // the stale record twice (the same ce_id): dead-lettered twice, answered once
        assertDeadLettered(send(stale, future));
        assertDeadLettered(send(stale));
        ClaimStatus answer = bus.awaitStatus(claim.requestId(), ClaimState.REJECTED);
        assertTrue(answer.reason().contains("outside window"), answer.reason());
        assertEquals(vol, answer.volumeId());
        assertEquals("alloc-1", answer.allocationId());
        assertEquals(2, bus.statuses(claim.requestId()).size(), "one answer per refused record (stale, future): "
                + bus.statuses(claim.requestId()));

        // the request id is not taken: the same request sent correctly is handled
        bus.send(claim);
        bus.awaitStatus(claim.requestId(), ClaimState.ACCEPTED);
    }

    @Test
    void aSignedRequestThatBreaksTheContractIsAnsweredRejectedWithTheReason() {
        String node = ClaimFlowTest.unique("node-r");
        String vol = bus.schedulableVolume("ns1", "refused", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested badEnum = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        ClaimRequested wrongType = Bus.claim("ns1", vol, "alloc-2", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        ClaimRequested plainFlags = Bus.claim("ns1", vol, "alloc-3", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        ClaimRequested otherKey = Bus.claim("ns1", vol, "alloc-4", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        Instant now = Instant.now();
        Map<HostileRecords.Kind, RecordMetadata> sent = send(
                record("unknown access mode", vol, EventCodec.encodeToString(badEnum)
                        .replace("\"single-node-writer\"", "\"single-node-everything\""), now, scheduler(), "accessMode"),
                record("readOnly as a string", vol, EventCodec.encodeToString(wrongType)
                        .replace("\"readOnly\":false", "\"readOnly\":\"false\""), now, scheduler(), "readOnly"),
                record("plain mount flags", vol, EventCodec.encodeToString(plainFlags).replaceFirst(
                        "\"mountOptions\":\\{[^}]*\\}", "\"mountOptions\":{\"mountFlags\":[\"password=hunter2\"]}"),
                        now, scheduler(), "mountFlags"),
                record("key is not the body's volume", "not-" + vol, EventCodec.encodeToString(otherKey), now,
                        scheduler(), "key mismatch"));
        assertTrue(sent.keySet().stream().anyMatch(k -> k.value().contains("hunter2")), "the plain flags were sent");
        assertDeadLettered(sent);
        assertTrue(bus.awaitStatus(badEnum.requestId(), ClaimState.REJECTED).reason().contains("accessMode"));
        assertTrue(bus.awaitStatus(wrongType.requestId(), ClaimState.REJECTED).reason().contains("readOnly"));
        String flags = bus.awaitStatus(plainFlags.requestId(), ClaimState.REJECTED).reason();
        assertTrue(flags.contains("mountFlags") && !flags.contains("hunter2"), flags);
        ClaimStatus mismatch = bus.awaitStatus(otherKey.requestId(), ClaimState.REJECTED);
        assertTrue(mismatch.reason().contains("key mismatch"), mismatch.reason());
        assertEquals(vol, mismatch.volumeId());
    }

    @Test
    void unsignedForgedReplayedAndUnreadableRequestsAreDeadLetteredOnly() {
        String node = ClaimFlowTest.unique("node-r");
        String vol = bus.schedulableVolume("ns1", "refused", AccessMode.SINGLE_NODE_WRITER, node);
        ClaimRequested unsigned = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        ClaimRequested forged = Bus.claim("ns1", vol, "alloc-2", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        ClaimRequested numericVolume = Bus.claim("ns1", vol, "alloc-3", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        ClaimRequested replayed = Bus.claim("ns1", vol, "alloc-4", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        Instant now = Instant.now();
        HostileRecords.Kind first = record("replayed", vol, EventCodec.encodeToString(replayed), now, scheduler(), "replayed");
        bus.kafka.send(first.toRecord(Bus.topic(Topic.CLAIM_REQUESTED), null));
        bus.awaitStatus(replayed.requestId(), ClaimState.ACCEPTED);
        Map<HostileRecords.Kind, RecordMetadata> sent = send(
                record("unsigned, broken", vol, EventCodec.encodeToString(unsigned)
                        .replace("\"single-node-writer\"", "\"single-node-everything\""), now, null, "accessMode"),
                record("forged, broken", vol, EventCodec.encodeToString(forged)
                        .replace("\"single-node-writer\"", "\"single-node-everything\""), now,
                        TestIdentities.stranger(scheduler().principal()), "accessMode"),
                record("volumeId a number", vol, EventCodec.encodeToString(numericVolume)
                        .replace("\"volumeId\":\"" + vol + "\"", "\"volumeId\":12"), now, scheduler(), "volumeId"),
                first);
        assertDeadLettered(sent);
        assertEquals(List.of(), bus.statuses(unsigned.requestId()));
        assertEquals(List.of(), bus.statuses(forged.requestId()));
        assertEquals(List.of(), bus.statuses(numericVolume.requestId()));
        assertEquals(1, bus.statuses(replayed.requestId()).size(), "the first answer stands: " + bus.statuses(replayed.requestId()));
    }
}
