package io.csiorchestrator.events;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/** Collects every problem of an event at once, so one error can name them all. */
public final class Violations {

    /** Printable, bounded text: no control characters. */
    private static final Pattern PRINTABLE = Pattern.compile("[^\\p{Cntrl}]*");

    private final List<Violation> found = new ArrayList<>();

    public void add(String field, Object value, String reason) {
        found.add(new Violation(field, Violation.quote(value), reason));
    }

    /** For fields whose value must never be printed. */
    public void addRedacted(String field, String reason) {
        found.add(new Violation(field, Violation.REDACTED, reason));
    }

    public boolean isEmpty() {
        return found.isEmpty();
    }

    public List<Violation> list() {
        return List.copyOf(found);
    }

    public void id(String field, String value) {
        PathSafeId.problem(value).ifPresent(problem -> add(field, value, problem));
    }

    public void optionalId(String field, String value) {
        if (value != null) {
            id(field, value);
        }
    }

    public void required(String field, Object value) {
        if (value == null) {
            add(field, null, "is required");
        }
    }

    public void text(String field, String value, int maxLength) {
        if (value == null) {
            add(field, null, "is required");
        } else {
            optionalText(field, value, maxLength);
        }
    }

    public void optionalText(String field, String value, int maxLength) {
        if (value == null) {
            return;
        }
        if (value.isBlank()) {
            add(field, value, "must not be blank");
        } else if (value.length() > maxLength) {
            add(field, value, "must be at most " + maxLength + " characters (has " + value.length() + ")");
        } else if (!PRINTABLE.matcher(value).matches()) {
            add(field, value, "must not contain control characters");
        }
    }

    public void stringMap(String field, Map<String, String> map, int maxEntries) {
        if (map.size() > maxEntries) {
            add(field, map.size() + " entries", "must have at most " + maxEntries + " entries");
        }
        map.forEach((k, v) -> {
            if (k == null || k.isBlank()) {
                add(field, k, "keys must not be blank");
            } else if (v == null) {
                add(field + "." + k, null, "must not be null");
            }
        });
    }

    public void noNullElements(String field, Collection<?> values) {
        int i = 0;
        for (Object value : values) {
            if (value == null) {
                add(field + "[" + i + "]", null, "must not be null");
            }
            i++;
        }
    }
}
