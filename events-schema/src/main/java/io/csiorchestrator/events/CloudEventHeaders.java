package io.csiorchestrator.events;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
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

    /** The longest value a CloudEvents header may have. */
    public static final int MAX_HEADER_LENGTH = 256;

    /**
     * Reads the headers of a record of any contract type; every missing or unreadable one is named in
     * one {@link MalformedEventException} (the rules of {@link #requireValid}, except that any
     * {@code ce_type} is taken).
     */
    public static CloudEventHeaders readFrom(Headers headers) {
        return read(headers, null);
    }

    /**
     * The CloudEvents headers of a record of {@code expected}'s topic, checked like its body: each of
     * {@code ce_id}, {@code ce_type}, {@code ce_source}, {@code ce_specversion} and {@code ce_time}
     * present exactly once, UTF-8, not blank, without control characters, at most
     * {@value #MAX_HEADER_LENGTH} characters; {@code ce_type} is {@code expected}'s type,
     * {@code ce_specversion} is {@value #SPEC_VERSION} and {@code ce_time} an RFC 3339 timestamp with
     * its offset. Otherwise a {@link MalformedEventException} names every offending header and its
     * value (quoted and cut short: these headers carry no secrets).
     */
    public static CloudEventHeaders requireValid(Headers headers, EventType expected) {
        return read(headers, expected);
    }

    private static CloudEventHeaders read(Headers headers, EventType expected) {
        List<Violation> problems = new ArrayList<>();
        String id = text(headers, CE_ID, problems);
        String type = text(headers, CE_TYPE, problems);
        String source = text(headers, CE_SOURCE, problems);
        String spec = text(headers, CE_SPECVERSION, problems);
        String timeText = text(headers, CE_TIME, problems);
        if (type != null && expected != null && !expected.cloudEventType().equals(type)) {
            problems.add(new Violation("header " + CE_TYPE, Violation.quote(type), "must be " + expected.cloudEventType()
                    + " on " + expected.displayName()));
        }
        if (spec != null && !SPEC_VERSION.equals(spec)) {
            problems.add(new Violation("header " + CE_SPECVERSION, Violation.quote(spec), "must be " + SPEC_VERSION));
        }
        Instant time = null;
        if (timeText != null) {
            try {
                time = OffsetDateTime.parse(timeText).toInstant();
            } catch (DateTimeParseException e) {
                problems.add(new Violation("header " + CE_TIME, Violation.quote(timeText),
                        "is not an RFC 3339 timestamp with offset (e.g. 2026-01-31T12:00:00Z)"));
            }
        }
        if (!problems.isEmpty()) {
            throw new MalformedEventException(expected == null ? "CloudEvents" : expected.displayName(), problems);
        }
        return new CloudEventHeaders(id, type, source, spec, time);
    }

    /** The one value of header {@code name}, or null with its problem added. */
    private static String text(Headers headers, String name, List<Violation> problems) {
        String field = "header " + name;
        int count = 0;
        for (Header ignored : headers.headers(name)) {
            count++;
        }
        if (count > 1) {
            problems.add(new Violation(field, count + " values", "must be given once"));
            return null;
        }
        Header header = headers.lastHeader(name);
        if (header == null || header.value() == null || header.value().length == 0) {
            problems.add(new Violation(field, "(absent)", "is required"));
            return null;
        }
        String value;
        try {
            value = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(header.value())).toString();
        } catch (CharacterCodingException e) {
            problems.add(new Violation(field, "(" + header.value().length + " bytes)", "is not UTF-8 text"));
            return null;
        }
        if (value.isBlank()) {
            problems.add(new Violation(field, Violation.quote(value), "must not be blank"));
        } else if (value.length() > MAX_HEADER_LENGTH) {
            problems.add(new Violation(field, Violation.quote(value),
                    "must be at most " + MAX_HEADER_LENGTH + " characters (has " + value.length() + ")"));
        } else if (value.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            problems.add(new Violation(field, Violation.quote(value), "must not contain control characters"));
        } else {
            return value;
        }
        return null;
    }

    private static byte[] bytes(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }
}
