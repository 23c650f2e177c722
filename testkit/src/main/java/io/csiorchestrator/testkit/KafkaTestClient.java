package io.csiorchestrator.testkit;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import io.csiorchestrator.events.KafkaClientSecurity;

/**
 * Produces and reads String records for tests, against any broker ({@link KafkaResource#broker()} by default).
 *
 * <p>Reading never joins a consumer group: each await assigns itself every partition of the topic and reads
 * from the beginning (or from the offsets {@link #endOffsets(String)} recorded earlier), polling until the
 * deadline. So it sees records produced before the call, and doesn't disturb the application's groups. The
 * reading consumer is kept for the client's next read (each read assigns and seeks every partition anew, and reads
 * the topic's partitions fresh from the broker): on the closed broker a new one costs two TLS handshakes and two
 * SCRAM exchanges, about half a second of a 2-core machine, which made every await of a test that long.
 *
 * <pre>{@code
 * try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
 *     kafka.send("node-commands", "node-1", "{...}", Map.of("ce_type", "MountVolume"));
 *     ConsumerRecord<String, String> done = kafka.awaitRecord("node-events",
 *         r -> "node-1".equals(r.key()) && r.value().contains("Mounted"), Duration.ofSeconds(10));
 * }
 * }</pre>
 */
public final class KafkaTestClient implements AutoCloseable {

    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration POLL = Duration.ofMillis(100);

    private final String bootstrapServers;
    private final KafkaClientSecurity security;
    private KafkaProducer<String, String> producer;
    /** Readers done with their last read, kept for the next one (a read takes one, or makes one if none is idle). */
    private final java.util.Deque<KafkaConsumer<String, String>> idleReaders = new java.util.ArrayDeque<>();
    private static final int MAX_IDLE_READERS = 2;
    /** Per topic, where this client's reads start instead of the beginning ({@link #fromNow}). */
    private final Map<String, Map<TopicPartition, Long>> startOffsets = new java.util.concurrent.ConcurrentHashMap<>();

    /** A PLAINTEXT client (a broker of the test's own without security). */
    public KafkaTestClient(String bootstrapServers) {
        this(bootstrapServers, KafkaClientSecurity.plaintext());
    }

    /** A client with {@code security} (e.g. {@link KafkaBroker#issue} of a closed broker). */
    public KafkaTestClient(String bootstrapServers, KafkaClientSecurity security) {
        this.bootstrapServers = Objects.requireNonNull(bootstrapServers, "bootstrapServers");
        this.security = Objects.requireNonNull(security, "security");
    }

    /**
     * A client on the JVM's shared broker of {@link KafkaResource} (starting it if needed): on a closed broker as the
     * super user {@value io.csiorchestrator.events.KafkaAccess#ADMIN}, the test's observer that may read and write
     * every topic.
     */
    public static KafkaTestClient forSharedBroker() {
        return new KafkaTestClient(KafkaResource.bootstrapServers(), KafkaResource.adminSecurity());
    }

    /** A client on the shared broker as {@code principal} (a node, a scheduler) with its ACLs on {@code prefix}'s topics. */
    public static KafkaTestClient forSharedBroker(io.csiorchestrator.events.KafkaAccess.Principal principal, String prefix) {
        return new KafkaTestClient(KafkaResource.bootstrapServers(), KafkaResource.securityOf(principal, prefix));
    }

    /** This client's security settings. */
    public KafkaClientSecurity security() {
        return security;
    }

    /**
     * From now on, this client's reads of {@code topics} (awaits from the beginning and {@link #readAll}) start at their
     * current end offsets: a test that creates its client before it acts sees only its own records, and each await
     * does not read (and match) every record earlier tests left on the shared broker. Returns this client.
     */
    public KafkaTestClient fromNow(String... topics) {
        for (String topic : topics) {
            startOffsets.put(topic, endOffsets(topic));
        }
        return this;
    }

    public String bootstrapServers() {
        return bootstrapServers;
    }

