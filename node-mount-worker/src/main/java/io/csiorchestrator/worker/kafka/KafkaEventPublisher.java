package io.csiorchestrator.worker.kafka;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.worker.EventSink;
import io.csiorchestrator.worker.telemetry.WorkerTracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Context;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jboss.logging.Logger;

/**
 * Sends the worker's events from an in-memory queue on one thread, in the queue's order per topic and key: the
 * records at the head of the queue are sent together, one per topic and key, and the next of a key only after the
 * one before it was acknowledged ({@link #nextWindow}). A record leaves the
 * queue only once the broker acknowledged it, so while Kafka is unreachable (a disconnected node)
 * events wait and are delivered once it is back. Every record carries the CloudEvents headers,
 * created when the event is queued (a resend keeps its ce_id), and an event caused by traced work
 * the W3C trace context of a PRODUCER span {@code <topic> publish} (child of the cause) that ends
 * with the broker's acknowledgement.
 *
 * <p>With an {@link EventSpool}, a {@link NodeEvent} is also written to disk (with all its
 * headers) before it is queued and its file is deleted once the broker acknowledged it, so node
 * events survive a crash or restart of the worker while Kafka is unreachable: the constructor
 * queues the spooled records (sequence order) before anything new, and they are delivered first
 * with their original {@code ce_id} (consumers dedupe by it). Only node events are spooled:
 * {@code mount-done} is answered again from the volume's record when its command is redelivered
 * (the command's offset is committed only after the acknowledgement), {@code plugin-health} is a
 * periodic heartbeat and a dead letter is produced again on redelivery. When the queue is full its
 * oldest event is dropped, spooled file included. Without a spool (null) everything is in memory.
 */
public final class KafkaEventPublisher implements EventSink, AutoCloseable {

    private static final Logger LOG = Logger.getLogger(KafkaEventPublisher.class);
    private static final Duration SEND_TIMEOUT = Duration.ofSeconds(15);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    private static final long NOT_SPOOLED = -1;
    /** At most this many records are sent before their acknowledgements are awaited ({@link #nextWindow}). */
    private static final int WINDOW = 16;
    /** How many queued records {@link #nextWindow} looks at for its window (the queue may hold thousands while Kafka is away). */
    private static final int SCAN = 64;

    /** {@code spoolSequence}: the record's file in the spool, or {@link #NOT_SPOOLED}. */
    private record Pending(ProducerRecord<String, byte[]> record, CompletableFuture<Void> acked, long spoolSequence) {
    }

    private final TopicCatalog topics;
    private final String source;
    private final int capacity;
    private final Properties producerConfig;
    private final WorkerTracing tracing;
    private final EventSpool spool;
    private final Object spoolLock = new Object();
    private volatile String lastSendFailure;
    private volatile Instant lastAcknowledged;
    private final LinkedBlockingDeque<Pending> queue = new LinkedBlockingDeque<>();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile boolean closing;
    private Thread thread;
    private KafkaProducer<String, byte[]> producer;

    public KafkaEventPublisher(String bootstrapServers, TopicCatalog topics, String source, int capacity) {
        this(bootstrapServers, topics, source, capacity, WorkerTracing.noop());
    }

    public KafkaEventPublisher(String bootstrapServers, TopicCatalog topics, String source, int capacity,
                               WorkerTracing tracing) {
        this(bootstrapServers, topics, source, capacity, tracing, null);
    }

