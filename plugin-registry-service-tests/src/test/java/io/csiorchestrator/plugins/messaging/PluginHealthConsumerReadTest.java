package io.csiorchestrator.plugins.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginType;
import java.time.Instant;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/** Which plugin-health records are read as reports and which are malformed (dead-lettered). */
class PluginHealthConsumerReadTest {

    private static final PluginHealth REPORT = new PluginHealth("p1", "n1", PluginType.NODE, true, null, null, null,
            List.of(), List.of(), List.of(), null, true, Instant.parse("2026-01-01T00:00:00Z"));

    private static ConsumerRecord<String, String> record(String key, String value, EventType ceType) {
        ConsumerRecord<String, String> record = new ConsumerRecord<>("plugin-health", 0, 0L, key, value);
        if (ceType != null) {
            RecordHeaders headers = new RecordHeaders();
            CloudEventHeaders.create(ceType, "/worker").writeTo(headers);
            headers.forEach(h -> record.headers().add(h));
        }
        return record;
    }

    @Test
    void readsAValidReportWithItsCloudEventsHeaders() {
        assertEquals(REPORT, PluginHealthConsumer.read(record("p1/n1", EventCodec.encodeToString(REPORT), EventType.PLUGIN_HEALTH)));
    }

    @Test
    void aValidReportWithoutCloudEventsHeadersIsMalformed() {
        MalformedEventException e = assertThrows(MalformedEventException.class,
                () -> PluginHealthConsumer.read(record("p1/n1", EventCodec.encodeToString(REPORT), null)));
        assertTrue(e.getMessage().contains("field 'header ce_type' (absent): is required"), e.getMessage());
    }

    @Test
    void aKeyThatIsNotPluginIdSlashNodeIdIsMalformed() {
        MalformedEventException e = assertThrows(MalformedEventException.class,
                () -> PluginHealthConsumer.read(record("p1", EventCodec.encodeToString(REPORT), EventType.PLUGIN_HEALTH)));
        assertEquals("malformed plugin-health event: field '(key)' 'p1': must be pluginId/nodeId 'p1/n1'", e.getMessage());
        assertThrows(MalformedEventException.class,
                () -> PluginHealthConsumer.read(record(null, EventCodec.encodeToString(REPORT), EventType.PLUGIN_HEALTH)));
    }

    @Test
    void anotherEventTypeIsMalformed() {
        MalformedEventException e = assertThrows(MalformedEventException.class,
                () -> PluginHealthConsumer.read(record("p1/n1", EventCodec.encodeToString(REPORT), EventType.NODE_EVENT)));
        assertTrue(e.getMessage().contains("field 'header ce_type' 'io.csiorchestrator.node.event.v1': must be io.csiorchestrator.plugin.health.v1"), e.getMessage());
    }

    @Test
    void aTombstoneOrGarbageIsMalformed() {
        assertTrue(assertThrows(MalformedEventException.class, () -> PluginHealthConsumer.read(record("p1/n1", null, EventType.PLUGIN_HEALTH)))
                .getMessage().contains("the record has no value"));
        assertTrue(assertThrows(MalformedEventException.class, () -> PluginHealthConsumer.read(record("p1/n1", "[1,2", EventType.PLUGIN_HEALTH)))
                .getMessage().contains("malformed plugin-health event"));
    }
}
