package io.csiorchestrator.plugins.lease;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * The node authority (issue 19): answers {@code node-lease-requests} with {@code node-leases}, declares lapses,
 * persists epochs in {@code node_leases}. One thread with a plain Kafka consumer (group
 * {@code plugin-registry-service-leases}) and producer, so requests, lapses and rebalances of this instance never
 * run at once; the rules are {@link LeaseBook}'s. A node's lapse is declared only by the instance owning its
 * request partition; on taking a partition over (start, rebalance) it loads the persisted leases and counts them as
 * granted then; a partition it owned right up to the rebalance is kept as it is. A partition whose load failed (the
 * database away) is paused, neither answered nor swept, and its load tried again with backoff from the poll loop
 * ({@link PendingLoads}) until it succeeds. A new epoch is written to PostgreSQL before its grant is published; a
 * request that cannot be answered (database or broker away) is answered by the worker's next request.
 */
@ApplicationScoped
public class LeaseAuthority {

    /** The Kafka client settings (service-support's KafkaSecurity); PLAINTEXT when built by hand in a test. */
    @Inject
    io.csiorchestrator.events.KafkaClientSecurity kafkaSecurity = io.csiorchestrator.events.KafkaClientSecurity.plaintext();

    private static final Logger LOG = Logger.getLogger(LeaseAuthority.class);
    static final String SOURCE = "/plugin-registry-service";
    /**
     * The longest the authority's loop waits with nothing due (issue 36: was a 200 ms poll, five wake-ups a second).
     * Lapses and reloads are waited for exactly (untilNextDue); this bounds only how late a lease changed by another
     * thread (an operator's REST call) is looked at, and how late a stop is seen if the wakeup were missed.
     */
    static final Duration IDLE_WAKE = Duration.ofSeconds(1);
    public static final String GROUP = "plugin-registry-service-leases";
    /** Stale-epoch reports (plugin-health heartbeats) ignored and dead-lettered. */
    public static final String STALE_EPOCH = "csi.registry.stale.epoch";
    /** Assigned request partitions whose persisted leases could not be loaded yet (retried with backoff). */
    public static final String UNLOADED = "csi.node.lease.partitions.unloaded";

    @Inject
    Pool pool;
    @Inject
    TopicCatalog topics;
    @Inject
    MeterRegistry meters;
    @Inject
    io.csiorchestrator.support.security.RecordAuthenticity authenticity;

    @ConfigProperty(name = "kafka.bootstrap.servers", defaultValue = "localhost:9092")
    String bootstrapServers;
    @ConfigProperty(name = "csi.fencing.lease-ttl", defaultValue = "30s")
    Duration ttl;
    @ConfigProperty(name = "csi.fencing.clock-drift", defaultValue = "0.05")
    double clockDrift;
    @ConfigProperty(name = "csi.fencing.budget", defaultValue = "10s")
    Duration budget;
    @ConfigProperty(name = "csi.registry.leases", defaultValue = "true")
    boolean enabled;
    @ConfigProperty(name = "csi.registry.lease-reload-max-backoff", defaultValue = "5s")
    Duration reloadMaxBackoff;

    private LeaseBook book;
    private final Set<Integer> owned = ConcurrentHashMap.newKeySet();
    /** Request partitions owned (loaded) up to the last revocation, and the partition count then; consumer thread's. */
    private final Set<Integer> justOwned = new HashSet<>();
    private int justOwnedOf;
    /** Assigned request partitions whose leases are not loaded yet; the consumer thread's only. */
    private PendingLoads pendingLoads;
    private volatile int unloaded;
    private final Map<String, Boolean> gauged = new ConcurrentHashMap<>();
    private volatile int partitions = 6;
    private volatile boolean running;
    private Thread thread;
    private KafkaConsumer<String, String> consumer;
    private KafkaProducer<String, String> producer;
    private Counter stale;

