package io.csiorchestrator.claims.status;

import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.operators.multi.processors.BroadcastProcessor;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The status page's live feed: the last {@link #CAPACITY} entries (for a page that has just opened) and a hot
 * stream of new ones (its server-sent events). Fed by {@link StatusFeedReader} from claim-status, node-events and
 * plugin-status as this instance reads them from Kafka, while someone looks.
 */
@ApplicationScoped
public class LiveFeed {

    public static final int CAPACITY = 200;
    /** Entries a stream may be behind its client (see {@link #stream()}). */
    static final int STREAM_BUFFER = 1000;

    private final ArrayDeque<FeedEntry> recent = new ArrayDeque<>();
    private final BroadcastProcessor<FeedEntry> processor = BroadcastProcessor.create();
    private long sequence;

    /** Adds {@code entry} (numbered here, in order) and sends it to every open stream. */
    public synchronized void publish(FeedEntry entry) {
        FeedEntry numbered = entry.withSeq(++sequence);
        recent.addLast(numbered);
        while (recent.size() > CAPACITY) {
            recent.removeFirst();
        }
        processor.onNext(numbered);
    }

    /** Forgets the recent entries (the reader stopped; its next start reads them back). Numbers go on. */
    public synchronized void clear() {
        recent.clear();
    }

    /** The last entries, oldest first. */
    public synchronized List<FeedEntry> recent() {
        return new ArrayList<>(recent);
    }

    /**
     * New entries from now on. Each stream buffers up to {@link #STREAM_BUFFER} entries it has not taken yet: a reader's
     * start publishes its read-back at once (at most {@link #CAPACITY} entries), faster than a client takes them, and
     * without a buffer the broadcast would end the stream ("lack of requests").
     */
    public Multi<FeedEntry> stream() {
        return processor.onOverflow().buffer(STREAM_BUFFER);
    }
}
