package io.csiorchestrator.events;

/**
 * One problem with one field of an event: which field (a dotted path), what value it had
 * (already made safe to print) and why it is wrong.
 */
public record Violation(String field, String value, String reason) {

    private static final int MAX_SHOWN = 80;

    /** A value that must never be echoed (secrets, mount flags). */
    public static final String REDACTED = "[redacted]";

    @Override
    public String toString() {
        return "field '" + field + "' " + (value == null ? "(absent)" : value) + ": " + reason;
    }

    /** Quotes a value for an error message, shortening it and escaping control characters. */
    public static String quote(Object value) {
        if (value == null) {
            return "(absent)";
        }
        String text = String.valueOf(value);
        StringBuilder out = new StringBuilder("'");
        int shown = Math.min(text.length(), MAX_SHOWN);
        for (int i = 0; i < shown; i++) {
            char c = text.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        if (text.length() > MAX_SHOWN) {
            out.append("...(").append(text.length()).append(" chars)");
        }
        return out.append('\'').toString();
    }
}
