package io.csiorchestrator.claims.status;

import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.operators.multi.processors.BroadcastProcessor;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The status page's live feed: the last {@link #CAPACITY} entries (for a page that has just opened) and a hot
 * stream of new ones (its server-sent events). Fed by {@link StatusFeedConsumer} from claim-status, node-events and
 * plugin-status as this instance reads them from Kafka.
 */
@ApplicationScoped
public class LiveFeed {

    public static final int CAPACITY = 200;

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

    /** The last entries, oldest first. */
    public synchronized List<FeedEntry> recent() {
        return new ArrayList<>(recent);
    }

    /** New entries from now on. */
    public Multi<FeedEntry> stream() {
        return processor;
    }
}