    /**
     * With {@code spool} non-null, node events are spooled to disk until acknowledged, and the
     * records already in the spool (left by a previous run) are queued first, in sequence order.
     */
    public KafkaEventPublisher(String bootstrapServers, TopicCatalog topics, String source, int capacity,
                               WorkerTracing tracing, EventSpool spool) {
        this.tracing = tracing;
        this.spool = spool;
        this.topics = topics;
        this.source = source;
        this.capacity = capacity;
        producerConfig = new Properties();
        producerConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        producerConfig.put(ProducerConfig.ACKS_CONFIG, "all");
        producerConfig.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        producerConfig.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        producerConfig.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
        producerConfig.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        producerConfig.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "14000");
        producerConfig.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        producerConfig.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producerConfig.put(ProducerConfig.CLIENT_ID_CONFIG, "node-mount-worker-events");
        if (spool != null) {
            List<EventSpool.Spooled> spooled = spool.loadAll();
            for (EventSpool.Spooled s : spooled) {
                enqueue(s.record(), s.sequence());
            }
            if (!spooled.isEmpty()) {
                LOG.infof("%d spooled events from %s queued for delivery before new events", spooled.size(),
                        spool.directory());
            }
        }
    }

    private volatile io.csiorchestrator.events.identity.IdentityKey identity;

    /**
     * Every record sent from now on is signed with {@code key} (issue 20 item 3: consumers believe a node's records
     * only when signed by that node; {@link io.csiorchestrator.events.identity.RecordSignature}); null: unsigned.
     */
    public void signWith(io.csiorchestrator.events.identity.IdentityKey key) {
        this.identity = key;
    }

    private volatile java.util.function.Supplier<Long> leaseEpoch = () -> null;

    /** Every node event, plugin-health report and node-state report sent from now on carries this lease epoch. */
    public void stampLeaseEpoch(java.util.function.Supplier<Long> epoch) {
        this.leaseEpoch = epoch;
    }

    private ContractEvent stamped(ContractEvent event) {
        Long epoch = leaseEpoch.get();
        if (epoch == null) {
            return event;
        }
        if (event instanceof io.csiorchestrator.events.NodeEvent e && e.leaseEpoch() == null) {
            return e.withLeaseEpoch(epoch);
        }
        if (event instanceof io.csiorchestrator.events.PluginHealth h && h.leaseEpoch() == null) {
            return h.withLeaseEpoch(epoch);
        }
        if (event instanceof io.csiorchestrator.events.NodeStateReported r && r.leaseEpoch() == null) {
            return r.withLeaseEpoch(epoch);
        }
        return event;
    }

    /** Connects with {@code security}'s settings (call before {@link #start()}). */
    public KafkaEventPublisher withSecurity(KafkaClientSecurity security) {
        security.applyTo(producerConfig);
        return this;
    }

    public void start() {
        thread = new Thread(this::run, "csi-event-publisher");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public void publish(ContractEvent event, Context cause) {
        send(event, cause);
    }

    /** Queues {@code event}, caused by nothing traced; the future completes when the broker acknowledged it. */
    public CompletableFuture<Void> send(ContractEvent event) {
        return send(event, Context.root());
    }

    /**
     * Queues {@code event}, caused by the work traced in {@code cause}: the record carries the
     * context of its {@code <topic> publish} span. The future completes when the broker acknowledged it.
     */
    public CompletableFuture<Void> send(ContractEvent event, Context cause) {
        event = stamped(event);
        String topic = topics.name(event.eventType().topic());
        ProducerRecord<String, byte[]> record = new ProducerRecord<>(topic, event.recordKey(), EventCodec.encode(event));
        CloudEventHeaders.create(event.eventType(), source).writeTo(record.headers());
        io.csiorchestrator.events.identity.IdentityKey key = identity;
        if (key != null) {
            // over the key, the CloudEvents headers and the value; the trace context added below is not covered
            io.csiorchestrator.events.identity.RecordSignature.sign(key, record.key(), record.value(), record.headers());
        }
        Span span = tracing.startPublish(cause, topic, record.headers());
        CompletableFuture<Void> acked;
        if (spool != null && event instanceof NodeEvent) {
            // one lock: the spool's sequence order is the queue's order
            synchronized (spoolLock) {
                acked = enqueue(record, spoolWrite(record));
            }
        } else {
            acked = enqueue(record, NOT_SPOOLED);
        }
        acked.whenComplete((ok, failure) -> WorkerTracing.end(span, failure));
        return acked;
    }

    /** Queues a raw record (a dead letter). */
    public CompletableFuture<Void> sendRaw(ProducerRecord<String, byte[]> record) {
        return enqueue(record, NOT_SPOOLED);
    }

    /** Spools {@code record}; on failure logs it and returns {@link #NOT_SPOOLED} (the event is still queued). */
    private long spoolWrite(ProducerRecord<String, byte[]> record) {
        try {
            return spool.write(record);
        } catch (IOException | RuntimeException e) {
            LOG.warnf("could not spool an event for %s in %s (%s: %s); it is kept in memory only", record.topic(),
                    spool.directory(), e.getClass().getSimpleName(), e.getMessage());
            return NOT_SPOOLED;
        }
    }

    private CompletableFuture<Void> enqueue(ProducerRecord<String, byte[]> record, long spoolSequence) {
        CompletableFuture<Void> acked = new CompletableFuture<>();
        if (queue.size() >= capacity) {
            Pending dropped = queue.pollFirst();
            if (dropped != null) {
                if (dropped.spoolSequence() != NOT_SPOOLED) {
                    spool.delete(dropped.spoolSequence());
                    LOG.warnf("event queue full (%d): dropped the oldest event for %s and its spool file %s", capacity,
                            dropped.record().topic(), spool.fileOf(dropped.spoolSequence()));
                } else {
                    LOG.warnf("event queue full (%d): dropped the oldest event for %s", capacity, dropped.record().topic());
                }
                dropped.acked().completeExceptionally(new IllegalStateException("dropped: event queue full"));
            }
        }
        queue.addLast(new Pending(record, acked, spoolSequence));
        return acked;
    }

    public int queued() {
        return queue.size();
    }

    /** Why the last send to the broker failed, or null when the last send succeeded (or none was tried). */
    public String lastSendFailure() {
        return lastSendFailure;
    }

    /** When the broker last acknowledged a record, or null. */
    public Instant lastAcknowledged() {
        return lastAcknowledged;
    }

    private void run() {
        long backoffMs = 100;
        while (!(closing && queue.isEmpty())) {
            List<Pending> window;
            try {
                window = nextWindow();
            } catch (InterruptedException e) {
                break;
            }
            if (window.isEmpty()) {
                continue;
            }
            List<Pending> unacked;
            try {
                unacked = sendAll(window);
            } catch (InterruptedException e) {
                break;
            }
            if (unacked.isEmpty()) {
                backoffMs = 100;
                continue;
            }
            if (closing) {
                break;
            }
            try {
                if (stopped.await(backoffMs, TimeUnit.MILLISECONDS)) {
                    break;
                }
            } catch (InterruptedException ie) {
                break;
            }
            backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF.toMillis());
        }
        if (producer != null) {
            producer.close(Duration.ofSeconds(5));
        }
    }

    /**
     * The records to send together, taken from the queue in its order: at most {@link #WINDOW}, one per topic and key;
     * a record whose topic and key is in the window already stays queued, and so does every later record of that topic
     * and key (it goes in a later window, after the one before it was acknowledged). So a record is not held back by
     * the acknowledgement of another key's record (a command's answer on mount-done by the node event queued just
     * before it, issue 36), and what a consumer reads per key stays in the queue's order even when a send fails and is
     * tried again. Looks at most {@link #SCAN} queued records; waits up to 200 ms for the first (the loop's check of
     * {@code closing}).
     */
    private List<Pending> nextWindow() throws InterruptedException {
        Pending first = queue.pollFirst(200, TimeUnit.MILLISECONDS);
        if (first == null) {
            return List.of();
        }
        List<Pending> window = new ArrayList<>();
        Set<String> keys = new HashSet<>();
        window.add(first);
        keys.add(orderKey(first));
        java.util.Iterator<Pending> queued = queue.iterator();
        for (int scanned = 0; scanned < SCAN && window.size() < WINDOW && queued.hasNext(); scanned++) {
            Pending next = queued.next();
            if (keys.add(orderKey(next))) {
                queued.remove();
                window.add(next);
            }
        }
        return window;
    }

    private static String orderKey(Pending pending) {
        return pending.record().topic() + '\u0000' + pending.record().key();
    }

    /**
     * Sends the window's records without waiting in between, then waits for each acknowledgement: an acknowledged
     * record leaves (its spool file deleted, its future completed); the others go back to the head of the queue in
     * their order. Returns those. On an interrupt the unacknowledged records are put back first.
     */
    private List<Pending> sendAll(List<Pending> window) throws InterruptedException {
        List<Future<RecordMetadata>> sent = new ArrayList<>(window.size());
        String failure = null;
        try {
            if (producer == null) {
                producer = new KafkaProducer<>(producerConfig);
            }
            for (Pending p : window) {
                sent.add(producer.send(p.record()));
            }
        } catch (RuntimeException e) {
            failure = e.getClass().getSimpleName() + ": " + e.getMessage();
        }
        List<Pending> unacked = new ArrayList<>();
        InterruptedException interrupted = null;
        for (int i = 0; i < window.size(); i++) {
            Pending p = window.get(i);
            if (i >= sent.size() || interrupted != null) {
                unacked.add(p);
                continue;
            }
            try {
                sent.get(i).get(SEND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                lastAcknowledged = Instant.now();
                if (p.spoolSequence() != NOT_SPOOLED) {
                    spool.delete(p.spoolSequence());
                }
                p.acked().complete(null);
            } catch (InterruptedException e) {
                interrupted = e;
                unacked.add(p);
            } catch (ExecutionException | TimeoutException | RuntimeException e) {
                unacked.add(p);
                failure = e.getClass().getSimpleName() + ": " + e.getMessage();
                LOG.debugf("sending to %s failed (%s); trying again", p.record().topic(), e.getMessage());
            }
        }
        for (int i = unacked.size() - 1; i >= 0; i--) {
            queue.addFirst(unacked.get(i));
        }
        lastSendFailure = unacked.isEmpty() ? null : failure;
        if (interrupted != null) {
            throw interrupted;
        }
        return unacked;
    }

    /** Delivers what is queued (bounded by {@code timeout}), then stops. */
    public void close(Duration timeout) {
        closing = true;
        if (thread != null) {
            try {
                thread.join(timeout.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            stopped.countDown();
            thread.interrupt();
        }
        if (!queue.isEmpty()) {
            long spooled = queue.stream().filter(p -> p.spoolSequence() != NOT_SPOOLED).count();
            if (spool != null) {
                LOG.warnf("%d events could not be delivered before shutdown; %d of them (node events) stay in %s"
                        + " and are sent at the next start", queue.size(), spooled, spool.directory());
            } else {
                LOG.warnf("%d events could not be delivered before shutdown", queue.size());
            }
        }
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(10));
    }
}
