package io.csiorchestrator.plugins.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import io.csiorchestrator.events.EventCodec;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The text columns that hold JSON: a list of strings (an array) and a map of strings (an object, keys sorted). */
public final class JsonColumns {

    /** What a list column is read as. */
    public static final class StringList extends TypeReference<List<String>> {
    }

    /** What a map column is read as. */
    public static final class StringMap extends TypeReference<TreeMap<String, String>> {
    }

    private static final StringList LIST = new StringList();
    private static final StringMap MAP = new StringMap();

    private JsonColumns() {
    }

    public static String ofList(List<String> values) {
        try {
            return EventCodec.mapper().writeValueAsString(values == null ? List.of() : values);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write a list of strings as JSON", e);
        }
    }

    /** {@code column}'s list; empty when the column is null or blank. */
    public static List<String> list(String column, String json) {
        return read(column, json, LIST, "a JSON array of strings", List.of());
    }

    public static String ofMap(Map<String, String> values) {
        try {
            return EventCodec.mapper().writeValueAsString(values == null ? Map.of() : new TreeMap<>(values));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write a map of strings as JSON", e);
        }
    }

    /** {@code column}'s map; empty when the column is null or blank. */
    public static Map<String, String> map(String column, String json) {
        return read(column, json, MAP, "a JSON object of strings", Map.of());
    }

    private static <T> T read(String column, String json, TypeReference<? extends T> type, String shape, T empty) {
        if (json == null || json.isBlank()) {
            return empty;
        }
        try {
            return EventCodec.mapper().readValue(json, type);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("stored " + column + " is not " + shape + ": " + e.getOriginalMessage(), e);
        }
    }
}
