package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class CloudEventHeadersTest {

    @Test
    void writesAndReadsBinaryModeHeaders() {
        CloudEventHeaders ce = CloudEventHeaders.create(EventType.NODE_COMMAND, "/claim-service");
        RecordHeaders headers = new RecordHeaders();
        ce.writeTo(headers);
        assertEquals("io.csiorchestrator.node.command.v1",
                new String(headers.lastHeader("ce_type").value(), StandardCharsets.UTF_8));
        assertEquals("application/json", new String(headers.lastHeader("content-type").value(), StandardCharsets.UTF_8));
        assertEquals(ce, CloudEventHeaders.readFrom(headers));
    }

    @Test
    void rewritingReplacesInsteadOfDuplicating() {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_EVENT, "/a").writeTo(headers);
        CloudEventHeaders second = CloudEventHeaders.create(EventType.NODE_EVENT, "/b");
        second.writeTo(headers);
        int ids = 0;
        for (var h : headers.headers("ce_id")) {
            ids++;
        }
        assertEquals(1, ids);
        assertEquals(second, CloudEventHeaders.readFrom(headers));
    }

    @Test
    void everyMissingHeaderIsNamed() {
        RecordHeaders headers = new RecordHeaders();
        headers.add("ce_id", "x".getBytes(StandardCharsets.UTF_8));
        headers.add("ce_time", "not-a-time".getBytes(StandardCharsets.UTF_8));
        MalformedEventException e = assertThrows(MalformedEventException.class, () -> CloudEventHeaders.readFrom(headers));
        assertEquals(4, e.violations().size(), e.getMessage());
        assertTrue(e.getMessage().contains("header ce_type"), e.getMessage());
        assertTrue(e.getMessage().contains("'not-a-time'"), e.getMessage());
    }

    /** A valid set of headers of claim-requested, changed by {@code change}. */
    private static RecordHeaders claimHeaders(java.util.function.Consumer<RecordHeaders> change) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.CLAIM_REQUESTED, "/scheduler").writeTo(headers);
        change.accept(headers);
        return headers;
    }

    private static void set(RecordHeaders headers, String name, byte[] value) {
        headers.remove(name);
        headers.add(name, value);
    }

    @Test
    void requireValidTakesTheHeadersOurProducersWriteWithAnyOffset() {
        RecordHeaders headers = claimHeaders(h -> { });
        assertEquals(CloudEventHeaders.readFrom(headers), CloudEventHeaders.requireValid(headers, EventType.CLAIM_REQUESTED));
        RecordHeaders offset = claimHeaders(h -> set(h, "ce_time", "2026-01-31T13:00:00+01:00".getBytes(StandardCharsets.UTF_8)));
        assertEquals(java.time.Instant.parse("2026-01-31T12:00:00Z"),
                CloudEventHeaders.requireValid(offset, EventType.CLAIM_REQUESTED).time());
    }

    @Test
    void requireValidNamesTheHeaderAndItsValueForEveryBrokenRule() {
        byte[] notUtf8 = {(byte) 0xff, (byte) 0xfe};
        record Case(String header, java.util.function.Consumer<RecordHeaders> change, String shown) {
        }
        java.util.List<Case> cases = java.util.List.of(
                new Case("ce_type", h -> set(h, "ce_type", "io.evil.v1".getBytes(StandardCharsets.UTF_8)), "'io.evil.v1'"),
                new Case("ce_type", h -> set(h, "ce_type", EventType.MOUNT_DONE.cloudEventType().getBytes(StandardCharsets.UTF_8)),
                        "must be io.csiorchestrator.claim.requested.v1"),
                new Case("ce_type", h -> h.remove("ce_type"), "is required"),
                new Case("ce_specversion", h -> set(h, "ce_specversion", "0.3".getBytes(StandardCharsets.UTF_8)), "'0.3'"),
                new Case("ce_id", h -> h.remove("ce_id"), "is required"),
                new Case("ce_id", h -> set(h, "ce_id", new byte[0]), "is required"),
                new Case("ce_id", h -> set(h, "ce_id", null), "is required"),
                new Case("ce_id", h -> set(h, "ce_id", "  ".getBytes(StandardCharsets.UTF_8)), "must not be blank"),
                new Case("ce_source", h -> h.remove("ce_source"), "is required"),
                new Case("ce_source", h -> set(h, "ce_source", notUtf8), "is not UTF-8 text"),
                new Case("ce_source", h -> set(h, "ce_source", "a\u0000b".getBytes(StandardCharsets.UTF_8)), "control characters"),
                new Case("ce_source", h -> set(h, "ce_source", "s".repeat(10_000).getBytes(StandardCharsets.UTF_8)), "(10000 chars)"),
                new Case("ce_time", h -> set(h, "ce_time", "yesterday".getBytes(StandardCharsets.UTF_8)), "'yesterday'"),
                new Case("ce_time", h -> set(h, "ce_time", "2026-13-45T25:61:00Z".getBytes(StandardCharsets.UTF_8)), "RFC 3339"),
                new Case("ce_time", h -> set(h, "ce_time", "2026-01-01T10:00:00".getBytes(StandardCharsets.UTF_8)), "RFC 3339"),
                new Case("ce_time", h -> h.add("ce_time", "2026-01-01T10:00:00Z".getBytes(StandardCharsets.UTF_8)), "must be given once"));
        for (Case c : cases) {
            RecordHeaders headers = claimHeaders(c.change());
            MalformedEventException e = assertThrows(MalformedEventException.class,
                    () -> CloudEventHeaders.requireValid(headers, EventType.CLAIM_REQUESTED), c.header() + " " + c.shown());
            assertEquals(1, e.violations().size(), e.getMessage());
            assertEquals("header " + c.header(), e.violations().get(0).field(), e.getMessage());
            assertTrue(e.getMessage().contains(c.shown()), c.shown() + " in " + e.getMessage());
            assertTrue(e.getMessage().length() < 400, "cut short: " + e.getMessage().length() + " chars");
        }
    }

    @Test
    void everyEventTypeMapsBackFromItsCloudEventType() {
        for (EventType type : EventType.values()) {
            assertEquals(type, EventType.forCloudEventType(type.cloudEventType()));
            assertEquals(type, EventType.forTopic(type.topic()));
        }
    }
}
