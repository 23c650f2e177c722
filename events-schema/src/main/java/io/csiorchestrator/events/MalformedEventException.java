package io.csiorchestrator.events;

import java.util.List;
import java.util.stream.Collectors;

/**
 * A record that is not a valid event of its type. Names every offending field and its value,
 * so the reason can go with the record to the dead-letter topic. Never carries a half-filled
 * event.
 */
public final class MalformedEventException extends RuntimeException {

    private final String eventType;
    private final List<Violation> violations;

    public MalformedEventException(String eventType, List<Violation> violations) {
        super("malformed " + eventType + " event: "
                + violations.stream().map(Violation::toString).collect(Collectors.joining("; ")));
        this.eventType = eventType;
        this.violations = List.copyOf(violations);
    }

    public static MalformedEventException single(String eventType, String field, Object value, String reason) {
        return new MalformedEventException(eventType, List.of(new Violation(field, Violation.quote(value), reason)));
    }

    public String eventType() {
        return eventType;
    }

    public List<Violation> violations() {
        return violations;
    }
}
