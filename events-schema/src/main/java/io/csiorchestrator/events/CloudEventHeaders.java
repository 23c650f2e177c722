package io.csiorchestrator.events;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * CloudEvents 1.0 binary-mode Kafka headers, carried by every record of the contract so that
 * consumers can dedupe ({@code ce_id}) and route ({@code ce_type}) without parsing the body.
 */
public record CloudEventHeaders(String id, String type, String source, String specVersion, Instant time) {

    public static final String CE_ID = "ce_id";
    public static final String CE_TYPE = "ce_type";
    public static final String CE_SOURCE = "ce_source";
    public static final String CE_SPECVERSION = "ce_specversion";
    public static final String CE_TIME = "ce_time";
    public static final String CONTENT_TYPE = "content-type";
    public static final String SPEC_VERSION = "1.0";
    public static final String JSON = "application/json";

    /** New headers with a random id, the current time and {@code source} (e.g. {@code /claim-service}). */
    public static CloudEventHeaders create(EventType type, String source) {
        return new CloudEventHeaders(UUID.randomUUID().toString(), type.cloudEventType(), source, SPEC_VERSION, Instant.now());
    }

    /** Headers with a fixed id, e.g. one kept in an outbox so a republish carries the same id. */
    public static CloudEventHeaders withId(String id, EventType type, String source, Instant time) {
        return new CloudEventHeaders(id, type.cloudEventType(), source, SPEC_VERSION, time);
    }

    /** How far in the future a {@code ce_time} may be (clock skew between hosts) and still be believed. */
    public static final Duration CLOCK_SKEW = Duration.ofMinutes(1);
    /** How much older than its record a {@code ce_time} may be and still be believed. */
    public static final Duration MAX_CE_TIME_AGE = Duration.ofHours(1);

    /**
     * When the event of a record happened, for latency metrics: its {@code ce_time} header when present
     * and sane (RFC 3339 with any offset, not later than {@code now} by more than {@link #CLOCK_SKEW},
     * not older than the record's timestamp by more than {@link #MAX_CE_TIME_AGE}), else the record's
     * timestamp (when it has one that is not in the future); empty when neither will do.
     */
    public static Optional<Instant> eventTime(Headers headers, long recordTimestamp, Instant now) {
        Instant recordTime = recordTimestamp > 0 ? Instant.ofEpochMilli(recordTimestamp) : null;
        Header header = headers.lastHeader(CE_TIME);
        if (header != null && header.value() != null) {
            try {
                Instant ceTime = OffsetDateTime.parse(new String(header.value(), StandardCharsets.UTF_8)).toInstant();
                boolean notFuture = !ceTime.isAfter(now.plus(CLOCK_SKEW));
                boolean notAncient = !ceTime.isBefore((recordTime == null ? now : recordTime).minus(MAX_CE_TIME_AGE));
                if (notFuture && notAncient) {
                    return Optional.of(ceTime);
                }
            } catch (DateTimeParseException e) {
                // not a timestamp: the record's timestamp below
            }
        }
        if (recordTime != null && !recordTime.isAfter(now.plus(CLOCK_SKEW))) {
            return Optional.of(recordTime);
        }
        return Optional.empty();
    }

    public void writeTo(Headers headers) {
        for (String name : List.of(CE_ID, CE_TYPE, CE_SOURCE, CE_SPECVERSION, CE_TIME, CONTENT_TYPE)) {
            headers.remove(name);
        }
        headers.add(CE_ID, bytes(id));
        headers.add(CE_TYPE, bytes(type));
        headers.add(CE_SOURCE, bytes(source));
        headers.add(CE_SPECVERSION, bytes(specVersion));
        headers.add(CE_TIME, bytes(time.toString()));
        headers.add(CONTENT_TYPE, bytes(JSON));
    }

    /**
     * Reads the headers of a record; every missing or unreadable one is named in one
     * {@link MalformedEventException}.
     */
    public static CloudEventHeaders readFrom(Headers headers) {
        List<Violation> problems = new ArrayList<>();
        String id = text(headers, CE_ID, problems);
        String type = text(headers, CE_TYPE, problems);
        String source = text(headers, CE_SOURCE, problems);
        String spec = text(headers, CE_SPECVERSION, problems);
        String timeText = text(headers, CE_TIME, problems);
        Instant time = null;
        if (timeText != null) {
            try {
                time = Instant.parse(timeText);
            } catch (DateTimeParseException e) {
                problems.add(new Violation("header " + CE_TIME, Violation.quote(timeText), "is not an RFC 3339 timestamp"));
            }
        }
        if (spec != null && !SPEC_VERSION.equals(spec)) {
            problems.add(new Violation("header " + CE_SPECVERSION, Violation.quote(spec), "must be " + SPEC_VERSION));
        }
        if (!problems.isEmpty()) {
            throw new MalformedEventException("CloudEvents", problems);
        }
        return new CloudEventHeaders(id, type, source, spec, time);
    }

    private static String text(Headers headers, String name, List<Violation> problems) {
        Header header = headers.lastHeader(name);
        if (header == null || header.value() == null || header.value().length == 0) {
            problems.add(new Violation("header " + name, "(absent)", "is required"));
            return null;
        }
        return new String(header.value(), StandardCharsets.UTF_8);
    }

    private static byte[] bytes(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }
}
