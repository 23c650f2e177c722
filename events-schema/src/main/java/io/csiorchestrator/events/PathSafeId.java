package io.csiorchestrator.events;

import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The one validator for ids that later become path components on a node: volume, allocation,
 * node, plugin and namespace ids. An id is 1 to {@value #MAX_LENGTH} characters of
 * {@code A-Z a-z 0-9 . _ -}, starts with a letter or digit and never contains {@code ..}, so it
 * can never name a parent directory, an absolute path or a hidden file.
 */
public final class PathSafeId {

    public static final int MAX_LENGTH = 128;

    private static final Pattern ALLOWED = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");

    private PathSafeId() {
    }

    /** The problem with {@code value} as an id, or empty when it is a valid id. */
    public static Optional<String> problem(String value) {
        if (value == null) {
            return Optional.of("is required");
        }
        if (value.isEmpty()) {
            return Optional.of("must not be empty");
        }
        if (value.length() > MAX_LENGTH) {
            return Optional.of("must be at most " + MAX_LENGTH + " characters (has " + value.length() + ")");
        }
        if (value.indexOf('/') >= 0 || value.indexOf('\\') >= 0) {
            return Optional.of("must not contain a path separator");
        }
        if (value.contains("..")) {
            return Optional.of("must not contain '..'");
        }
        if (!ALLOWED.matcher(value).matches()) {
            return Optional.of("must start with a letter or digit and contain only letters, digits, '.', '_' and '-'");
        }
        return Optional.empty();
    }

    public static boolean isValid(String value) {
        return problem(value).isEmpty();
    }

    /**
     * Returns {@code value} when it is a valid id, otherwise throws an
     * {@link IllegalArgumentException} naming the field and the (quoted, shortened) value.
     */
    public static String require(String field, String value) {
        Optional<String> problem = problem(value);
        if (problem.isPresent()) {
            throw new IllegalArgumentException(describe(field, value, problem.get()));
        }
        return value;
    }

    static String describe(String field, String value, String problem) {
        return "invalid " + field + " " + Violation.quote(value) + ": " + problem;
    }
}
