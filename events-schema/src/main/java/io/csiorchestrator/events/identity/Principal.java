package io.csiorchestrator.events.identity;

import io.csiorchestrator.events.PathSafeId;

/**
 * Who holds a key: {@code node:<id>} (one per worker), {@code scheduler:<id>} (one per upstream scheduler, the CLI
 * and the bench included), or a service ({@code claim-service}, {@code plugin-registry}). The id part is a
 * {@link PathSafeId}.
 */
public record Principal(Kind kind, String id) {

    public enum Kind {
        NODE("node:"), SCHEDULER("scheduler:"), SERVICE("");

        final String prefix;

        Kind(String prefix) {
            this.prefix = prefix;
        }
    }

    public Principal {
        PathSafeId.require("principal id", id);
    }

    public static Principal node(String nodeId) {
        return new Principal(Kind.NODE, nodeId);
    }

    public static Principal scheduler(String schedulerId) {
        return new Principal(Kind.SCHEDULER, schedulerId);
    }

    public static Principal service(String name) {
        return new Principal(Kind.SERVICE, name);
    }

    /** Parses {@code node:<id>}, {@code scheduler:<id>} or a bare service name. */
    public static Principal parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("principal is required");
        }
        if (text.startsWith(Kind.NODE.prefix)) {
            return node(text.substring(Kind.NODE.prefix.length()));
        }
        if (text.startsWith(Kind.SCHEDULER.prefix)) {
            return scheduler(text.substring(Kind.SCHEDULER.prefix.length()));
        }
        if (text.contains(":")) {
            throw new IllegalArgumentException("principal '" + text + "' is not node:<id>, scheduler:<id> or a service name");
        }
        return service(text);
    }

    @Override
    public String toString() {
        return kind.prefix + id;
    }
}
