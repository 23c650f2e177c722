package io.csiorchestrator.worker.kafka;

import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
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
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jboss.logging.Logger;

/**
 * Reads this node's partition of {@code node-commands} on a dedicated thread: {@code assign()}
 * of the partition {@link NodePartitioner} gives for the node (no group rebalancing), records
 * keyed with another node skipped (a partition is shared by several nodes), malformed records sent
 * to the dead-letter topic with the reason. Commands run through the {@link VolumeSerializer} (one
 * per volume at a time, volumes concurrently); each answer goes to {@code mount-done}, and the
 * offset is committed (under a per-node group id) only up to the longest prefix of commands whose
 * answer the broker acknowledged. A redelivery after a crash is answered from the record.
 *
 * <p>Each command of this node is a CONSUMER span {@code <topic> process}, child of the trace in
 * the record's {@code traceparent}; the handler gets that span's context and the mount-done is
 * published with it. The time from taking the command to the acknowledged mount-done is the
 * {@code csi.node.command} timer. Every few seconds the thread asks the broker for the
 * partition's end offset: {@link #connectivity()} tells readiness whether the broker answers.
 */
public final class CommandConsumer implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(CommandConsumer.class);

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
    private final KafkaEventPublisher publisher;
    private final OffsetTracker tracker = new OffsetTracker();
    private final CountDownLatch stop = new CountDownLatch(1);
    private volatile KafkaConsumer<String, byte[]> consumer;
    private volatile TopicPartition assigned;
    private Thread thread;

    public CommandConsumer(String bootstrapServers, String groupId, String topic, String deadLetterTopic, String nodeId,
                           VolumeSerializer serializer, BiFunction<NodeCommand, Context, MountDone> handler,
                           KafkaEventPublisher publisher, Telemetry telemetry) {
        this.telemetry = telemetry;
        this.topic = topic;
        this.deadLetterTopic = deadLetterTopic;
        this.nodeId = nodeId;
        this.serializer = serializer;
        this.handler = handler;
        this.publisher = publisher;
        config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        config.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, "node-mount-worker-" + nodeId);
        config.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
    }

    public void start() {
        thread = new Thread(this::run, "csi-node-commands");
        thread.setDaemon(true);
        thread.start();
    }

    /** The partition this worker reads, once assigned. */
    public TopicPartition assignedPartition() {
        return assigned;
    }

    private void run() {
        long backoffMs = 200;
        while (stop.getCount() > 0) {
            try {
                if (consumer == null) {
                    consumer = new KafkaConsumer<>(config);
                }
                if (assigned == null) {
                    List<PartitionInfo> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(10));
                    if (partitions == null || partitions.isEmpty()) {
                        throw new IllegalStateException("topic " + topic + " has no partitions (does it exist?)");
                    }
                    TopicPartition tp = new TopicPartition(topic, NodePartitioner.partitionFor(nodeId, partitions.size()));
                    consumer.assign(List.of(tp));
                    assigned = tp;
                    lastBrokerContact = Instant.now();
                    lastFailure = null;
                    LOG.infof("node %s reads partition %d of %s (%d partitions)", nodeId, tp.partition(), topic,
                            partitions.size());
                }
                checkBrokerContact();
                ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, byte[]> record : records) {
                    dispatch(record);
                }
                OptionalLong commit = tracker.committable();
                if (commit.isPresent()) {
                    consumer.commitSync(Map.of(assigned, new OffsetAndMetadata(commit.getAsLong())));
                }
                backoffMs = 200;
            } catch (WakeupException e) {
                break;
            } catch (RuntimeException e) {
                lastFailure = e.getClass().getSimpleName() + ": " + e.getMessage();
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
                OptionalLong commit = tracker.committable();
                if (commit.isPresent() && assigned != null) {
                    consumer.commitSync(Map.of(assigned, new OffsetAndMetadata(commit.getAsLong())), Duration.ofSeconds(5));
                }
            } catch (RuntimeException e) {
                LOG.debugf("final commit failed: %s", e.getMessage());
            }
            consumer.close(Duration.ofSeconds(5));
        }
    }

    private void dispatch(ConsumerRecord<String, byte[]> record) {
        long offset = record.offset();
        tracker.started(offset);
        if (!nodeId.equals(record.key())) {
            tracker.completed(offset);
            return;
        }
        NodeCommand command;
        try {
            command = EventCodec.decode(NodeCommand.class, record.value());
        } catch (MalformedEventException e) {
            Span span = telemetry.tracing().startProcess(record);
            span.setStatus(StatusCode.ERROR, "malformed node command sent to " + deadLetterTopic);
            span.end();
            LOG.warnf("malformed node command at %s-%d@%d sent to %s: %s", record.topic(), record.partition(), offset,
                    deadLetterTopic, e.getMessage());
            ProducerRecord<String, byte[]> dead = new ProducerRecord<>(deadLetterTopic, null, record.key(), record.value(),
                    record.headers());
            dead.headers().add(DeadLetters.REASON, bytes(e.getMessage()));
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

    /** Asks the broker for the partition's end offset every 5 s: proof the consumer reaches it. */
    private void checkBrokerContact() {
        long now = System.nanoTime();
        if (now - nextContactCheckNanos < 0) {
            return;
        }
        nextContactCheckNanos = now + Duration.ofSeconds(5).toNanos();
        try {
            consumer.endOffsets(List.of(assigned), Duration.ofSeconds(3));
            lastBrokerContact = Instant.now();
            lastFailure = null;
        } catch (org.apache.kafka.common.errors.TimeoutException e) {
            lastFailure = "the broker did not answer within 3 s";
        }
    }

    /** What the consumer knows of its broker: for readiness. */
    public record Connectivity(TopicPartition partition, Instant lastBrokerContact, String lastFailure) {
        public boolean connected() {
            return partition != null && lastFailure == null && lastBrokerContact != null;
        }
    }

    public Connectivity connectivity() {
        return new Connectivity(assigned, lastBrokerContact, lastFailure);
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
