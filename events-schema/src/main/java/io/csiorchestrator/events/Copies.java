package io.csiorchestrator.events;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Immutable copies that keep null elements, so validation can name them instead of failing blindly. */
final class Copies {

    private Copies() {
    }

    static <T> List<T> list(List<T> values) {
        return values == null ? List.of() : Collections.unmodifiableList(new ArrayList<>(values));
    }

    static <K, V> Map<K, V> map(Map<K, V> values) {
        return values == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(values));
    }
}
