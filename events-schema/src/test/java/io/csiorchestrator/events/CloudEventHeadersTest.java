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

    @Test
    void everyEventTypeMapsBackFromItsCloudEventType() {
        for (EventType type : EventType.values()) {
            assertEquals(type, EventType.forCloudEventType(type.cloudEventType()));
            assertEquals(type, EventType.forTopic(type.topic()));
        }
    }
}
