package io.csiorchestrator.plugins.messaging;

import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.plugins.domain.RecordingWindow;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Keeps the registry's {@link RecordingWindow}: the time on which the expiry sweep measures silence.
 *
 * <p>Every {@code csi.registry.sweep-interval} it reads, in this order, the clock, the end offsets of every
 * partition of {@code plugin-health}, then the offsets the consumer group has committed (every replica's, so a
 * partition waiting for a rebalance counts as behind). When the committed offsets reach the end offsets read
 * at an instant, every report appended before that instant has been recorded: the registry is caught up to it
 * ({@link RecordingWindow#caughtUp}). While they do not (a lagging consumer, a record waiting for the database),
 * the window's end stays where it was, so reports waiting in the topic are never counted as missing. A
 * partition whose records all left the log (retention) before they were read counts as caught up.
 *
 * <p>The window closes ({@link #interrupted}) when the offsets cannot be read (Kafka unreachable) and when a
 * report cannot be recorded because the database is away; the registry starts with it closed.
 */
@ApplicationScoped
public class RecordingWatch {

    /** The Kafka client settings (service-support's KafkaSecurity); PLAINTEXT when built by hand in a test. */
    @Inject
    io.csiorchestrator.events.KafkaClientSecurity kafkaSecurity = io.csiorchestrator.events.KafkaClientSecurity.plaintext();

    private static final Logger LOG = Logger.getLogger(RecordingWatch.class);
    /** How long one read of offsets may take before the registry counts as unable to read the topic. */
    static final Duration READ_TIMEOUT = Duration.ofSeconds(5);

    @Inject
    Clock clock;
    @Inject
    TopicCatalog topics;
    @ConfigProperty(name = "kafka.bootstrap.servers", defaultValue = "localhost:9092")
    String bootstrapServers;
    @ConfigProperty(name = "mp.messaging.incoming.plugin-health.group.id", defaultValue = "plugin-registry-service")
    String groupId;

    private final AtomicReference<RecordingWindow> window = new AtomicReference<>();
    /** End offsets read at an instant the group had not caught up to yet; only the probe's thread touches it. */
    private Sample pending;
    private Admin admin;

    /** End offsets of every partition read at {@code at}, and the partitions' first offsets. */
    record Sample(Instant at, Map<TopicPartition, Long> end, Map<TopicPartition, Long> first) {
    }

    @PostConstruct
    void start() {
        window.set(RecordingWindow.startedAt(clock.instant()));
    }

    @PreDestroy
    synchronized void stop() {
        if (admin != null) {
            admin.close(Duration.ofSeconds(1));
            admin = null;
        }
    }

    /** The current window. */
    public RecordingWindow window() {
        return window.get();
    }

    /** The registry could not record a report or read the topic now: nothing expires until it has caught up again. */
    public void interrupted(String why) {
        RecordingWindow before = window.getAndUpdate(w -> w.interrupted(clock.instant()));
        if (before.recording()) {
            LOG.warnf("not counting silence of plugin instances until caught up with plugin-health again: %s", why);
        }
    }

    public synchronized void probe() {
        Sample current;
        Map<TopicPartition, Long> committed;
        try {
            current = sample();
            committed = committed();
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            interrupted("could not read the offsets of plugin-health: " + (e instanceof ExecutionException ? e.getCause() : e));
            pending = null;
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        }
        if (caughtUp(current.end(), current.first(), committed)) {
            caughtUp(current.at());
            pending = null;
        } else if (pending == null) {
            pending = current;
        } else if (caughtUp(pending.end(), current.first(), committed)) {
            caughtUp(pending.at());
            pending = current;
        }
    }

    private void caughtUp(Instant sampledAt) {
        RecordingWindow before = window.getAndUpdate(w -> w.caughtUp(sampledAt));
        if (!before.recording() && window.get().recording()) {
            LOG.infof("caught up with plugin-health as of %s: silence of plugin instances counts from then", sampledAt);
        }
    }

    /**
     * Whether the group has recorded every record before {@code end}: for each partition its committed offset
     * is at least the end offset, or no record before the end offset is left in the log.
     */
    static boolean caughtUp(Map<TopicPartition, Long> end, Map<TopicPartition, Long> first,
                            Map<TopicPartition, Long> committed) {
        for (Map.Entry<TopicPartition, Long> partition : end.entrySet()) {
            long endOffset = partition.getValue();
            if (committed.getOrDefault(partition.getKey(), -1L) < endOffset
                    && first.getOrDefault(partition.getKey(), -1L) < endOffset) {
                return false;
            }
        }
        return true;
    }

    private Sample sample() throws ExecutionException, InterruptedException, TimeoutException {
        Instant at = clock.instant();
        String topic = topics.name(Topic.PLUGIN_HEALTH);
        TopicDescription description = admin().describeTopics(java.util.List.of(topic)).allTopicNames()
                .get(READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).get(topic);
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
        description.partitions().forEach(p -> {
            latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest());
            earliest.put(new TopicPartition(topic, p.partition()), OffsetSpec.earliest());
        });
        Map<TopicPartition, Long> end = offsets(admin().listOffsets(latest));
        Map<TopicPartition, Long> first = offsets(admin().listOffsets(earliest));
        return new Sample(at, end, first);
    }

    private Map<TopicPartition, Long> committed() throws ExecutionException, InterruptedException, TimeoutException {
        Map<TopicPartition, OffsetAndMetadata> offsets = admin().listConsumerGroupOffsets(groupId)
                .partitionsToOffsetAndMetadata().get(READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        Map<TopicPartition, Long> committed = new HashMap<>();
        offsets.forEach((partition, offset) -> {
            if (offset != null) {
                committed.put(partition, offset.offset());
            }
        });
        return committed;
    }

    private static Map<TopicPartition, Long> offsets(ListOffsetsResult result)
            throws ExecutionException, InterruptedException, TimeoutException {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        result.all().get(READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .forEach((partition, info) -> offsets.put(partition, info.offset()));
        return offsets;
    }

    private Admin admin() {
        if (admin == null) {
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            kafkaSecurity.applyTo(props);
            props.put(AdminClientConfig.CLIENT_ID_CONFIG, "plugin-registry-service-catch-up");
            props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) READ_TIMEOUT.toMillis());
            props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) READ_TIMEOUT.toMillis());
            admin = Admin.create(props);
        }
        return admin;
    }
}
