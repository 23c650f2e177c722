package io.csiorchestrator.claims.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import io.csiorchestrator.events.EventCodec;
import java.util.List;
import java.util.Map;

/** JSON text columns. */
public final class Json {

    private static final TypeReference<Map<String, String>> MAP = new TypeReference<>() {
    };
    private static final TypeReference<List<String>> LIST = new TypeReference<>() {
    };
    private static final TypeReference<java.util.TreeMap<String, Long>> LONGS = new TypeReference<>() {
    };

    private Json() {
    }

    public static String write(Object value) {
        try {
            return EventCodec.mapper().writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("could not write JSON column", e);
        }
    }

    public static Map<String, String> map(String json) {
        if (json == null || json.isBlank()) {
            return Map.of();
        }
        try {
            return EventCodec.mapper().readValue(json, MAP);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("unreadable JSON column", e);
        }
    }

    /** A JSON object of numbers, sorted by key (a new, mutable map). */
    public static java.util.TreeMap<String, Long> longs(String json) {
        if (json == null || json.isBlank()) {
            return new java.util.TreeMap<>();
        }
        try {
            return EventCodec.mapper().readValue(json, LONGS);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("unreadable JSON column", e);
        }
    }

    public static List<String> list(String json) {
        if (json == null || json.isBlank()) {
            return List.of();
        }
        try {
            return EventCodec.mapper().readValue(json, LIST);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("unreadable JSON column", e);
        }
    }
}
