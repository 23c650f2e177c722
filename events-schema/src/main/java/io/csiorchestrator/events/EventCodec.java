package io.csiorchestrator.events;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import java.io.IOException;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Encodes events to JSON and decodes them back. Decoding either returns a complete, valid event
 * or throws a {@link MalformedEventException} naming every bad field and its value: unknown
 * fields are tolerated (forward compatibility), missing required fields are not.
 */
public final class EventCodec {

    /**
     * Strict types (issue 33 item 2): a JSON value of the wrong type is a violation, never coerced. Jackson's
     * defaults would read {@code "volumeId": 12} as "12", {@code "readOnly": "false"} or {@code 0} as false, {@code 3.7}
     * as 3 and a number as an epoch timestamp; every such coercion is off here, for every type and input shape.
     */
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .addModule(new JavaTimeModule())
            .addModule(new com.fasterxml.jackson.databind.module.SimpleModule("csi-strict-time")
                    .addDeserializer(java.time.Instant.class, new TextOnlyInstant()))
            .disable(com.fasterxml.jackson.databind.MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .enable(DeserializationFeature.FAIL_ON_NUMBERS_FOR_ENUMS)
            .withCoercionConfigDefaults(c -> {
                for (com.fasterxml.jackson.databind.cfg.CoercionInputShape shape
                        : com.fasterxml.jackson.databind.cfg.CoercionInputShape.values()) {
                    c.setCoercion(shape, com.fasterxml.jackson.databind.cfg.CoercionAction.Fail);
                }
                c.setAcceptBlankAsEmpty(false);
            })
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .disable(DeserializationFeature.ADJUST_DATES_TO_CONTEXT_TIME_ZONE)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private EventCodec() {
    }

    /** A timestamp is an RFC 3339 string: JavaTimeModule would read a number as seconds since the epoch. */
    private static final class TextOnlyInstant extends com.fasterxml.jackson.databind.JsonDeserializer<java.time.Instant> {
        @Override
        public java.time.Instant deserialize(com.fasterxml.jackson.core.JsonParser p,
                                             com.fasterxml.jackson.databind.DeserializationContext ctx) throws IOException {
            if (!p.hasToken(com.fasterxml.jackson.core.JsonToken.VALUE_STRING)) {
                return (java.time.Instant) ctx.handleUnexpectedToken(java.time.Instant.class, p);
            }
            return com.fasterxml.jackson.datatype.jsr310.deser.InstantDeserializer.INSTANT.deserialize(p, ctx);
        }
    }

    /** The mapper the contract uses; services may share it for their own JSON. */
    public static ObjectMapper mapper() {
        return MAPPER;
    }

    /** Encodes a valid event; an invalid one is refused, so nothing malformed is ever produced. */
    public static byte[] encode(ContractEvent event) {
        requireValid(event);
        try {
            return MAPPER.writeValueAsBytes(event);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("could not encode " + event.eventType().displayName() + ": " + e.getOriginalMessage(), e);
        }
    }

    public static String encodeToString(ContractEvent event) {
        return new String(encode(event), java.nio.charset.StandardCharsets.UTF_8);
    }

    public static ContractEvent decode(EventType type, byte[] json) {
        return decode(type.javaType(), json);
    }

    public static <T extends ContractEvent> T decode(Class<T> javaType, String json) {
        return decode(javaType, json == null ? null : json.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    public static <T extends ContractEvent> T decode(Class<T> javaType, byte[] json) {
        String name = displayName(javaType);
        if (json == null || json.length == 0) {
            throw MalformedEventException.single(name, "(record)", null, "the record has no value");
        }
        T event;
        try {
            event = MAPPER.readValue(json, javaType);
        } catch (JsonMappingException e) {
            throw new MalformedEventException(name, List.of(violationOf(e)));
        } catch (IOException e) {
            throw MalformedEventException.single(name, "(record)", null, "is not valid JSON: " + firstLine(e.getMessage()));
        }
        if (event == null) {
            throw MalformedEventException.single(name, "(record)", "null", "must be a JSON object");
        }
        requireValid(event);
        return event;
    }

    /** Throws a {@link MalformedEventException} listing every problem of {@code event}. */
    public static void requireValid(ContractEvent event) {
        Violations violations = new Violations();
        event.checkFields(violations);
        if (!violations.isEmpty()) {
            throw new MalformedEventException(event.eventType().displayName(), violations.list());
        }
    }

    private static Violation violationOf(JsonMappingException e) {
        String field = e.getPath().stream()
                .map(ref -> ref.getFieldName() != null ? ref.getFieldName() : "[" + ref.getIndex() + "]")
                .collect(Collectors.joining(".")).replace(".[", "[");
        if (field.isEmpty()) {
            field = "(record)";
        }
        Throwable cause = e instanceof ValueInstantiationException && e.getCause() != null ? e.getCause() : null;
        if (cause instanceof IllegalArgumentException) {
            return new Violation(field, "", cause.getMessage());
        }
        if (e instanceof InvalidFormatException invalid) {
            return new Violation(field, Violation.quote(invalid.getValue()),
                    "cannot be read as " + invalid.getTargetType().getSimpleName());
        }
        if (e.getCause() instanceof IllegalArgumentException iae) {
            return new Violation(field, "", iae.getMessage());
        }
        return new Violation(field, "", firstLine(e.getOriginalMessage()));
    }

    private static String displayName(Class<?> javaType) {
        for (EventType type : EventType.values()) {
            if (type.javaType() == javaType) {
                return type.displayName();
            }
        }
        return javaType.getSimpleName();
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "";
        }
        int nl = message.indexOf('\n');
        return nl < 0 ? message : message.substring(0, nl);
    }
}
