package io.csiorchestrator.events;

/**
 * How a malformed record reaches its dead-letter topic ({@code <topic>-dead-letter}, see
 * {@link TopicCatalog#deadLetterName}): the original key and value unchanged, and these headers.
 * The names are those SmallRye Reactive Messaging's dead-letter-queue strategy writes, so a
 * consumer reads the same headers whichever service sent the record.
 */
public final class DeadLetters {

    /** Why the record was rejected: the {@link MalformedEventException} message. */
    public static final String REASON = "dead-letter-reason";
    /** The exception class behind the rejection. */
    public static final String CAUSE = "dead-letter-cause";
    public static final String TOPIC = "dead-letter-topic";
    public static final String PARTITION = "dead-letter-partition";
    public static final String OFFSET = "dead-letter-offset";

    private DeadLetters() {
    }
}
