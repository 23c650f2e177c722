package io.csiorchestrator.claims.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.csiorchestrator.events.CloudEventHeaders;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

/** Where the claim latency starts: the event's ce_time when sane, else the record's timestamp. */
class EventTimeTest {

    static final Instant NOW = Instant.parse("2026-01-01T12:00:00Z");
    static final Instant RECORD_TIME = NOW.minusSeconds(2);

    static ConsumerRecord<String, String> record(String ceTime, long timestamp) {
        RecordHeaders headers = new RecordHeaders();
        if (ceTime != null) {
            headers.add(CloudEventHeaders.CE_TIME, ceTime.getBytes(StandardCharsets.UTF_8));
        }
        return new ConsumerRecord<>("t", 0, 0L, timestamp, TimestampType.CREATE_TIME, 0, 0, "k", "v", headers, Optional.empty());
    }

    @Test
    void aSaneCeTimeWins() {
        Instant ce = NOW.minusSeconds(5);
        assertEquals(ce, Consumers.eventTime(record(ce.toString(), RECORD_TIME.toEpochMilli()), NOW));
    }

    @Test
    void withoutCeTimeTheRecordTimestamp() {
        assertEquals(RECORD_TIME, Consumers.eventTime(record(null, RECORD_TIME.toEpochMilli()), NOW));
    }

    @Test
    void anUnreadableFutureOrAncientCeTimeFallsBackToTheRecordTimestamp() {
        long ts = RECORD_TIME.toEpochMilli();
        assertEquals(RECORD_TIME, Consumers.eventTime(record("yesterday", ts), NOW));
        assertEquals(RECORD_TIME, Consumers.eventTime(record(NOW.plus(Duration.ofMinutes(10)).toString(), ts), NOW));
        assertEquals(RECORD_TIME, Consumers.eventTime(record(RECORD_TIME.minus(Duration.ofDays(3)).toString(), ts), NOW));
    }

    @Test
    void withNeitherNow() {
        assertEquals(NOW, Consumers.eventTime(record(null, -1L), NOW));
    }
}
