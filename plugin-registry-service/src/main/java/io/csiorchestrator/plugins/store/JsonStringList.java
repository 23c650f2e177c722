package io.csiorchestrator.plugins.store;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import io.csiorchestrator.events.EventCodec;
import jakarta.persistence.AttributeConverter;
import jakarta.persistence.Converter;
import java.util.List;

/** A list of strings kept as a JSON array in a text column. */
@Converter
public class JsonStringList implements AttributeConverter<List<String>, String> {

    private static final TypeReference<List<String>> TYPE = new TypeReference<>() {
    };

    @Override
    public String convertToDatabaseColumn(List<String> values) {
        try {
            return EventCodec.mapper().writeValueAsString(values == null ? List.of() : values);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write a list of strings as JSON", e);
        }
    }

    @Override
    public List<String> convertToEntityAttribute(String json) {
        if (json == null || json.isBlank()) {
            return List.of();
        }
        try {
            return EventCodec.mapper().readValue(json, TYPE);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("stored list is not a JSON array of strings: " + e.getOriginalMessage(), e);
        }
    }
}
