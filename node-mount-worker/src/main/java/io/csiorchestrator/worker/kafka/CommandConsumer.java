package io.csiorchestrator.worker.kafka;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.worker.mount.VolumeSerializer;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.telemetry.Telemetry;
import io.csiorchestrator.worker.telemetry.WorkerTracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jboss.logging.Logger;

/**
 * Reads this node's partitions of {@code node-commands} on a dedicated thread, with {@code assign()}
 * (no group rebalancing): the partition {@link NodePartitioner} gives for the node under the topic's
 * current partition count, plus every partition for which the node's consumer group (a per-node
 * group id) has a committed offset, i.e. every partition it read before. When an operator adds
 * partitions the node's partition moves; commands already written to the old one (before a restart,
 * or by a producer whose metadata was not refreshed yet) are still answered because partitions once
 * read stay read. Every 5 s the thread re-reads the partition count from the consumer's metadata
 * (refreshed every {@code metadata.max.age.ms}, 30 s by default) and, when the node's partition under
 * the new count is not read yet, adds it to the assignment; a partition without committed offset
 * starts at the earliest offset, and its start is committed with the next commit (at most one a second,
 * {@link #COMMIT_EVERY}) so it stays in the history.
 *
 * <p>Records keyed with another node are skipped (a partition is shared by several nodes),
 * malformed records (CloudEvents headers that break {@link CloudEventHeaders#requireValid}, a value
 * that is not a valid command) sent to the dead-letter topic with the reason. Commands run through the
 * {@link VolumeSerializer} (one per volume at a time, volumes concurrently); each answer goes to
 * {@code mount-done}, and each partition's offset is committed only up to the longest prefix of its
 * commands whose answer the broker acknowledged (one {@link OffsetTracker} per partition). A
 * redelivery after a crash is answered from the record.
 *
 * <p>Each command of this node is a CONSUMER span {@code <topic> process}, child of the trace in
 * the record's {@code traceparent}; the handler gets that span's context and the mount-done is
 * published with it. The time from taking the command to the acknowledged mount-done is the
 * {@code csi.node.command} timer. Every few seconds the thread looks at how many of its fetches the broker
 * answered ({@link BrokerContact}): {@link #connectivity()} tells readiness whether the broker answers.
 */
