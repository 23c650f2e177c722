package io.csiorchestrator.claims.status;

import io.csiorchestrator.claims.KafkaTopics;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.Topic;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * The status page's Kafka reader: claim-status, node-events and plugin-status, read only while someone looks (issue 36,
 * nothing busy while idle). An open event stream ({@code /v1/status/events}: the page, {@code ./csi volume status -w})
 * or a read of the recent entries starts it; {@code csi.claims.status-feed.linger} after the last stream closed it stops. At each start it
 * reads back the last {@link #BACKLOG} records of every partition, so an opening page shows what happened just before,
 * then follows the topics' ends. No consumer group: its partitions are assigned by hand, so it joins nothing, sends no
 * heartbeats and commits nothing, and every claim-service instance shows every event. A record that breaks the contract
 * is skipped ({@link FeedEntries}); the topics' real consumers dead-letter it.
 */
@ApplicationScoped
public class StatusFeedReader {

    private static final Logger LOG = Logger.getLogger(StatusFeedReader.class);

    /** Records read back per partition at each start, for an opening page (the feed keeps {@link LiveFeed#CAPACITY}). */
    static final int BACKLOG = 50;
    /** A read of the recent entries waits at most this long for the read-back (a broker that is away: what is there). */
    static final Duration CATCH_UP_WAIT = Duration.ofSeconds(5);
    /** One poll's wait: a record ends it at once; the loop only wakes this often to see whether it should stop. */
    private static final Duration POLL = Duration.ofSeconds(1);
    private static final List<Topic> TOPICS = List.of(Topic.CLAIM_STATUS, Topic.NODE_EVENTS, Topic.PLUGIN_STATUS);

    @Inject
    LiveFeed feed;
    @Inject
    KafkaTopics topics;
    @Inject
    KafkaClientSecurity security;
    @ConfigProperty(name = "kafka.bootstrap.servers", defaultValue = "localhost:9092")
    String bootstrapServers;
    @Inject
    io.csiorchestrator.claims.ClaimSettings settings;

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "csi-status-feed-linger");
        t.setDaemon(true);
        return t;
    });
    private int listeners;
    private Run run;
    private ScheduledFuture<?> stopAt;

    /** A stream subscribed: the reader runs (started if needed) until {@link #left()} and the linger after it. */
    public synchronized void joined() {
        listeners++;
        cancelStop();
        ensureRunning();
    }

    /** A stream ended (closed by its client, failed or completed). */
    public synchronized void left() {
        listeners = Math.max(0, listeners - 1);
        if (listeners == 0) {
            scheduleStop();
        }
    }

    /**
     * A read of the recent entries: the reader runs (for the linger after its read-back if nobody streams), and the
     * returned stage completes once the read-back of its start is done, or at once if it was done before. The linger
     * counts from the read-back, not from the read: a read-back slower than the linger (a loaded machine, 1 s in
     * tests) was cut by the stop, and the read answered without it.
     */
    public synchronized CompletableFuture<Void> touched() {
        Run r = ensureRunning();
        cancelStop();
        r.caughtUp.whenComplete((done, failure) -> lingerAfterReadBack(r));
        return r.caughtUp;
    }

    private synchronized void lingerAfterReadBack(Run r) {
        if (listeners == 0 && run == r) {
            scheduleStop();
        }
    }

    /** Whether the reader runs now (for tests and the count of what is busy). */
    public synchronized boolean running() {
        return run != null;
    }

    @PreDestroy
    synchronized void close() {
        timer.shutdownNow();
        if (run != null) {
            run.stop();
            run = null;
        }
    }

    private Run ensureRunning() {
        if (run == null) {
            run = new Run();
            run.start();
        }
        return run;
    }

    private void scheduleStop() {
        cancelStop();
        stopAt = timer.schedule(this::stopIfUnused, settings.statusFeed().linger().toMillis(), TimeUnit.MILLISECONDS);
    }

    private void cancelStop() {
        if (stopAt != null) {
            stopAt.cancel(false);
            stopAt = null;
        }
    }

    private synchronized void stopIfUnused() {
        if (listeners > 0 || run == null) {
            return;
        }
        run.stop();
        run = null;
        // the next start reads the last records back again: what is kept now would be shown twice
        feed.clear();
        LOG.debug("status feed reader stopped: nobody listens");
    }

    /** One start-to-stop of the reader: its consumer and thread. */
    private final class Run {
        final CompletableFuture<Void> caughtUp = new CompletableFuture<>();
        private volatile boolean stopped;
        private volatile KafkaConsumer<String, String> consumer;

        void start() {
            Thread t = new Thread(this::loop, "csi-status-feed");
            t.setDaemon(true);
            t.start();
        }

        void stop() {
            stopped = true;
            KafkaConsumer<String, String> c = consumer;
            if (c != null) {
                c.wakeup();
            }
            caughtUp.complete(null);
        }

        private void loop() {
            Properties props = security.applyTo(new Properties());
            props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            props.put(ConsumerConfig.CLIENT_ID_CONFIG, "claim-service-status-feed");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer())) {
                consumer = c;
                if (stopped) {
                    return;
                }
                Map<TopicPartition, Long> ends = assignFromBacklog(c);
                List<ConsumerRecord<String, String>> backlog = new ArrayList<>();
                boolean backlogDone = ends.isEmpty();
                if (backlogDone) {
                    caughtUp.complete(null);
                }
                while (!stopped) {
                    for (ConsumerRecord<String, String> record : c.poll(POLL)) {
                        if (backlogDone) {
                            publish(record);
                        } else {
                            backlog.add(record);
                        }
                    }
                    if (!backlogDone && reached(c, ends)) {
                        // the read-back in time order across the three topics, as the page shows it
                        backlog.sort(Comparator.comparingLong(ConsumerRecord::timestamp));
                        // the feed keeps the last CAPACITY entries: older ones of the read-back would only pass through
                        backlog.subList(0, Math.max(0, backlog.size() - LiveFeed.CAPACITY)).clear();
                        backlog.forEach(this::publish);
                        backlog.clear();
                        backlogDone = true;
                        caughtUp.complete(null);
                    }
                }
            } catch (WakeupException e) {
                // stopped
            } catch (RuntimeException e) {
                LOG.warnf("status feed reader failed (%s); it starts again with the next listener", e.toString());
                synchronized (StatusFeedReader.this) {
                    if (run == this) {
                        run = null;
                    }
                }
            } finally {
                caughtUp.complete(null);
            }
        }

        private Map<TopicPartition, Long> assignFromBacklog(KafkaConsumer<String, String> c) {
            List<TopicPartition> all = new ArrayList<>();
            for (Topic topic : TOPICS) {
                List<PartitionInfo> infos = c.partitionsFor(topics.name(topic), Duration.ofSeconds(10));
                if (infos != null) {
                    infos.forEach(p -> all.add(new TopicPartition(p.topic(), p.partition())));
                }
            }
            c.assign(all);
            Map<TopicPartition, Long> begins = c.beginningOffsets(all, Duration.ofSeconds(10));
            Map<TopicPartition, Long> ends = c.endOffsets(all, Duration.ofSeconds(10));
            Map<TopicPartition, Long> toReach = new HashMap<>();
            for (TopicPartition tp : all) {
                long end = ends.getOrDefault(tp, 0L);
                long from = Math.max(begins.getOrDefault(tp, 0L), end - BACKLOG);
                c.seek(tp, from);
                if (end > from) {
                    toReach.put(tp, end);
                }
            }
            return toReach;
        }

        private boolean reached(KafkaConsumer<String, String> c, Map<TopicPartition, Long> ends) {
            for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                if (c.position(e.getKey()) < e.getValue()) {
                    return false;
                }
            }
            return true;
        }

        private void publish(ConsumerRecord<String, String> record) {
            try {
                FeedEntry entry = FeedEntries.entry(record);
                if (entry != null) {
                    feed.publish(entry);
                }
            } catch (RuntimeException e) {
                LOG.debugf("status feed: skipped a record of %s that breaks the contract (%s)", record.topic(),
                        e.getClass().getSimpleName());
            }
        }
    }
}
