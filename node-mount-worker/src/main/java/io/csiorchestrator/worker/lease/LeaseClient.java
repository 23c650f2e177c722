package io.csiorchestrator.worker.lease;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jboss.logging.Logger;

/**
 * The worker's lease I/O (issue 19): one thread that sends {@code NodeLeaseRequested} at start and every renew
 * interval (the granted ttl / 6; before a grant, the configured ttl / 6) and reads this node's partition of
 * {@code node-leases} (from its end: an older grant answers no request of this process) into the {@link LeaseGate}.
 * The request's send time is taken before it is handed to the producer, so the local expiry never runs late. Kafka
 * being away only means no grants: the lease lapses locally, which is the point.
 */
public final class LeaseClient implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(LeaseClient.class);
    /**
     * The longest the lease thread sleeps with nothing due (issue 36: was 200 ms, five wake-ups a second). What it
     * bounds: how soon the after-poll tasks see what no record and no timer announces, i.e. the fence guard gone or
     * its marker written (FenceGuard.tick); the requests and the fence's due moment are waited for exactly.
     */
    static final Duration IDLE_WAKE = Duration.ofSeconds(1);

    private final String bootstrapServers;
    private KafkaClientSecurity security = KafkaClientSecurity.plaintext();
    private final TopicCatalog topics;
    private final String nodeId;
    private final String source;
    private final LeaseGate gate;
    private final long defaultTtlNanos;
    private final BiConsumer<LeaseKeeper.Change, NodeLease> onChange;
    private volatile boolean running;
    private volatile Runnable afterPoll = () -> { };
    private Thread thread;
    private KafkaConsumer<String, String> consumer;

    /** @param onChange called on the lease thread when an epoch begins or ends (not on renewals) */
    public LeaseClient(String bootstrapServers, TopicCatalog topics, String nodeId, String source, LeaseGate gate,
                       Duration defaultTtl, BiConsumer<LeaseKeeper.Change, NodeLease> onChange) {
        this.bootstrapServers = bootstrapServers;
        this.topics = topics;
        this.nodeId = nodeId;
        this.source = source;
        this.gate = gate;
        this.defaultTtlNanos = defaultTtl.toNanos();
        this.onChange = onChange;
    }

    /**
     * Runs {@code task} on the lease thread after every poll: when a lease record came, a request was due, the held
     * epoch's fence fell due, and at least every {@link #IDLE_WAKE} (e.g. the guard's feed, the self-fence's check).
     */
    public void afterEveryPoll(Runnable task) {
        this.afterPoll = task;
    }

    /** Connects with {@code security}'s settings (call before {@link #start()}). */
    public LeaseClient withSecurity(KafkaClientSecurity security) {
        this.security = security;
        return this;
    }

    private volatile io.csiorchestrator.events.identity.IdentityKey identity;

    /** Lease requests sent from now on are signed with {@code key} (the node's; null: unsigned). */
    public void signWith(io.csiorchestrator.events.identity.IdentityKey key) {
        this.identity = key;
    }

    public void start() {
        Properties c = security.applyTo(new Properties());
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.CLIENT_ID_CONFIG, "node-mount-worker-lease-" + nodeId);
        // A grant is returned as soon as it is written (fetch.min.bytes 1); the wait only bounds an empty fetch, and
        // this consumer's one partition is assigned by hand (no rebalance). 5 s: one idle fetch each 5 s instead of two
        // a second (issue 36).
        c.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "5000");
        consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
        running = true;
        thread = new Thread(this::run, "csi-node-lease");
        thread.setDaemon(true);
        thread.start();
    }

    private void run() {
        Properties p = security.applyTo(new Properties());
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "1000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "node-mount-worker-lease-" + nodeId);
        String leases = topics.name(Topic.NODE_LEASES);
        String requests = topics.name(Topic.NODE_LEASE_REQUESTS);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            boolean assigned = false;
            long nextRequest = System.nanoTime();
            while (running) {
                if (!assigned) {
                    assigned = assign(leases);
                }
                long now = System.nanoTime();
                if (now - nextRequest >= 0) {
                    send(producer, requests);
                    nextRequest = now + Math.max(1_000_000L, gate.renewIntervalNanos(defaultTtlNanos));
                }
                if (!assigned) {
                    sleepUntil(Math.min(nextRequest, System.nanoTime() + 200_000_000L));
                    runAfterPoll();
                    continue;
                }
                long waitMs = Math.max(1, (wakeAt(nextRequest) - System.nanoTime() + 999_999L) / 1_000_000L);
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(waitMs))) {
                    if (!nodeId.equals(record.key()) || record.value() == null) {
                        continue;
                    }
                    NodeLease lease;
                    try {
                        CloudEventHeaders.requireValid(record.headers(), EventType.NODE_LEASE);
                        lease = EventCodec.decode(NodeLease.class, record.value());
                    } catch (RuntimeException e) {
                        LOG.warnf("ignoring a malformed node-leases record %s-%d@%d: %s", record.topic(),
                                record.partition(), record.offset(), e.getMessage());
                        continue;
                    }
                    LeaseKeeper.Change change = gate.onLease(lease);
                    if (change == LeaseKeeper.Change.NEW_EPOCH || change == LeaseKeeper.Change.ENDED) {
                        LOG.infof("node %s lease epoch %d: %s", nodeId, lease.epoch(),
                                change == LeaseKeeper.Change.NEW_EPOCH ? "granted" : lease.state().wire());
                    }
                    if (change == LeaseKeeper.Change.NEW_EPOCH || change == LeaseKeeper.Change.ENDED) {
                        onChange.accept(change, lease);
                    }
                }
                runAfterPoll();
            }
        } catch (WakeupException e) {
            if (running) {
                LOG.error("node lease thread woken up while running", e);
            }
        } catch (RuntimeException e) {
            LOG.error("node lease thread stopped: the lease lapses", e);
        } finally {
            consumer.close(Duration.ofSeconds(2));
        }
    }

    /**
     * When the lease thread wakes next if no lease record comes first: the next request, the moment the held epoch's
     * fence falls due (the self-fence's tick then finds the lease invalid at once, not up to a wait later), or
     * {@link #IDLE_WAKE} from now, whichever is first.
     */
    private long wakeAt(long nextRequest) {
        long now = System.nanoTime();
        long wake = Math.min(nextRequest - now, IDLE_WAKE.toNanos());
        Optional<LeaseGate.Deadline> deadline = gate.deadline();
        if (deadline.isPresent()) {
            wake = Math.min(wake, deadline.get().fenceAtNanos() - now);
        }
        return now + wake;
    }

    private void runAfterPoll() {
        try {
            afterPoll.run();
        } catch (RuntimeException e) {
            LOG.errorf(e, "after-poll task of the lease thread failed");
        }
    }

    private boolean assign(String leases) {
        try {
            List<PartitionInfo> partitions = consumer.partitionsFor(leases, Duration.ofSeconds(2));
            if (partitions == null || partitions.isEmpty()) {
                return false;
            }
            TopicPartition mine = new TopicPartition(leases, NodePartitioner.partitionFor(nodeId, partitions.size()));
            consumer.assign(List.of(mine));
            consumer.seekToEnd(List.of(mine));
            consumer.position(mine, Duration.ofSeconds(5)); // fix the end now: grants to requests sent after this
            return true;
        } catch (WakeupException e) {
            throw e;
        } catch (RuntimeException e) {
            LOG.debugf("could not assign node-leases yet: %s", e.toString());
            return false;
        }
    }

    private void send(KafkaProducer<String, String> producer, String requests) {
        String id = UUID.randomUUID().toString();
        long held = gate.heldEpochForRequest();
        gate.requestSent(id);
        ProducerRecord<String, String> record = new ProducerRecord<>(requests, nodeId,
                EventCodec.encodeToString(new NodeLeaseRequested(id, nodeId, held, Instant.now())));
        CloudEventHeaders.create(EventType.NODE_LEASE_REQUESTED, source).writeTo(record.headers());
        io.csiorchestrator.events.identity.IdentityKey key = identity;
        if (key != null) {
            io.csiorchestrator.events.identity.RecordSignature.sign(key, record.key(),
                    record.value().getBytes(java.nio.charset.StandardCharsets.UTF_8), record.headers());
        }
        try {
            producer.send(record, (meta, failure) -> {
                if (failure != null) {
                    LOG.debugf("lease request %s not sent: %s", id, failure.toString());
                }
            });
        } catch (RuntimeException e) {
            LOG.debugf("lease request %s not sent: %s", id, e.toString());
        }
    }

    private static void sleepUntil(long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        if (left > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(left);
        }
    }

    @Override
    public void close() {
        running = false;
        if (consumer != null) {
            consumer.wakeup();
        }
        if (thread != null) {
            try {
                thread.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
