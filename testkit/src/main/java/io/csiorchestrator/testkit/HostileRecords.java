package io.csiorchestrator.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * The hostile records every consumer of the contract must dead-letter without stopping its partition:
 * the one list each service's test sends to each topic it consumes, before a valid record that must
 * then be answered. Made from a {@link Template} (a valid record of the topic and what its fields are);
 * each {@link Kind} says which header or field the dead-letter reason must name.
 *
 * <p>Header kinds: CloudEvents headers missing, empty, duplicated, not UTF-8, with control characters,
 * too long; a foreign or another topic's {@code ce_type}; {@code ce_specversion} 0.3; a {@code ce_time}
 * that is no timestamp. Body kinds: not JSON, truncated, trailing garbage, an array, a string, a number,
 * {@code null}, empty, binary junk, nested beyond any parser's limit, another event's body, every required
 * field missing or null or of the wrong type, hostile ids ({@code ..}, {@code /}, too long, control
 * characters), unknown enum values, timestamps that are none.
 */
public final class HostileRecords {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** The dead-letter headers (the names SmallRye's dead-letter queue writes; events-schema's DeadLetters). */
    public static final String DEAD_LETTER_REASON = "dead-letter-reason";
    public static final String DEAD_LETTER_PARTITION = "dead-letter-partition";
    public static final String DEAD_LETTER_OFFSET = "dead-letter-offset";

    /** What the reason must name for a body that is not the event at all (the contract's whole-record field). */
    public static final String WHOLE_RECORD = "(record)";

    /**
     * A valid record of one topic and the shape of its body.
     *
     * @param key            the key of the valid record (every hostile record keeps it, so they share its partition)
     * @param value          the valid body (JSON object)
     * @param headers        the valid CloudEvents headers, in order (UTF-8 values)
     * @param ceType         the topic's {@code ce_type}
     * @param otherCeType    another topic's {@code ce_type}
     * @param required       top-level fields the event cannot do without
     * @param ids            top-level fields that are path-safe ids
     * @param enums          top-level fields that are enum values
     * @param times          top-level fields that are timestamps
     * @param otherEventBody a valid body of another topic's event (valid headers of this topic)
     */
    public record Template(String key, String value, Map<String, String> headers, String ceType, String otherCeType,
                           List<String> required, List<String> ids, List<String> enums, List<String> times,
                           String otherEventBody) {
        public Template {
            headers = new LinkedHashMap<>(headers);
            required = List.copyOf(required);
            ids = List.copyOf(ids);
            enums = List.copyOf(enums);
            times = List.copyOf(times);
        }
    }

    /**
     * One hostile record: its name (unique in the list), key, value (may be null), headers, and the
     * header or field name the dead-letter reason must contain.
     */
    public record Kind(String name, String key, String value, List<Header> headers, String reasonNames) {