public final class CommandConsumer implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(CommandConsumer.class);

    /** How often the consumer refreshes its metadata (and so sees new partitions) by default. */
    public static final Duration DEFAULT_METADATA_MAX_AGE = Duration.ofSeconds(30);
    /**
     * How long the broker holds a fetch while the node's partitions have nothing new (a record ends it at once, so a
     * command never waits for it): 5 s, one fetch per 5 s from an idle worker instead of two a second (issue 36).
     * Nothing else of the loop asks the broker on that connection while a fetch is held: contact is judged from the
     * answered fetches ({@link BrokerContact}), the partition count from the metadata the consumer refreshes itself.
     */
    static final Duration FETCH_WAIT = Duration.ofSeconds(5);
    /**
     * One pass of the loop waits this long for records (a record ends the wait at once; close() wakes it). It bounds
     * how late the pass after a command's answer commits its offset (a crash before that redelivers the command,
     * answered from the record) and the checks every {@link #CHECK_EVERY}: 1 s, one idle wake-up a second.
     */
    static final Duration POLL_TIMEOUT = Duration.ofSeconds(1);
    /**
     * At most one offset commit a second (issue 36): a commit per answered command was one more request an operation
     * for the broker (its request metrics, the group coordinator, the offsets log) and a synchronous round trip for
     * the loop. A crash redelivers the commands answered since the last commit, each answered again from its
     * volume's record (which keeps its last results), as it already did for the one answered just before a crash.
     */
    static final Duration COMMIT_EVERY = Duration.ofSeconds(1);
    /** How often the loop looks at its contact with the broker and at the topic's partition count. */
    public static final Duration CHECK_EVERY = Duration.ofSeconds(5);
    /**
     * No fetch answered for this long and readiness says the broker is away: two fetch waits and a check, so an idle
     * consumer whose held fetch came back just after a check is never taken for lost (was: one end-offsets request
     * unanswered within 3 s).
     */
    public static final Duration CONTACT_LOST_AFTER = FETCH_WAIT.multipliedBy(2).plus(CHECK_EVERY);

    private static final Comparator<TopicPartition> BY_PARTITION = Comparator.comparingInt(TopicPartition::partition);

    /** When the loop last committed ({@link System#nanoTime()}; its first pass commits at once). */
    private long lastCommitNanos = System.nanoTime() - COMMIT_EVERY.toNanos();
    private final Properties config;
    private final String topic;
    private final String deadLetterTopic;
    private final String nodeId;
    private final VolumeSerializer serializer;
    private final BiFunction<NodeCommand, Context, MountDone> handler;
    private final Telemetry telemetry;
    private volatile Instant lastBrokerContact;
    private volatile String lastFailure = "not connected yet";
    private long nextContactCheckNanos = System.nanoTime();
    /** Consumer thread only: whether fetches are answered (made at the assignment). */
    private BrokerContact contact;
    private final KafkaEventPublisher publisher;
    /** Consumer thread only: one tracker per partition read. */
    private final Map<TopicPartition, OffsetTracker> trackers = new HashMap<>();
    /** Consumer thread only: offsets to commit (kept until a commit succeeds). */
    private final Map<TopicPartition, OffsetAndMetadata> uncommitted = new HashMap<>();
    /** Consumer thread only: partitions read without a committed offset whose start is not committed yet. */
    private final Set<TopicPartition> startNotRecorded = new TreeSet<>(BY_PARTITION);
    private final CountDownLatch stop = new CountDownLatch(1);
    private volatile KafkaConsumer<String, byte[]> consumer;
    /** The node's partition under the partition count last seen. */
    private volatile TopicPartition assigned;
    /** Every partition read (immutable, sorted by partition). */
    private volatile Set<TopicPartition> reading = Set.of();
    private int partitionCount;
    private Thread thread;

    public CommandConsumer(String bootstrapServers, String groupId, String topic, String deadLetterTopic, String nodeId,
                           VolumeSerializer serializer, BiFunction<NodeCommand, Context, MountDone> handler,
                           KafkaEventPublisher publisher, Telemetry telemetry) {
        this(bootstrapServers, groupId, topic, deadLetterTopic, nodeId, serializer, handler, publisher, telemetry,
                DEFAULT_METADATA_MAX_AGE);
    }

    /**
     * @param metadataMaxAge how often the consumer refreshes its metadata, so how late at most it sees
     *                       partitions added to the topic (tests use a short one)
     */
    public CommandConsumer(String bootstrapServers, String groupId, String topic, String deadLetterTopic, String nodeId,
                           VolumeSerializer serializer, BiFunction<NodeCommand, Context, MountDone> handler,
                           KafkaEventPublisher publisher, Telemetry telemetry, Duration metadataMaxAge) {
        this.telemetry = telemetry;
        this.topic = topic;
        this.deadLetterTopic = deadLetterTopic;
        this.nodeId = nodeId;
        this.serializer = serializer;
        this.handler = handler;
        this.publisher = publisher;
        if (metadataMaxAge.isNegative() || metadataMaxAge.isZero()) {
            throw new IllegalArgumentException("metadataMaxAge must be positive, was " + metadataMaxAge);
        }
        config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, "node-mount-worker-" + nodeId);
        config.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        config.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, Long.toString(metadataMaxAge.toMillis()));
        config.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, Long.toString(FETCH_WAIT.toMillis()));
    }

    /** Connects with {@code security}'s settings (call before {@link #start()}). */
    public CommandConsumer withSecurity(KafkaClientSecurity security) {
        security.applyTo(config);
        return this;
    }

    public void start() {
        thread = new Thread(this::run, "csi-node-commands");
        thread.setDaemon(true);
        thread.start();
    }

    /** The node's partition under the topic's partition count last seen, once assigned. */
    public TopicPartition assignedPartition() {
        return assigned;
    }

    /** Every partition this worker reads (the node's current partition and its history), sorted; empty before. */
    public Set<TopicPartition> assignedPartitions() {
        return reading;
    }

    private void run() {
        long backoffMs = 200;
        while (stop.getCount() > 0) {
            try {
                if (consumer == null) {
                    consumer = new KafkaConsumer<>(config);
                }
                if (assigned == null) {
                    assignAtStart();
                }
                checkBrokerContact();
                recordStarts();
                ConsumerRecords<String, byte[]> records = consumer.poll(POLL_TIMEOUT);
                for (ConsumerRecord<String, byte[]> record : records) {
                    dispatch(record);
                }
                if (System.nanoTime() - lastCommitNanos >= COMMIT_EVERY.toNanos()) {
                    commit(null);
                    lastCommitNanos = System.nanoTime();
                }
                backoffMs = 200;
            } catch (WakeupException e) {
                break;
            } catch (RuntimeException e) {
                lastFailure = e.getClass().getSimpleName() + ": " + e.getMessage();
                if (contact != null) {
                    contact.loopFailed(lastFailure, goodLogins());
                }
                LOG.warnf("reading %s failed (%s); retrying in %d ms", topic, e.getMessage(), backoffMs);
                try {
                    if (stop.await(backoffMs, TimeUnit.MILLISECONDS)) {
                        break;
                    }
                } catch (InterruptedException ie) {
                    break;
                }
                backoffMs = Math.min(backoffMs * 2, 5000);
            }
        }
        if (consumer != null) {
            try {
                commit(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                LOG.debugf("final commit failed: %s", e.getMessage());
            }
            // the offsets are committed above and there is no group to leave (assign()); what close would wait for is
            // the end of the fetch session, which queues behind a held fetch (up to FETCH_WAIT): not waited for
            consumer.close(Duration.ZERO);
        }
    }

    /**
     * Assigns the node's partition under the current count plus every partition the group has a
     * committed offset for (the partitions read before, where commands for this node may wait).
     */
    private void assignAtStart() {
        List<PartitionInfo> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(10));
        if (partitions == null || partitions.isEmpty()) {
            throw new IllegalStateException("topic " + topic + " has no partitions (does it exist?)");
        }
        int count = partitions.size();
        TopicPartition node = new TopicPartition(topic, NodePartitioner.partitionFor(nodeId, count));
        Set<TopicPartition> all = new HashSet<>();
        for (PartitionInfo info : partitions) {
            all.add(new TopicPartition(topic, info.partition()));
        }
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(all, Duration.ofSeconds(10));
        Set<TopicPartition> history = new TreeSet<>(BY_PARTITION);
        committed.forEach((tp, offset) -> {
            if (offset != null) {
                history.add(tp);
            }
        });
        Set<TopicPartition> read = new TreeSet<>(BY_PARTITION);
        read.add(node);
        read.addAll(history);
        consumer.assign(read);
        trackers.clear();
        uncommitted.clear();
        startNotRecorded.clear();
        for (TopicPartition tp : read) {
            trackers.put(tp, new OffsetTracker());
            if (!history.contains(tp)) {
                startNotRecorded.add(tp);
            }
        }
        partitionCount = count;
        reading = Collections.unmodifiableSet(read);
        assigned = node;
        lastBrokerContact = Instant.now();
        lastFailure = null;
        contact = new BrokerContact(CONTACT_LOST_AFTER, System.nanoTime(), lastBrokerContact);
        if (read.size() == 1) {
            LOG.infof("node %s reads partition %d of %s (%d partitions)", nodeId, node.partition(), topic, count);
        } else {
            LOG.infof("node %s reads partition %d of %s (%d partitions) and, where it read before, partitions %s",
                    nodeId, node.partition(), topic, count, partitionNumbers(history, node));
        }
    }

    /**
     * Commits the start offset of each partition read without a committed offset (once), so the
     * partition is in the group's history after a restart even when nothing arrived there. Runs
     * before a poll: while the partition's tracker has seen no record, its position is the first
     * offset not taken yet; once it has seen one, the tracker commits.
     */
    private void recordStarts() {
        if (startNotRecorded.isEmpty()) {
            return;
        }
        for (Iterator<TopicPartition> it = startNotRecorded.iterator(); it.hasNext(); ) {
            TopicPartition tp = it.next();
            if (!trackers.get(tp).seenAny()) {
                // the position's lookup may queue behind a held fetch (FETCH_WAIT) on the broker
                uncommitted.putIfAbsent(tp, new OffsetAndMetadata(consumer.position(tp, FETCH_WAIT.plusSeconds(5))));
            }
            it.remove();
        }
    }

    /** Commits, in one request, every partition's offset that moved (or whose last commit failed). */
    private void commit(Duration timeout) {
        trackers.forEach((tp, tracker) -> {
            OptionalLong next = tracker.committable();
            if (next.isPresent()) {
                uncommitted.put(tp, new OffsetAndMetadata(next.getAsLong()));
            }
        });
        if (uncommitted.isEmpty()) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>(uncommitted);
        if (timeout == null) {
            consumer.commitSync(offsets);
        } else {
            consumer.commitSync(offsets, timeout);
        }
        uncommitted.keySet().removeAll(offsets.keySet());
    }

    private void dispatch(ConsumerRecord<String, byte[]> record) {
        long offset = record.offset();
        OffsetTracker tracker = trackers.get(new TopicPartition(record.topic(), record.partition()));
        if (tracker == null) {
            throw new IllegalStateException("record from " + record.topic() + "-" + record.partition()
                    + ", which is not read (reading " + reading + ")");
        }
        tracker.started(offset);
        if (!nodeId.equals(record.key())) {
            tracker.completed(offset);
            return;
        }
        NodeCommand command;
        try {
            CloudEventHeaders.requireValid(record.headers(), EventType.NODE_COMMAND);
            command = EventCodec.decode(NodeCommand.class, record.value());
        } catch (RuntimeException e) {
            // Malformed (headers or body), or anything else reading one record throws: dead-lettered, never a stop.
            String reason = e instanceof MalformedEventException ? e.getMessage() : "could not be read: " + e;
            Span span = telemetry.tracing().startProcess(record);
            span.setStatus(StatusCode.ERROR, "malformed node command sent to " + deadLetterTopic);
            span.end();
            LOG.warnf("malformed node command at %s-%d@%d sent to %s: %s", record.topic(), record.partition(), offset,
                    deadLetterTopic, reason);
            ProducerRecord<String, byte[]> dead = new ProducerRecord<>(deadLetterTopic, null, record.key(), record.value(),
                    record.headers());
            dead.headers().add(DeadLetters.REASON, bytes(reason));
            dead.headers().add(DeadLetters.TOPIC, bytes(record.topic()));
            dead.headers().add(DeadLetters.PARTITION, bytes(Integer.toString(record.partition())));
            dead.headers().add(DeadLetters.OFFSET, bytes(Long.toString(offset)));
            publisher.sendRaw(dead).whenComplete((ok, failure) -> tracker.completed(offset));
            return;
        }
        Span span = telemetry.tracing().startProcess(record);
        span.setAttribute("csi.node-command.kind", command.kind().wire());
        Context context = Context.root().with(span);
        long taken = System.nanoTime();
        VolumeKey key = new VolumeKey(command.namespace(), command.volumeId());
        serializer.submit(key, () -> handler.apply(command, context)).whenComplete((done, failure) -> {
            if (failure != null) {
                LOG.errorf(failure, "command %s failed unexpectedly; it runs again after a restart", command.commandId());
                WorkerTracing.end(span, failure);
                return;
            }
            if (!done.succeeded()) {
                span.setStatus(StatusCode.ERROR, done.errorCode());
            }
            publisher.send(done, context).whenComplete((ok, sendFailure) -> {
                if (sendFailure == null) {
                    telemetry.metrics().nodeCommand(command.kind(), done.succeeded(),
                            Duration.ofNanos(System.nanoTime() - taken));
                    tracker.completed(offset);
                }
                span.end();
            });
        });
    }

    /**
     * Every {@link #CHECK_EVERY}: whether the broker answered a fetch lately ({@link BrokerContact}; no request of its
     * own, see {@link #FETCH_WAIT}), then the topic's partition count in the consumer's metadata against the last one
     * seen.
     */
    private void checkBrokerContact() {
        long now = System.nanoTime();
        if (now - nextContactCheckNanos < 0) {
            return;
        }
        nextContactCheckNanos = now + CHECK_EVERY.toNanos();
        lastFailure = contact.observe(answeredFetches(), goodLogins(), now, Instant.now());
        lastBrokerContact = contact.lastAnswer();
        followPartitionCount();
    }

    /** The consumer's count of fetches the broker answered (its metric fetch-total, counted on each response). */
    private long answeredFetches() {
        return sum("consumer-fetch-manager-metrics", "fetch-total");
    }

    /** The consumer's count of logins the broker accepted, first ones and repeated ones (its network metrics). */
    private long goodLogins() {
        return sum("consumer-metrics", "successful-authentication-total", "successful-reauthentication-total");
    }

    /** The sum of the consumer's metrics {@code names} of {@code group} that are not per topic. */
    private long sum(String group, String... names) {
        List<String> wanted = List.of(names);
        long sum = 0;
        for (Map.Entry<MetricName, ? extends Metric> metric : consumer.metrics().entrySet()) {
            MetricName name = metric.getKey();
            if (wanted.contains(name.name()) && name.group().equals(group) && !name.tags().containsKey("topic")
                    && metric.getValue().metricValue() instanceof Number n) {
                sum += n.longValue();
            }
        }
        return sum;
    }

    /**
     * When the topic's partition count changed, the node's partition under the new count is read
     * too (the others stay read: commands may still wait there).
     */
    private void followPartitionCount() {
        List<PartitionInfo> partitions;
        try {
            partitions = consumer.partitionsFor(topic, Duration.ofSeconds(3));
        } catch (org.apache.kafka.common.errors.TimeoutException e) {
            LOG.debugf("partition count of %s not known within 3 s: %s", topic, e.getMessage());
            return;
        }
        if (partitions == null || partitions.isEmpty() || partitions.size() == partitionCount) {
            return;
        }
        int before = partitionCount;
        int count = partitions.size();
        TopicPartition node = new TopicPartition(topic, NodePartitioner.partitionFor(nodeId, count));
        if (reading.contains(node)) {
            LOG.infof("%s changed from %d to %d partitions: node %s reads partition %d, already read", topic, before,
                    count, nodeId, node.partition());
        } else {
            Set<TopicPartition> read = new TreeSet<>(BY_PARTITION);
            read.addAll(reading);
            read.add(node);
            consumer.assign(read);
            trackers.put(node, new OffsetTracker());
            startNotRecorded.add(node);
            reading = Collections.unmodifiableSet(read);
            LOG.infof("%s grew from %d to %d partitions: node %s now also reads partition %d (reading %s)", topic,
                    before, count, nodeId, node.partition(), partitionNumbers(read, null));
        }
        partitionCount = count;
        assigned = node;
    }

    private static List<Integer> partitionNumbers(Set<TopicPartition> partitions, TopicPartition except) {
        List<Integer> numbers = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            if (!tp.equals(except)) {
                numbers.add(tp.partition());
            }
        }
        return numbers;
    }

    /**
     * What the consumer knows of its broker: for readiness. {@code partition} is the node's
     * partition under the current count, {@code partitions} every partition read.
     */
    public record Connectivity(TopicPartition partition, Set<TopicPartition> partitions, Instant lastBrokerContact,
                               String lastFailure) {
        public Connectivity {
            partitions = partitions == null ? Set.of() : partitions;
        }

        public Connectivity(TopicPartition partition, Instant lastBrokerContact, String lastFailure) {
            this(partition, partition == null ? Set.of() : Set.of(partition), lastBrokerContact, lastFailure);
        }

        public boolean connected() {
            return partition != null && lastFailure == null && lastBrokerContact != null;
        }
    }

    public Connectivity connectivity() {
        return new Connectivity(assigned, reading, lastBrokerContact, lastFailure);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        stop.countDown();
        KafkaConsumer<String, byte[]> c = consumer;
        if (c != null) {
            c.wakeup();
        }
        if (thread != null) {
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