    void start(@Observes StartupEvent ignored) {
        if (budget.compareTo(ttl) >= 0) {
            throw new IllegalStateException("csi.fencing.budget " + budget + " must be below csi.fencing.lease-ttl " + ttl);
        }
        book = new LeaseBook(LeaseBook.lapseAfterNanos(ttl, clockDrift));
        stale = Counter.builder(STALE_EPOCH).description("plugin-health reports of a stale lease epoch, dead-lettered")
                .register(meters);
        pendingLoads = new PendingLoads(reloadMaxBackoff);
        Gauge.builder(UNLOADED, this, a -> a.unloaded)
                .description("node-lease-requests partitions this instance owns whose leases it could not load yet"
                        + " (paused: their requests wait, their lapses too)")
                .register(meters);
        if (!enabled) {
            return;
        }
        try {
            load(null);
        } catch (RuntimeException e) {
            LOG.warn("could not load the node leases at start; they are loaded when this instance gets its partitions", e);
        }
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        kafkaSecurity.applyTo(c);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
        c.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        // A third of the session timeout, as Kafka advises (issue 36: one a second was half of the idle requests).
        c.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "2000");
        // Renewals arrive every ttl / 6 per node, and a fetch returns as soon as one is there; the wait only bounds an
        // empty fetch, and how late a partition taken over in a rebalance is first read. Takeover arithmetic: session
        // timeout 6 s + rebalance + this 1 s + the load stays well inside ttl - budget (20 s) of a worker's last send.
        c.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "1000");
        // node-events may be created after this consumer subscribed (by claim-service or the first worker)
        c.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, "5000");
        consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        kafkaSecurity.applyTo(p);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        running = true;
        thread = new Thread(this::run, "node-lease-authority");
        thread.setDaemon(true);
        thread.start();
    }

    void stop(@Observes ShutdownEvent ignored) {
        running = false;
        if (consumer != null) {
            consumer.wakeup();
        }
        if (thread != null) {
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (producer != null) {
            producer.close(Duration.ofSeconds(5));
        }
    }

    private void run() {
        String requests = topics.name(Topic.NODE_LEASE_REQUESTS);
        String nodeEvents = topics.name(Topic.NODE_EVENTS);
        try {
            // node-events too (same key, node id): a worker's FENCED report fences its epoch here
            consumer.subscribe(List.of(requests, nodeEvents), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                    Set<Integer> gone = new HashSet<>();
                    revoked.stream().filter(tp -> tp.topic().equals(requests)).forEach(tp -> gone.add(tp.partition()));
                    // what this instance owned (loaded) up to this rebalance: current in its book, even if it gets
                    // them back while the database is away
                    justOwned.clear();
                    gone.stream().filter(owned::contains).forEach(justOwned::add);
                    justOwnedOf = partitions;
                    owned.removeAll(gone);
                    pendingLoads.revoked(gone);
                    unloaded = pendingLoads.size();
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> lost) {
                    // the session was lost: another member may have had them meanwhile, nothing here is current
                    lost.stream().filter(tp -> tp.topic().equals(requests)).forEach(tp -> owned.remove(tp.partition()));
                    justOwned.clear();
                    pendingLoads.revoked(lost.stream().map(TopicPartition::partition).toList());
                    unloaded = pendingLoads.size();
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    partitions = Math.max(1, consumer.partitionsFor(requests).size());
                    Set<Integer> fresh = new HashSet<>();
                    assigned.stream().filter(tp -> tp.topic().equals(requests)).forEach(tp -> fresh.add(tp.partition()));
                    // Partitions this instance owned right up to this rebalance (eager: revoked, then assigned again)
                    // are kept as they are: nobody else had them in between, its book is current, and a reload
                    // failing now (the database away) must not stop their renewals. The others are loaded.
                    Set<Integer> kept = new HashSet<>();
                    if (justOwnedOf == partitions) {
                        fresh.stream().filter(justOwned::contains).forEach(kept::add);
                    }
                    justOwned.clear();
                    owned.addAll(kept);
                    fresh.removeAll(kept);
                    if (!fresh.isEmpty()) {
                        tryLoad(fresh, requests, nodeEvents);
                    } else if (!kept.isEmpty()) {
                        LOG.infof("owning node lease partitions %s (kept)", owned);
                    }
                }
            });
            while (running) {
                for (ConsumerRecord<String, String> record : consumer.poll(untilNextDue())) {
                    if (record.topic().equals(nodeEvents)) {
                        handleNodeEvent(record);
                    } else {
                        handle(record);
                    }
                }
                if (pendingLoads.due(System.nanoTime())) {
                    tryLoad(pendingLoads.partitions(), requests, nodeEvents);
                }
                sweep();
            }
        } catch (WakeupException e) {
            if (running) {
                LOG.error("node lease authority woken up while running", e);
            }
        } catch (RuntimeException e) {
            LOG.error("node lease authority stopped", e);
        } finally {
            consumer.close(Duration.ofSeconds(5));
        }
    }

    /**
     * On the consumer thread: loads the leases of request partitions {@code wanted} (assigned just now, or waiting
     * for a retry). Loaded: this instance owns them (declares their lapses) and reads them. Failed: they and their
     * node-events partitions are paused (a request answered from leases not loaded could grant a new epoch to a node
     * that holds a valid one, and so fence it) and tried again after the backoff.
     */
    private void tryLoad(Set<Integer> wanted, String requests, String nodeEvents) {
        List<TopicPartition> topicPartitions = new ArrayList<>();
        for (int partition : wanted) {
            topicPartitions.add(new TopicPartition(requests, partition));
            topicPartitions.add(new TopicPartition(nodeEvents, partition));
        }
        topicPartitions.retainAll(consumer.assignment());
        int failedTries = pendingLoads.failures();
        try {
            load(wanted);
        } catch (RuntimeException e) {
            pendingLoads.failed(wanted, System.nanoTime());
            unloaded = pendingLoads.size();
            consumer.pause(topicPartitions);
            LOG.warnf("could not load the node leases of partitions %s (try %d): their requests and lapses wait, tried"
                    + " again in %d ms: %s", wanted, pendingLoads.failures(), pendingLoads.backoff().toMillis(), e.toString());
            return;
        }
        pendingLoads.loaded(wanted);
        unloaded = pendingLoads.size();
        consumer.resume(topicPartitions);
        owned.addAll(wanted);
        LOG.infof("owning node lease partitions %s%s", owned,
                failedTries > 0 ? " (" + wanted + " loaded after " + failedTries + " failed tries)" : "");
    }

    /** Loads the persisted leases (of the nodes of {@code partitionsOrAll}; null: all), as granted now. */
    private void load(Set<Integer> partitionsOrAll) {
        List<LeaseBook.Stored> rows = new ArrayList<>();
        for (Row row : pool.query("select node_id, epoch, state, last_renewed_at, fenced_epoch from node_leases")
                .execute().await().atMost(Duration.ofSeconds(10))) {
            String node = row.getString("node_id");
            if (partitionsOrAll == null || partitionsOrAll.contains(NodePartitioner.partitionFor(node, partitions))) {
                rows.add(new LeaseBook.Stored(node, row.getLong("epoch"), NodeLeaseState.fromWire(row.getString("state")),
                        row.getOffsetDateTime("last_renewed_at").toInstant(), row.getLong("fenced_epoch")));
            }
        }
        synchronized (this) {
            book.load(rows, System.nanoTime());
        }
        rows.forEach(r -> gauge(r.nodeId()));
    }

    private void handle(ConsumerRecord<String, String> record) {
        NodeLeaseRequested request;
        try {
            CloudEventHeaders.requireValid(record.headers(), EventType.NODE_LEASE_REQUESTED);
            request = EventCodec.decode(NodeLeaseRequested.class, record.value());
            if (!request.recordKey().equals(record.key())) {
                throw new IllegalArgumentException("key " + record.key() + " must be the node id " + request.nodeId());
            }
            // a node asks for its own lease only (issue 20 item 3): signed by node:<nodeId>, else dead-lettered
            authenticity.requireNode(record, EventType.NODE_LEASE_REQUESTED.displayName(), request.nodeId());
        } catch (RuntimeException e) {
            deadLetter(record, e.getMessage(), e);
            return;
        }
        if (record.timestamp() > 0 && Instant.ofEpochMilli(record.timestamp()).plus(ttl).isBefore(Instant.now())) {
            // a request older than the ttl (a first start of the group reading old requests): its worker counts any
            // answer expired already; answering would only grant epochs to nodes long gone
            LOG.debugf("ignoring lease request %s of node %s: older than the ttl", request.requestId(), request.nodeId());
            return;
        }
        LeaseBook.Grant grant;
        synchronized (this) {
            grant = book.request(request.nodeId(), request.heldEpoch(), System.nanoTime(), Instant.now());
        }
        gauge(request.nodeId());
        try {
            if (grant.persist()) {
                write(grant.nodeId(), grant.epoch(), NodeLeaseState.VALID, 0);
                synchronized (this) {
                    book.persisted(grant.nodeId(), grant.epoch());
                }
            }
            if (grant.newEpoch()) {
                LOG.infof("granted node %s lease epoch %d", grant.nodeId(), grant.epoch());
            }
            publish(new NodeLease(grant.nodeId(), grant.epoch(), NodeLeaseState.VALID, request.requestId(),
                    ttl.toMillis(), budget.toMillis(), Instant.now()));
        } catch (RuntimeException e) {
            LOG.warnf("could not answer lease request %s of node %s (the next one is answered): %s", request.requestId(),
                    request.nodeId(), e.toString());
        }
    }

    /** The kind of a FENCED node event as the contract's codec writes it (compact JSON). */
    private static final String FENCED_KIND = "\"kind\":\"" + io.csiorchestrator.events.NodeEventKind.FENCED.wire() + "\"";

    /**
     * Whether a node event's JSON may be a FENCED event, by a look for its kind's text: every other node event (a
     * mount and an unmount per operation, health, usage) is passed over without its headers checked or its body
     * decoded (issue 36: decoding each was a quarter of this thread's CPU under load). An event that spelled its kind
     * with escapes would be passed over too: the registry then learns of the fence when the lease lapses, later and
     * never wrongly; so would one written with blanks around its colon.
     */
    static boolean mayBeFenced(String value) {
        return value.contains(FENCED_KIND);
    }

    /**
     * A worker's FENCED node event (details {@code epoch}) fences that epoch; anything else on node-events is not this
     * service's business (claim-service reads and dead-letters them).
     */
    private void handleNodeEvent(ConsumerRecord<String, String> record) {
        if (record.value() == null || !mayBeFenced(record.value())) {
            return;
        }
        io.csiorchestrator.events.NodeEvent event;
        try {
            CloudEventHeaders.requireValid(record.headers(), EventType.NODE_EVENT);
            event = EventCodec.decode(io.csiorchestrator.events.NodeEvent.class, record.value());
        } catch (RuntimeException e) {
            LOG.debugf("ignoring node-events record %s-%d@%d: %s", record.topic(), record.partition(), record.offset(),
                    e.getMessage());
            return;
        }
        if (event.kind() != io.csiorchestrator.events.NodeEventKind.FENCED) {
            return;
        }
        try {
            // only the node itself may say it fenced (issue 20 item 3); claim-service dead-letters the record
            authenticity.requireNode(record, EventType.NODE_EVENT.displayName(), event.nodeId());
        } catch (RuntimeException e) {
            LOG.warnf("ignoring FENCED node event %s-%d@%d: %s", record.topic(), record.partition(), record.offset(),
                    e.getMessage());
            return;
        }
        String epochText = event.details().get("epoch");
        long epoch;
        try {
            epoch = Long.parseLong(epochText);
        } catch (NumberFormatException e) {
            LOG.warnf("FENCED node event of node %s without a valid details.epoch %s: ignored", event.nodeId(), epochText);
            return;
        }
        try {
            fenced(event.nodeId(), epoch);
        } catch (RuntimeException e) {
            LOG.warnf("could not record node %s fenced at epoch %d: %s", event.nodeId(), epoch, e.toString());
        }
    }

    /**
     * How long the loop may wait for records: until the next lapse of an owned lease falls due, the next load of
     * waiting partitions, or {@link #IDLE_WAKE}, whichever is first (at least 1 ms).
     */
    private Duration untilNextDue() {
        long now = System.nanoTime();
        long wait = IDLE_WAKE.toNanos();
        OptionalLong lapse;
        synchronized (this) {
            lapse = book.nextLapseNanos(this::ownsNode);
        }
        if (lapse.isPresent()) {
            wait = Math.min(wait, lapse.getAsLong() - now);
        }
        OptionalLong load = pendingLoads.nextTryNanos();
        if (load.isPresent()) {
            wait = Math.min(wait, load.getAsLong() - now);
        }
        return Duration.ofMillis(Math.max(1, (wait + 999_999L) / 1_000_000L));
    }

    /** Whether this instance owns (loaded) the node-lease-requests partition of {@code nodeId}; under its lock. */
    private boolean ownsNode(String nodeId) {
        return owned.contains(NodePartitioner.partitionFor(nodeId, partitions));
    }

    private void sweep() {
        List<LeaseBook.View> lapsed;
        synchronized (this) {
            lapsed = book.lapses(System.nanoTime(), this::ownsNode);
        }
        for (LeaseBook.View lapse : lapsed) {
            LOG.warnf("node %s lease epoch %d lapsed: no renewal for %s x (1 + %s)", lapse.nodeId(), lapse.epoch(), ttl,
                    clockDrift);
            try {
                write(lapse.nodeId(), lapse.epoch(), NodeLeaseState.LAPSED, lapse.fencedEpoch());
                publish(new NodeLease(lapse.nodeId(), lapse.epoch(), NodeLeaseState.LAPSED, null, ttl.toMillis(),
                        budget.toMillis(), Instant.now()));
            } catch (RuntimeException e) {
                // Never granted again either way (the book says lapsed); the next grant writes epoch + 1.
                LOG.warnf("could not record or publish the lapse of node %s epoch %d: %s", lapse.nodeId(), lapse.epoch(),
                        e.toString());
            }
        }
    }

    /** Marks epoch {@code epoch} of {@code nodeId} fenced (its worker reported FENCED); the next grant is epoch + 1. */
    public void fenced(String nodeId, long epoch) {
        boolean changed;
        synchronized (this) {
            changed = book.fenced(nodeId, epoch);
        }
        if (changed) {
            gauge(nodeId);
            LOG.warnf("node %s reported it fenced itself at lease epoch %d; the next grant is epoch %d", nodeId, epoch,
                    epoch + 1);
            write(nodeId, epoch, NodeLeaseState.FENCED, epoch);
            publish(new NodeLease(nodeId, epoch, NodeLeaseState.FENCED, null, ttl.toMillis(), budget.toMillis(),
                    Instant.now()));
        }
    }

    private void write(String nodeId, long epoch, NodeLeaseState state, long fencedEpoch) {
        pool.preparedQuery("""
                        insert into node_leases (node_id, epoch, state, last_renewed_at, fenced_epoch)
                        values ($1, $2, $3, $4, $5)
                        on conflict (node_id) do update set epoch = excluded.epoch, state = excluded.state,
                          last_renewed_at = excluded.last_renewed_at,
                          fenced_epoch = greatest(node_leases.fenced_epoch, excluded.fenced_epoch)
                        where node_leases.epoch <= excluded.epoch""")
                .execute(Tuple.of(nodeId, epoch, state.wire(), OffsetDateTime.now(ZoneOffset.UTC), fencedEpoch))
                .await().atMost(Duration.ofSeconds(10));
    }

    private void publish(NodeLease lease) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_LEASE, SOURCE).writeTo(headers);
        try {
            producer.send(new ProducerRecord<>(topics.name(Topic.NODE_LEASES), null, lease.nodeId(),
                    EventCodec.encodeToString(lease), headers)).get(15, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted publishing " + lease, e);
        } catch (Exception e) {
            throw new IllegalStateException("could not publish " + lease + ": " + e, e);
        }
    }

    private void deadLetter(ConsumerRecord<String, String> record, String reason, Exception e) {
        LOG.warnf("dead-lettering %s record %s-%d@%d: %s", EventType.NODE_LEASE_REQUESTED.displayName(), record.topic(),
                record.partition(), record.offset(), reason);
        RecordHeaders headers = new RecordHeaders();
        headers.add(DeadLetters.REASON, String.valueOf(reason).getBytes(StandardCharsets.UTF_8));
        headers.add(DeadLetters.CAUSE, e.getClass().getName().getBytes(StandardCharsets.UTF_8));
        headers.add(DeadLetters.TOPIC, record.topic().getBytes(StandardCharsets.UTF_8));
        headers.add(DeadLetters.PARTITION, String.valueOf(record.partition()).getBytes(StandardCharsets.UTF_8));
        headers.add(DeadLetters.OFFSET, String.valueOf(record.offset()).getBytes(StandardCharsets.UTF_8));
        try {
            producer.send(new ProducerRecord<>(topics.deadLetterName(Topic.NODE_LEASE_REQUESTS), null, record.key(),
                    record.value(), headers)).get(15, TimeUnit.SECONDS);
        } catch (Exception failure) {
            LOG.warnf("could not dead-letter %s-%d@%d: %s", record.topic(), record.partition(), record.offset(), failure);
        }
    }

    /** Why a report of {@code nodeId} under {@code epoch} is stale (counted), or empty. */
    public Optional<String> staleReport(String nodeId, Long epoch) {
        Optional<String> reason;
        synchronized (this) {
            reason = book == null ? Optional.empty() : book.staleEpoch(nodeId, epoch);
        }
        reason.ifPresent(r -> stale.increment());
        return reason;
    }

    /** Whether this instance owns {@code nodeId}'s partition (loaded): it answers its requests and declares its lapses. */
    public boolean owns(String nodeId) {
        return owned.contains(NodePartitioner.partitionFor(nodeId, partitions));
    }

    /** Every node's lease as this instance knows it. */
    public synchronized List<LeaseBook.View> all() {
        return book == null ? List.of() : book.all();
    }

    public synchronized Optional<LeaseBook.View> get(String nodeId) {
        return book == null ? Optional.empty() : book.get(nodeId);
    }

    /** The registry's estimate of when {@code lease} lapses (last grant + ttl x (1 + drift)), for a valid lease. */
    public Instant expiresAt(LeaseBook.View lease) {
        long left = lease.lastGrantNanos() + book.lapseAfterNanos() - System.nanoTime();
        return Instant.now().plusNanos(left);
    }

    private void gauge(String nodeId) {
        if (gauged.putIfAbsent(nodeId, Boolean.TRUE) != null) {
            return;
        }
        Gauge.builder("csi.node.lease.epoch", () -> get(nodeId).map(LeaseBook.View::epoch).orElse(0L))
                .description("the node's current lease epoch").tags(Tags.of("node", nodeId)).register(meters);
        for (NodeLeaseState state : NodeLeaseState.values()) {
            Gauge.builder("csi.node.lease.state", () -> get(nodeId).filter(v -> v.state() == state).isPresent() ? 1 : 0)
                    .description("1 for the node lease's current state").tags(Tags.of("node", nodeId, "state", state.wire()))
                    .register(meters);
        }
        io.micrometer.core.instrument.FunctionCounter.builder("csi.node.lease.lapses", this,
                        a -> a.get(nodeId).map(LeaseBook.View::lapses).orElse(0L))
                .description("lapses of the node's lease this instance declared").tags(Tags.of("node", nodeId))
                .register(meters);
    }

    /** For tests: a fresh request id. */
    static String requestId() {
        return UUID.randomUUID().toString();
    }
}