        /** The record to send to {@code topic}, to {@code partition} (null: by key). */
        public ProducerRecord<String, String> toRecord(String topic, Integer partition) {
            return new ProducerRecord<>(topic, partition, key, value, new ArrayList<>(headers));
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private HostileRecords() {
    }

    /** Every hostile kind for the topic of {@code t}: at least 50. */
    public static List<Kind> of(Template t) {
        List<Kind> kinds = new ArrayList<>();
        headerKinds(t, kinds);
        bodyKinds(t, kinds);
        Set<String> names = new java.util.HashSet<>();
        for (Kind k : kinds) {
            if (!names.add(k.name())) {
                throw new IllegalStateException("duplicate hostile kind " + k.name());
            }
        }
        return List.copyOf(kinds);
    }

    /** Sends every kind to {@code topic}, partitioned by key (each acknowledged before the next); where each landed. */
    public static Map<Kind, RecordMetadata> send(KafkaTestClient kafka, String topic, List<Kind> kinds) {
        return send(kafka, topic, null, kinds);
    }

    /** Sends every kind to {@code partition} of {@code topic} (null: by key); where each landed. */
    public static Map<Kind, RecordMetadata> send(KafkaTestClient kafka, String topic, Integer partition, List<Kind> kinds) {
        Map<Kind, RecordMetadata> sent = new LinkedHashMap<>();
        for (Kind kind : kinds) {
            sent.put(kind, kafka.send(kind.toRecord(topic, partition)));
        }
        return sent;
    }

    /**
     * What is wrong with the dead letters of {@code sent} on {@code deadLetterTopic} (found by their
     * {@value #DEAD_LETTER_PARTITION} and {@value #DEAD_LETTER_OFFSET} headers), once every one arrived
     * or {@code wait} passed: one line per kind that is not there, or whose {@value #DEAD_LETTER_REASON}
     * does not name its header or field. Empty when every kind was dead-lettered with its reason.
     */
    public static List<String> deadLetterProblems(KafkaTestClient kafka, String deadLetterTopic,
                                                  Map<Kind, RecordMetadata> sent, Duration wait) {
        // each poll builds a map of its own and publishes it whole: a poll cut short by the timeout never leaves a
        // half-cleared map behind (which listed every kind as missing)
        java.util.concurrent.atomic.AtomicReference<Map<String, String>> last = new java.util.concurrent.atomic.AtomicReference<>(
                Map.of());
        try {
            Awaitility.await().atMost(wait).pollInterval(Duration.ofMillis(200)).until(() -> {
                Map<String, String> found = new HashMap<>();
                for (ConsumerRecord<String, String> dead : kafka.readAll(deadLetterTopic)) {
                    String partition = KafkaTestClient.header(dead, DEAD_LETTER_PARTITION);
                    String offset = KafkaTestClient.header(dead, DEAD_LETTER_OFFSET);
                    found.put(partition + "@" + offset, String.valueOf(KafkaTestClient.header(dead, DEAD_LETTER_REASON)));
                }
                last.set(found);
                return sent.values().stream().allMatch(m -> found.containsKey(m.partition() + "@" + m.offset()));
            });
        } catch (ConditionTimeoutException e) {
            // some are missing: listed below
        }
        Map<String, String> reasons = last.get();
        List<String> problems = new ArrayList<>();
        sent.forEach((kind, m) -> {
            String reason = reasons.get(m.partition() + "@" + m.offset());
            if (reason == null) {
                problems.add(kind.name() + ": not dead-lettered");
            } else if (!reason.contains(kind.reasonNames())) {
                problems.add(kind.name() + ": reason does not name " + kind.reasonNames() + ": " + reason);
            }
        });
        return problems;
    }

    /**
     * The unauthentic kinds of a record whose template value is valid (issue 20 items 3 and 5): each a well-formed
     * event that must still never take effect. {@code signer} is the key that may sign it (its node's, or a
     * scheduler's); {@code otherTrusted} a trusted key of another principal (another node, or a node for a claim
     * request); {@code stranger} a key in no trust file. Kinds: unsigned; a signature by the stranger naming the
     * signer's kid (forged); the stranger's own kid (unknown kid); re-signed whole by {@code otherTrusted} (the reason
     * names {@code otherPrincipalReason}: "node mismatch", or "not a scheduler"); a signed record whose ce_source,
     * ce_id or value was changed afterwards (altered); signed with a ce_time {@code staleMinutes} minutes old when
     * {@code staleMinutes > 0} (outside window).
     */
    public static List<Kind> unauthentic(Template t, io.csiorchestrator.events.identity.IdentityKey signer,
                                         io.csiorchestrator.events.identity.IdentityKey otherTrusted,
                                         io.csiorchestrator.events.identity.IdentityKey stranger,
                                         String otherPrincipalReason, long staleMinutes) {
        List<Kind> kinds = new ArrayList<>();
        kinds.add(new Kind("unsigned", t.key(), t.value(), validHeaders(fresh(t)), "unsigned"));
        List<Header> forged = signedHeaders(fresh(t), stranger, t.value());
        replace(forged, io.csiorchestrator.events.identity.RecordSignature.KID, signer.kid().getBytes(StandardCharsets.UTF_8));
        kinds.add(new Kind("forged: a stranger's signature naming the signer's kid", t.key(), t.value(), forged,
                "bad signature"));
        kinds.add(new Kind("signed by a key in no trust file", t.key(), t.value(), signedHeaders(fresh(t), stranger, t.value()),
                "unknown kid"));
        kinds.add(new Kind("re-signed with another principal's trusted key", t.key(), t.value(),
                signedHeaders(fresh(t), otherTrusted, t.value()), otherPrincipalReason));
        for (String name : List.of("ce_source", "ce_id", "ce_time")) {
            List<Header> altered = signedHeaders(fresh(t), signer, t.value());
            String changed = name.equals("ce_time") ? java.time.Instant.now().plusSeconds(1).toString() : "altered-" + name;
            replace(altered, name, changed.getBytes(StandardCharsets.UTF_8));
            kinds.add(new Kind("signed, then " + name + " altered", t.key(), t.value(), altered, "bad signature"));
        }
        String otherValue = t.value().replaceFirst("\\}\\s*$", ",\"injected\":true}");
        kinds.add(new Kind("signed, then the value altered", t.key(), otherValue,
                signedHeaders(fresh(t), signer, t.value()), "bad signature"));
        if (staleMinutes > 0) {
            Template stale = fresh(t);
            stale.headers().put("ce_time", java.time.Instant.now().minusSeconds(staleMinutes * 60).toString());
            kinds.add(new Kind("signed, ce_time " + staleMinutes + " minutes old", t.key(), t.value(),
                    signedHeaders(stale, signer, t.value()), "outside window"));
        }
        return List.copyOf(kinds);
    }

    /** {@code t} with a new ce_id and the current ce_time (each unauthentic kind is a record of its own). */
    private static Template fresh(Template t) {
        Map<String, String> headers = new LinkedHashMap<>(t.headers());
        headers.put("ce_id", java.util.UUID.randomUUID().toString());
        headers.put("ce_time", java.time.Instant.now().toString());
        return new Template(t.key(), t.value(), headers, t.ceType(), t.otherCeType(), t.required(), t.ids(), t.enums(),
                t.times(), t.otherEventBody());
    }

    private static List<Header> signedHeaders(Template t, io.csiorchestrator.events.identity.IdentityKey key, String value) {
        org.apache.kafka.common.header.internals.RecordHeaders headers = new org.apache.kafka.common.header.internals.RecordHeaders();
        validHeaders(t).forEach(headers::add);
        io.csiorchestrator.events.identity.RecordSignature.sign(key, t.key(), value.getBytes(StandardCharsets.UTF_8), headers);
        List<Header> list = new ArrayList<>();
        headers.forEach(list::add);
        return list;
    }

    private static void headerKinds(Template t, List<Kind> kinds) {
        kinds.add(new Kind("no CloudEvents headers", t.key(), t.value(), List.of(), "ce_type"));
        String huge = "x".repeat(100_000);
        for (String name : List.of("ce_id", "ce_type", "ce_source", "ce_specversion", "ce_time")) {
            kinds.add(header(t, name + " missing", name, h -> h.remove(name)));
            kinds.add(header(t, name + " empty", name, h -> h.put(name, "")));
            kinds.add(headerList(t, name + " null value", name, list -> replace(list, name, null)));
            kinds.add(headerList(t, name + " not UTF-8", name,
                    list -> replace(list, name, new byte[] {(byte) 0xff, (byte) 0xfe, (byte) 0xc3, 0x28})));
            kinds.add(header(t, name + " with control characters", name, h -> h.put(name, "a\u0000b\u001b[31m")));
            kinds.add(header(t, name + " 100000 characters", name, h -> h.put(name, huge)));
            kinds.add(headerList(t, name + " given twice, last one different", name,
                    list -> list.add(new RecordHeader(name, "other".getBytes(StandardCharsets.UTF_8)))));
        }
        kinds.add(header(t, "ce_type io.evil.v1", "ce_type", h -> h.put("ce_type", "io.evil.v1")));
        kinds.add(header(t, "ce_type of another topic", "ce_type", h -> h.put("ce_type", t.otherCeType())));
        kinds.add(header(t, "ce_type with a trailing space", "ce_type", h -> h.put("ce_type", t.ceType() + " ")));
        kinds.add(header(t, "ce_type in upper case", "ce_type", h -> h.put("ce_type", t.ceType().toUpperCase())));
        kinds.add(header(t, "ce_specversion 0.3", "ce_specversion", h -> h.put("ce_specversion", "0.3")));
        kinds.add(header(t, "ce_specversion 1", "ce_specversion", h -> h.put("ce_specversion", "1")));
        kinds.add(header(t, "ce_time yesterday", "ce_time", h -> h.put("ce_time", "yesterday")));
        kinds.add(header(t, "ce_time month 13 day 45", "ce_time", h -> h.put("ce_time", "2026-13-45T25:61:00Z")));
        kinds.add(header(t, "ce_time without zone", "ce_time", h -> h.put("ce_time", "2026-01-01T10:00:00")));
        kinds.add(header(t, "ce_time epoch millis", "ce_time", h -> h.put("ce_time", "1767225600000")));
        kinds.add(header(t, "ce_time year 99999999999", "ce_time", h -> h.put("ce_time", "+99999999999-01-01T00:00:00Z")));
    }

    private static void bodyKinds(Template t, List<Kind> kinds) {
        kinds.add(body(t, "body not JSON", "this is not JSON", WHOLE_RECORD));
        // Cut in the middle of a field: the reason names the field the parser was in, whichever that is.
        kinds.add(body(t, "body truncated JSON", t.value().substring(0, t.value().length() / 2), "malformed"));
        kinds.add(body(t, "body with trailing garbage", t.value() + " trailing", WHOLE_RECORD));
        kinds.add(body(t, "body a JSON array", "[" + t.value() + "]", WHOLE_RECORD));
        kinds.add(body(t, "body a JSON string", "\"" + t.key() + "\"", WHOLE_RECORD));
        kinds.add(body(t, "body a JSON number", "42", WHOLE_RECORD));
        kinds.add(body(t, "body JSON null", "null", WHOLE_RECORD));
        kinds.add(body(t, "body empty", "", WHOLE_RECORD));
        kinds.add(body(t, "body an empty object", "{}", t.required().get(0)));
        kinds.add(body(t, "body binary junk", "\u0000\u0001\u0002\ufffd\ufffd\u00ff\u007f", WHOLE_RECORD));
        kinds.add(body(t, "body nested 5000 deep", "[".repeat(5000) + "]".repeat(5000), WHOLE_RECORD));
        kinds.add(body(t, "body of another event", t.otherEventBody(), t.required().get(0)));
        for (String field : t.required()) {
            kinds.add(field(t, field + " missing", field, o -> o.remove(field)));
            kinds.add(field(t, field + " null", field, o -> o.putNull(field)));
            kinds.add(field(t, field + " an object", field, o -> o.putObject(field).put("evil", true)));
        }
        for (String field : t.ids()) {
            kinds.add(field(t, field + " ../../etc", field, o -> o.put(field, "../../etc")));
            kinds.add(field(t, field + " a/b", field, o -> o.put(field, "a/b")));
            kinds.add(field(t, field + " ..", field, o -> o.put(field, "..")));
            kinds.add(field(t, field + " 500000 characters", field, o -> o.put(field, "v".repeat(500_000))));
            kinds.add(field(t, field + " with a newline", field, o -> o.put(field, "a\nb")));
        }
        for (String field : t.enums()) {
            kinds.add(field(t, field + " unknown value", field, o -> o.put(field, "EVIL-VALUE")));
        }
        for (String field : t.times()) {
            kinds.add(field(t, field + " yesterday", field, o -> o.put(field, "yesterday")));
        }
    }

    private static Kind header(Template t, String name, String names, Consumer<Map<String, String>> change) {
        Map<String, String> headers = new LinkedHashMap<>(t.headers());
        change.accept(headers);
        List<Header> list = new ArrayList<>();
        headers.forEach((k, v) -> list.add(new RecordHeader(k, v == null ? null : v.getBytes(StandardCharsets.UTF_8))));
        return new Kind(name, t.key(), t.value(), List.copyOf(list), names);
    }

    private static Kind headerList(Template t, String name, String names, Consumer<List<Header>> change) {
        List<Header> list = validHeaders(t);
        change.accept(list);
        return new Kind(name, t.key(), t.value(), List.copyOf(list), names);
    }

    private static void replace(List<Header> list, String name, byte[] value) {
        for (int i = 0; i < list.size(); i++) {
            if (list.get(i).key().equals(name)) {
                list.set(i, new RecordHeader(name, value));
            }
        }
    }

    private static List<Header> validHeaders(Template t) {
        List<Header> list = new ArrayList<>();
        t.headers().forEach((k, v) -> list.add(new RecordHeader(k, v.getBytes(StandardCharsets.UTF_8))));
        return list;
    }

    private static Kind body(Template t, String name, String value, String names) {
        return new Kind(name, t.key(), value, List.copyOf(validHeaders(t)), names);
    }

    private static Kind field(Template t, String name, String field, Consumer<ObjectNode> change) {
        ObjectNode o;
        try {
            JsonNode node = JSON.readTree(t.value());
            o = (ObjectNode) node;
        } catch (Exception e) {
            throw new IllegalArgumentException("the template's value is not a JSON object: " + t.value(), e);
        }
        change.accept(o);
        return body(t, name, o.toString(), field);
    }
}
