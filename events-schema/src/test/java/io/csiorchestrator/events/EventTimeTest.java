package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class EventTimeTest {

    static final Instant NOW = Instant.parse("2026-01-01T12:00:00Z");
    static final long RECORD = NOW.minusSeconds(2).toEpochMilli();

    static Headers ceTime(String value) {
        Headers headers = new RecordHeaders();
        if (value != null) {
            headers.add(CloudEventHeaders.CE_TIME, value.getBytes(StandardCharsets.UTF_8));
        }
        return headers;
    }

    @Test
    void aSaneCeTimeWinsWithAnyOffset() {
        assertEquals(Optional.of(NOW.minusSeconds(5)), CloudEventHeaders.eventTime(ceTime(NOW.minusSeconds(5).toString()), RECORD, NOW));
        assertEquals(Optional.of(Instant.parse("2026-01-01T11:59:00Z")),
                CloudEventHeaders.eventTime(ceTime("2026-01-01T12:59:00+01:00"), RECORD, NOW));
    }

    @Test
    void theRecordTimestampWhenCeTimeIsMissingUnreadableFutureOrAncient() {
        Optional<Instant> record = Optional.of(Instant.ofEpochMilli(RECORD));
        assertEquals(record, CloudEventHeaders.eventTime(ceTime(null), RECORD, NOW));
        assertEquals(record, CloudEventHeaders.eventTime(ceTime("yesterday"), RECORD, NOW));
        assertEquals(record, CloudEventHeaders.eventTime(ceTime(NOW.plus(Duration.ofMinutes(10)).toString()), RECORD, NOW));
        assertEquals(record, CloudEventHeaders.eventTime(ceTime(NOW.minus(Duration.ofDays(3)).toString()), RECORD, NOW));
    }

    @Test
    void noneWithoutEitherOrWithAFutureRecordTimestamp() {
        assertEquals(Optional.empty(), CloudEventHeaders.eventTime(ceTime(null), -1L, NOW));
        assertEquals(Optional.empty(), CloudEventHeaders.eventTime(ceTime(null),
                NOW.plus(Duration.ofHours(1)).toEpochMilli(), NOW));
    }
}