    /** Creates a topic (replication factor 1); {@code false} if it already existed (left as it is). */
    public boolean createTopic(String name, int partitions, Map<String, String> configs) {
        return io.csiorchestrator.localinfra.Kraft.createTopic(bootstrapServers, security, name, partitions, configs);
    }

    /** Sends one record and waits for the broker's acknowledgement. Header values are UTF-8. */
    public RecordMetadata send(String topic, String key, String value, Map<String, String> headers) {
        List<Header> recordHeaders = new ArrayList<>();
        if (headers != null) {
            headers.forEach((k, v) -> recordHeaders.add(
                new RecordHeader(k, v == null ? null : v.getBytes(StandardCharsets.UTF_8))));
        }
        return send(new ProducerRecord<>(topic, null, key, value, recordHeaders));
    }

    public RecordMetadata send(String topic, String key, String value) {
        return send(topic, key, value, Map.of());
    }

    /** Sends a record (partition, timestamp and headers as given) and waits for the acknowledgement. */
    public RecordMetadata send(ProducerRecord<String, String> record) {
        try {
            return producer().send(record).get(DEFAULT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while sending to " + record.topic(), e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Could not send to " + record.topic(), e);
        }
    }

    /**
     * Sends {@code records} in one produce request and waits for the acknowledgements: a producer of its own holds
     * them (a linger of a minute) until a flush sends them together, so the records of one partition are appended as
     * one record batch and a consumer's fetch returns all of them or none (one poll sees them together).
     */
    public List<RecordMetadata> sendTogether(List<ProducerRecord<String, String>> records) {
        Properties props = security.applyTo(new Properties());
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "csi-testkit-batch-producer-" + UUID.randomUUID());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "60000");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(4 * 1024 * 1024));
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> together = new KafkaProducer<>(props)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (ProducerRecord<String, String> record : records) {
                sent.add(together.send(record));
            }
            together.flush();
            List<RecordMetadata> acks = new ArrayList<>();
            for (java.util.concurrent.Future<RecordMetadata> f : sent) {
                acks.add(f.get(DEFAULT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
            }
            return acks;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while sending " + records.size() + " records", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("Could not send " + records.size() + " records together", e);
        }
    }

    /** The first record on {@code topic} (from the beginning) matching {@code predicate}, within the default timeout. */
    public ConsumerRecord<String, String> awaitRecord(String topic, Predicate<ConsumerRecord<String, String>> predicate) {
        return awaitRecord(topic, predicate, DEFAULT_TIMEOUT);
    }

    /**
     * The first record on {@code topic} (read from the beginning) matching {@code predicate}.
     *
     * @throws AssertionError if none arrives before the timeout (the message lists what was seen)
     */
    public ConsumerRecord<String, String> awaitRecord(String topic, Predicate<ConsumerRecord<String, String>> predicate,
                                                      Duration timeout) {
        return awaitRecords(topic, predicate, 1, timeout).get(0);
    }

    /**
     * The first {@code count} records on {@code topic} (read from the beginning) matching {@code predicate}.
     *
     * @throws AssertionError if fewer arrive before the timeout
     */
    public List<ConsumerRecord<String, String>> awaitRecords(String topic,
                                                             Predicate<ConsumerRecord<String, String>> predicate,
                                                             int count, Duration timeout) {
        return awaitRecords(topic, Map.of(), predicate, count, timeout);
    }

    /**
     * Like {@link #awaitRecords(String, Predicate, int, Duration)}, reading each partition from the given offsets
     * (e.g. from {@link #endOffsets(String)} taken before the action under test) instead of the beginning.
     */
    public List<ConsumerRecord<String, String>> awaitRecords(String topic, Map<TopicPartition, Long> fromOffsets,
                                                             Predicate<ConsumerRecord<String, String>> predicate,
                                                             int count, Duration timeout) {
        Objects.requireNonNull(predicate, "predicate");
        if (count < 1) {
            throw new IllegalArgumentException("count must be >= 1: " + count);
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        List<ConsumerRecord<String, String>> matched = new ArrayList<>();
        int seen = 0;
        List<String> lastSeen = new ArrayList<>();
        Reader reader = reader(topic, deadline);
        try {
            KafkaConsumer<String, String> consumer = reader.consumer;
            List<TopicPartition> partitions = reader.partitions;
            consumer.assign(partitions);
            seek(consumer, partitions, fromOffsets.isEmpty() ? startOffsets.getOrDefault(topic, Map.of()) : fromOffsets);
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(POLL)) {
                    seen++;
                    if (lastSeen.size() == 10) {
                        lastSeen.remove(0);
                    }
                    lastSeen.add(describe(record));
                    if (predicate.test(record)) {
                        matched.add(record);
                        if (matched.size() == count) {
                            reader.done = true;
                            return matched;
                        }
                    }
                }
            }
            reader.done = true;
        } finally {
            release(reader);
        }
        throw new AssertionError("Expected " + count + " matching record(s) on topic " + topic + " within " + timeout
            + " but got " + matched.size() + " (of " + seen + " read). Last records read: " + lastSeen);
    }

    /** Current end offset of each partition of {@code topic}: pass to {@link #awaitRecords} to see only newer records. */
    public Map<TopicPartition, Long> endOffsets(String topic) {
        Reader reader = reader(topic, System.nanoTime() + DEFAULT_TIMEOUT.toNanos());
        try {
            Map<TopicPartition, Long> end = new LinkedHashMap<>(reader.consumer.endOffsets(reader.partitions));
            reader.done = true;
            return end;
        } finally {
            release(reader);
        }
    }

    /**
     * All records currently on {@code topic}, from the beginning (or where {@link #fromNow} put it) up to the end
     * offsets at the time of the call.
     */
    public List<ConsumerRecord<String, String>> readAll(String topic) {
        long deadline = System.nanoTime() + DEFAULT_TIMEOUT.toNanos();
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        Reader reader = reader(topic, deadline);
        try {
            KafkaConsumer<String, String> consumer = reader.consumer;
            List<TopicPartition> partitions = reader.partitions;
            consumer.assign(partitions);
            seek(consumer, partitions, startOffsets.getOrDefault(topic, Map.of()));
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            while (!reached(consumer, end)) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("Could not read topic " + topic + " to its end within " + DEFAULT_TIMEOUT);
                }
                consumer.poll(POLL).forEach(records::add);
            }
            reader.done = true;
        } finally {
            release(reader);
        }
        return records;
    }

    /** The value of the last header with this key, as UTF-8, or {@code null}. */
    public static String header(ConsumerRecord<?, ?> record, String key) {
        Header header = record.headers().lastHeader(key);
        return header == null || header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    }

    @Override
    public synchronized void close() {
        if (producer != null) {
            producer.close(Duration.ofSeconds(5));
            producer = null;
        }
        List<KafkaConsumer<String, String>> idle;
        synchronized (idleReaders) {
            idle = new ArrayList<>(idleReaders);
            idleReaders.clear();
        }
        idle.forEach(c -> c.close(Duration.ofSeconds(5)));
    }

    /** A consumer for one read of {@code topic} and the topic's partitions as the broker has them now. */
    private static final class Reader {
        final KafkaConsumer<String, String> consumer;
        final List<TopicPartition> partitions;
        /** Set when the read ended normally: only then is the consumer kept for the next read. */
        boolean done;

        Reader(KafkaConsumer<String, String> consumer, List<TopicPartition> partitions) {
            this.consumer = consumer;
            this.partitions = partitions;
        }
    }

    /**
     * An idle reader of this client if one has {@code topic} in a fresh metadata answer of the broker (the topic's
     * partitions as they are now, e.g. after the topic grew), else a new consumer as before (a topic still missing, or
     * one this client may not describe, is waited for or refused exactly as a first read's).
     */
    private Reader reader(String topic, long deadline) {
        KafkaConsumer<String, String> idle;
        synchronized (idleReaders) {
            idle = idleReaders.pollFirst();
        }
        if (idle != null) {
            boolean kept = false;
            try {
                List<PartitionInfo> infos = idle.listTopics(Duration.ofSeconds(5)).get(topic);
                if (infos != null && !infos.isEmpty()) {
                    kept = true;
                    return new Reader(idle, partitionsOf(infos));
                }
            } catch (RuntimeException e) {
                // a broker gone or a client refused: start over with a new consumer, as every read did before
            } finally {
                if (!kept) {
                    idle.close(Duration.ofSeconds(5));
                }
            }
        }
        KafkaConsumer<String, String> consumer = consumer();
        try {
            Reader reader = new Reader(consumer, awaitPartitions(consumer, topic, deadline));
            consumer = null;
            return reader;
        } finally {
            if (consumer != null) {
                consumer.close(Duration.ofSeconds(5));
            }
        }
    }

    /** Keeps {@code reader}'s consumer for the next read if its read ended normally, else closes it. */
    private void release(Reader reader) {
        if (reader.done) {
            reader.consumer.unsubscribe();
            synchronized (idleReaders) {
                if (idleReaders.size() < MAX_IDLE_READERS) {
                    idleReaders.addFirst(reader.consumer);
                    return;
                }
            }
        }
        reader.consumer.close(Duration.ofSeconds(5));
    }

    private static List<TopicPartition> partitionsOf(List<PartitionInfo> infos) {
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo info : infos) {
            partitions.add(new TopicPartition(info.topic(), info.partition()));
        }
        return partitions;
    }

    private synchronized KafkaProducer<String, String> producer() {
        if (producer == null) {
            Properties props = security.applyTo(new Properties());
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            props.put(ProducerConfig.CLIENT_ID_CONFIG, "csi-testkit-producer-" + UUID.randomUUID());
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            producer = new KafkaProducer<>(props);
        }
        return producer;
    }

    private KafkaConsumer<String, String> consumer() {
        Properties props = security.applyTo(new Properties());
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "csi-testkit-reader-" + UUID.randomUUID());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // Reading must not create the topic (with the default partition count) before the application does.
        props.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        // A reader is reused for the next read (another topic, other offsets), but a fetch its last poll left at the
        // broker holds the connection's only fetch slot until it returns: with the default 500 ms, each await right
        // after another one waited up to half a second for a fetch nobody wanted (issue 32). A record never waits
        // for this (the broker answers as soon as one is there); it only bounds how long an empty fetch is held.
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "50");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(props);
    }

    private static List<TopicPartition> awaitPartitions(KafkaConsumer<String, String> consumer, String topic, long deadline) {
        while (true) {
            List<PartitionInfo> infos;
            try {
                infos = consumer.partitionsFor(topic, Duration.ofMillis(500));
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                infos = List.of();
            }
            if (infos != null && !infos.isEmpty()) {
                return partitionsOf(infos);
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("Topic " + topic + " does not exist (waited until the deadline)");
            }
            // partitionsFor answers at once for an unknown topic: pause a moment before asking again.
            LockSupport.parkNanos(POLL.toNanos());
        }
    }

    private static void seek(KafkaConsumer<String, String> consumer, List<TopicPartition> partitions,
                             Map<TopicPartition, Long> fromOffsets) {
        List<TopicPartition> fromBeginning = new ArrayList<>();
        for (TopicPartition partition : partitions) {
            Long offset = fromOffsets.get(partition);
            if (offset == null) {
                fromBeginning.add(partition);
            } else {
                consumer.seek(partition, offset);
            }
        }
        if (!fromBeginning.isEmpty()) {
            consumer.seekToBeginning(fromBeginning);
        }
    }

    private static boolean reached(KafkaConsumer<String, String> consumer, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> entry : end.entrySet()) {
            if (consumer.position(entry.getKey()) < entry.getValue()) {
                return false;
            }
        }
        return true;
    }

    private static String describe(ConsumerRecord<String, String> record) {
        String value = record.value();
        if (value != null && value.length() > 200) {
            value = value.substring(0, 200) + "...";
        }
        return record.partition() + "@" + record.offset() + " key=" + record.key() + " value=" + value;
    }
}
