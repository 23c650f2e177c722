package io.csiorchestrator.events;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The names of the contract's topics on one Kafka cluster: {@code prefix + baseName}, so several
 * installations (or tests) can share a cluster. The prefix is configured as
 * {@value #PREFIX_PROPERTY}.
 */
public final class TopicCatalog {

    public static final String PREFIX_PROPERTY = "csi.topics.prefix";
    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9._-]{0,100}");

    private final String prefix;

    public TopicCatalog(String prefix) {
        String p = prefix == null ? "" : prefix;
        if (!PREFIX.matcher(p).matches()) {
            throw new IllegalArgumentException("invalid " + PREFIX_PROPERTY + " " + Violation.quote(p)
                    + ": use at most 100 of A-Z a-z 0-9 . _ -");
        }
        this.prefix = p;
    }

    public static TopicCatalog unprefixed() {
        return new TopicCatalog("");
    }

    public String prefix() {
        return prefix;
    }

    public String name(Topic topic) {
        return prefix + topic.baseName();
    }

    public String deadLetterName(Topic topic) {
        return name(topic) + Topic.DEAD_LETTER_SUFFIX;
    }

    /** Every topic's name, with its settings, in contract order. */
    public Map<String, Topic> all() {
        Map<String, Topic> names = new LinkedHashMap<>();
        for (Topic topic : Topic.values()) {
            names.put(name(topic), topic);
        }
        return names;
    }
}
