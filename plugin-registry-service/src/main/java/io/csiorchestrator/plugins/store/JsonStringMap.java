package io.csiorchestrator.plugins.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import io.csiorchestrator.events.EventCodec;
import jakarta.persistence.AttributeConverter;
import jakarta.persistence.Converter;
import java.util.Map;
import java.util.TreeMap;

/** A map of strings kept as a JSON object (keys sorted) in a text column. */
@Converter
public class JsonStringMap implements AttributeConverter<Map<String, String>, String> {

    private static final TypeReference<TreeMap<String, String>> TYPE = new TypeReference<>() {
    };

    @Override
    public String convertToDatabaseColumn(Map<String, String> values) {
        try {
            return EventCodec.mapper().writeValueAsString(values == null ? Map.of() : new TreeMap<>(values));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write a map of strings as JSON", e);
        }
    }

    @Override
    public Map<String, String> convertToEntityAttribute(String json) {
        if (json == null || json.isBlank()) {
            return Map.of();
        }
        try {
            return EventCodec.mapper().readValue(json, TYPE);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("stored map is not a JSON object of strings: " + e.getOriginalMessage(), e);
        }
    }
}
