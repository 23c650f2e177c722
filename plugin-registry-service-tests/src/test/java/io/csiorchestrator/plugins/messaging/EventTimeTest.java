package io.csiorchestrator.plugins.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.csiorchestrator.events.CloudEventHeaders;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

/** The event time the report latency is measured from: ce_time, else the record timestamp. */
class EventTimeTest {

    private static ConsumerRecord<String, String> record(long timestamp, String ceTime) {
        RecordHeaders headers = new RecordHeaders();
        if (ceTime != null) {
            headers.add(CloudEventHeaders.CE_TIME, ceTime.getBytes(StandardCharsets.UTF_8));
        }
        return new ConsumerRecord<>("plugin-health", 0, 0L, timestamp, TimestampType.CREATE_TIME, 0, 0, "p/n", "{}",
                headers, Optional.empty());
    }

    @Test
    void ceTimeWinsWithAnyOffset() {
        assertEquals(Instant.parse("2026-11-22T06:00:00.123Z"), PluginHealthConsumer.eventTime(record(5L, "2026-11-22T06:00:00.123Z")));
        assertEquals(Instant.parse("2026-11-22T04:00:00Z"), PluginHealthConsumer.eventTime(record(5L, "2026-11-22T06:00:00+02:00")));
    }

    @Test
    void theRecordTimestampWhenCeTimeIsMissingOrUnreadable() {
        assertEquals(Instant.ofEpochMilli(1_700_000_000_000L), PluginHealthConsumer.eventTime(record(1_700_000_000_000L, null)));
        assertEquals(Instant.ofEpochMilli(1_700_000_000_000L), PluginHealthConsumer.eventTime(record(1_700_000_000_000L, "yesterday")));
    }

    @Test
    void noneWithoutEither() {
        assertNull(PluginHealthConsumer.eventTime(record(ConsumerRecord.NO_TIMESTAMP, null)));
    }
}
