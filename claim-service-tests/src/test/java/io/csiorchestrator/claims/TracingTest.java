package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.tracing.KafkaTraceHeaders;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Trace context through Kafka: the trace of a claim-requested record continues in the node command
 * and claim-status records the outbox relay publishes (same trace id, a new span id: the relay's
 * {@code <topic> publish} span), and the trace of a mount-done continues in the claim-status it causes.
 */
@QuarkusTest
class TracingTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    static String randomHex(int bytes) {
        byte[] b = new byte[bytes];
        ThreadLocalRandom.current().nextBytes(b);
        b[0] |= 1; // never all zeros (invalid)
        return HexFormat.of().formatHex(b);
    }

    record Traceparent(String traceId, String spanId) {
        static Traceparent parse(String header) {
            assertNotNull(header, "traceparent header");
            String[] parts = header.split("-");
            assertEquals(4, parts.length, header);
            return new Traceparent(parts[1], parts[2]);
        }

        String header() {
            return "00-" + traceId + "-" + spanId + "-01";
        }
    }

    @Test
    void claimRequestedTraceContinuesInNodeCommandsAndClaimStatus() {
        String vol = bus.schedulableVolume("trace", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");

        Traceparent sent = new Traceparent(randomHex(16), randomHex(8));
        ClaimRequested write = Bus.claim("trace", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        ConsumerRecord<String, String> command;
        try (LogCapture log = LogCapture.start()) {
            bus.send(write, Map.of(KafkaTraceHeaders.TRACEPARENT, sent.header()));
            command = bus.kafka.awaitRecord(Bus.topic(Topic.NODE_COMMANDS), r -> {
                NodeCommand c = EventCodec.decode(NodeCommand.class, r.value());
                return c.volumeId().equals(vol) && c.kind() == NodeCommandKind.MOUNT;
            }, Bus.WAIT);
            // claim-service's log lines about the claim carry the trace id its claim-requested came with (an operator
            // follows one claim from the scheduler's trace into the service's logs)
            assertTrue(log.lines().stream().anyMatch(l -> l.contains(vol) && l.contains("traceId=" + sent.traceId())),
                    "a log line about volume " + vol + " in trace " + sent.traceId() + ": "
                            + log.lines().stream().filter(l -> l.contains(vol)).toList());
        }
        Traceparent onCommand = Traceparent.parse(KafkaTestClient.header(command, KafkaTraceHeaders.TRACEPARENT));
        assertEquals(sent.traceId(), onCommand.traceId(), "node-commands record continues the claim's trace");
        assertNotEquals(sent.spanId(), onCommand.spanId(), "with the relay's own publish span");

        ConsumerRecord<String, String> accepted = awaitStatusRecord(write.requestId(), ClaimState.ACCEPTED);
        Traceparent onStatus = Traceparent.parse(KafkaTestClient.header(accepted, KafkaTraceHeaders.TRACEPARENT));
        assertEquals(sent.traceId(), onStatus.traceId(), "claim-status record continues the claim's trace");
        assertNotEquals(sent.spanId(), onStatus.spanId());
        assertNotEquals(onCommand.spanId(), onStatus.spanId(), "one publish span per record");
    }

    @Test
    void mountDoneTraceContinuesInClaimStatus() {
        String vol = bus.schedulableVolume("trace", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");
        ClaimRequested write = Bus.claim("trace", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);

        Traceparent worker = new Traceparent(randomHex(16), randomHex(8));
        bus.send(new MountDone(mount.commandId(), mount.nodeId(), mount.kind(), mount.namespace(), mount.volumeId(),
                        mount.allocationId(), true, null, null, Map.of(), "/var/lib/csi/" + vol, null, Instant.now()),
                Map.of(KafkaTraceHeaders.TRACEPARENT, worker.header()));

        ConsumerRecord<String, String> ready = awaitStatusRecord(write.requestId(), ClaimState.READY);
        Traceparent onStatus = Traceparent.parse(KafkaTestClient.header(ready, KafkaTraceHeaders.TRACEPARENT));
        assertEquals(worker.traceId(), onStatus.traceId(), "claim-status ready continues the worker's mount-done trace");
        assertNotEquals(worker.spanId(), onStatus.spanId());
        assertTrue(onStatus.spanId().matches("[0-9a-f]{16}"), onStatus.spanId());
    }

    @Test
    void aCommandTheReconcilerRetriesStartsANewTrace() {
        String vol = bus.schedulableVolume("trace", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");
        Traceparent scheduler = new Traceparent(randomHex(16), randomHex(8));
        ClaimRequested write = Bus.claim("trace", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write, Map.of(KafkaTraceHeaders.TRACEPARENT, scheduler.header()));
        NodeCommand first = bus.awaitCommand(vol, NodeCommandKind.MOUNT);

        Traceparent worker = new Traceparent(randomHex(16), randomHex(8));
        bus.send(new MountDone(first.commandId(), first.nodeId(), first.kind(), first.namespace(), first.volumeId(),
                        first.allocationId(), false, "UNAVAILABLE", "plugin restarting", Map.of(), null, null, Instant.now()),
                Map.of(KafkaTraceHeaders.TRACEPARENT, worker.header()));
        NodeCommand retry = bus.awaitCommand(vol, NodeCommandKind.MOUNT); // sent by the reconciler once the backoff is over
        assertNotEquals(first.commandId(), retry.commandId());
        ConsumerRecord<String, String> record = bus.kafka.awaitRecord(Bus.topic(Topic.NODE_COMMANDS),
                r -> r.value().contains(retry.commandId()), Bus.WAIT);
        Traceparent onRetry = Traceparent.parse(KafkaTestClient.header(record, KafkaTraceHeaders.TRACEPARENT));
        assertTrue(onRetry.traceId().matches("[0-9a-f]{32}") && !onRetry.traceId().equals("0".repeat(32)), onRetry.traceId());
        assertNotEquals(scheduler.traceId(), onRetry.traceId(), "a reconciler row has no cause: a new trace");
        assertNotEquals(worker.traceId(), onRetry.traceId(), "a reconciler row has no cause: a new trace");
    }

    private ConsumerRecord<String, String> awaitStatusRecord(String requestId, ClaimState state) {
        return bus.kafka.awaitRecord(Bus.topic(Topic.CLAIM_STATUS), r -> {
            ClaimStatus s = EventCodec.decode(ClaimStatus.class, r.value());
            return s.requestId().equals(requestId) && s.state() == state;
        }, Bus.WAIT);
    }
}
