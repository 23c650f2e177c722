package io.csiorchestrator.claims.messaging;

import io.csiorchestrator.claims.AntiEntropyRepairs;
import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.claims.ClaimService;
import io.csiorchestrator.support.TransientFailures;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.events.CloudEventHeaders;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.context.Context;
import java.time.Instant;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.Violation;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.kafka.common.header.Header;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.claims.Fencing;
import io.csiorchestrator.claims.domain.LeaseBook;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.Topic;
import io.smallrye.mutiny.Uni;
import io.smallrye.reactive.messaging.TracingMetadata;
import io.smallrye.reactive.messaging.kafka.KafkaRecord;
import io.smallrye.reactive.messaging.kafka.KafkaRecordBatch;
import io.smallrye.reactive.messaging.kafka.api.IncomingKafkaRecordMetadata;
import io.csiorchestrator.claims.store.VolumeEntity;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.eclipse.microprofile.reactive.messaging.Incoming;
import org.jboss.logging.Logger;

/**
 * The inputs (claim-requested, mount-done, node-leases, and through one channel plugin-status, node-state for anti-entropy,
 * and node-events for volume conditions). Each record's CloudEvents headers are checked ({@link CloudEventHeaders#requireValid}:
 * the topic's {@code ce_type}, {@code ce_specversion} 1.0, {@code ce_id}, {@code ce_source}, a parseable
 * {@code ce_time}) and its value decoded with the contract's codec: a malformed record fails with a
 * {@link MalformedEventException}, which nacks it to the topic's dead-letter topic (reason header =
 * the exception's message) and the partition moves on; so does anything else the handling of one
 * record throws before it reaches the database. The database being away (unreachable,
 * restarting, failing over: {@link TransientFailures}) is waited out: the record is retried with
 * backoff (100 ms to 5 s) for as long as that lasts, so a valid record is never dead-lettered by an
 * outage; meanwhile readiness reports the database down. Any other failure is retried for
 * {@code csi.claims.consumer-retry-budget} (45 s), then the record is dead-lettered with the reason.
 * Retries are counted in {@code csi.claim.consumer.retries}. Once a record is well-formed, who wrote it is checked
 * before it takes any effect ({@link io.csiorchestrator.support.security.RecordAuthenticity}, issue 20 items 3 and 5):
 * a claim request signed by a scheduler, seen once, inside the replay window; a mount-done, node-state or node event
 * signed by the node it names; anything else is dead-lettered with the reason. The retries are {@link Retries}'.
 *
 * <p>claim-requested and mount-done are read a poll at a time and handled by {@link RecordBatches}: the checks above
 * run on each record alone, the valid records of a poll share one database transaction (a failed one is handled again
 * record by record), and the poll is acknowledged once every record took effect or was dead-lettered.
 */
@ApplicationScoped
public class Consumers {

    private static final Logger LOG = Logger.getLogger(Consumers.class);
    @Inject
    ClaimService claims;
    @Inject
    io.csiorchestrator.claims.ClaimRequests requests;
    @Inject
    io.csiorchestrator.claims.MountAnswers answers;
    @Inject
    io.csiorchestrator.claims.PluginWaits pluginWaits;
    @Inject
    io.csiorchestrator.claims.ClaimFences fences;
    @Inject
    ClaimMetrics metrics;
    @Inject
    OpenTelemetry openTelemetry;
    @Inject
    AntiEntropyRepairs antiEntropy;
    @Inject
    Fencing fencing;
    @Inject
    io.csiorchestrator.support.security.RecordAuthenticity authenticity;
    @Inject
    io.csiorchestrator.claims.provision.ProvisionService provisions;
    @Inject
    io.csiorchestrator.claims.provision.SnapshotService snapshots;
    @Inject
    io.csiorchestrator.claims.provision.VolumeListings listings;
    @Inject
    RecordBatches batches;
    @Inject
    io.csiorchestrator.claims.capacity.VolumeUsageReports storage;
    @Inject
    Retries retries;
    @Inject
    io.csiorchestrator.claims.KafkaTopics topics;

    /**
     * A poll of claim-requested records ({@link RecordBatches}): each is checked (headers, value, a scheduler's
     * signature) on its own; the valid ones are decided in one transaction, their volumes locked up front in key order.
     */
    @Incoming("claim-requested")
    public Uni<Void> onClaimRequested(KafkaRecordBatch<String, String> batch) {
        Instant received = Instant.now();
        return batches.handle("claim-requested", batch, kafkaRecord -> {
            ConsumerRecord<String, String> record = consumerRecord(kafkaRecord);
            byte[] raw = io.csiorchestrator.support.security.RawValue.take(record);
            Context trace = trace(kafkaRecord);
            Tx tx = Tx.causedBy(openTelemetry, trace);
            ClaimRequestChecks.Checked checked = ClaimRequestChecks.check(record, raw, authenticity);
            if (checked.refused() != null) {
                return refusedStep(kafkaRecord, record, checked.refused(), trace, tx);
            }
            ClaimRequested request = checked.request();
            Instant requestedAt = eventTime(record, received);
            return RecordBatches.Step.joinable(kafkaRecord, "claim-requested " + request.requestId(), trace, tx,
                    VolumeEntity.key(request.namespace(), request.volumeId()),
                    () -> requests.claimRequestedStep(request, requestedAt, tx),
                    () -> requests.onClaimRequested(request, requestedAt, tx));
        }, ClaimService::lockVolumes);
    }

    /**
     * A claim request a known scheduler signed, refused (outside the replay window, a broken body, a key mismatch;
     * issue 33 item 4): answered {@code rejected} with the reason when its ids can be read
     * ({@link RefusedClaimRequests}), once per {@code ce_id}, and dead-lettered with the reason either way.
     */
    private RecordBatches.Step refusedStep(KafkaRecord<String, String> kafkaRecord, ConsumerRecord<String, String> record,
                                           MalformedEventException refused, Context trace, Tx tx) {
        var answer = RefusedClaimRequests.answer(record.value(), refused);
        if (answer.isEmpty()) {
            throw refused;
        }
        String ceId = CloudEventHeaders.readFrom(record.headers()).id();
        return RecordBatches.Step.alone(kafkaRecord, "refused claim-requested " + answer.get().requestId(), trace,
                () -> requests.answerRefused(answer.get(), ceId, tx).chain(() -> Uni.createFrom().failure(refused)));
    }

    /** The record a batch's message carries (its headers, key, value and timestamp as read). */
    @SuppressWarnings("unchecked")
    private static ConsumerRecord<String, String> consumerRecord(KafkaRecord<String, String> record) {
        return record.getMetadata(IncomingKafkaRecordMetadata.class)
                .map(m -> (ConsumerRecord<String, String>) m.getRecord())
                .orElseThrow(() -> new IllegalStateException("a record of a batch without its Kafka metadata"));
    }

    /** The record's span as the connector started it from its traceparent (the root context when tracing is off). */
    private static Context trace(KafkaRecord<String, String> record) {
        return TracingMetadata.fromMessage(record).map(TracingMetadata::getCurrentContext).orElse(Context.current());
    }

    /**
     * A poll of mount-done records ({@link RecordBatches}): each is checked (headers, value, its node's signature, its
     * lease epoch) on its own; the answers to claims' commands are applied in one transaction, their volumes locked up
     * front in key order; the answers of provisioning, snapshots and listings run alone, in their place.
     */
    @Incoming("mount-done")
    public Uni<Void> onMountDone(KafkaRecordBatch<String, String> batch) {
        return batches.handle("mount-done", batch, kafkaRecord -> {
            ConsumerRecord<String, String> record = consumerRecord(kafkaRecord);
            byte[] raw = io.csiorchestrator.support.security.RawValue.take(record);
            Context trace = trace(kafkaRecord);
            Tx tx = Tx.causedBy(openTelemetry, trace);
            CloudEventHeaders.requireValid(record.headers(), EventType.MOUNT_DONE);
            MountDone done = EventCodec.decode(MountDone.class, record.value());
            ClaimRequestChecks.requireKey(EventType.MOUNT_DONE.displayName(), record, "nodeId", done.nodeId());
            authenticity.requireNode(record, raw, EventType.MOUNT_DONE.displayName(), done.nodeId());
            String what = "mount-done " + done.commandId();
            if (!StaleAnswers.takenWhateverEpoch(done) && fencing.book().stale(done.nodeId(), done.leaseEpoch())) {
                // controller answers and a worker's refusal of a mount before any plugin call are taken whatever
                // the epoch (StaleAnswers says why); anything else of an older epoch than the node's newest is not:
                // dead-lettered, after the claim waiting for it asked again (MountAnswers#onStaleAnswer)
                long newest = fencing.book().epoch(done.nodeId());
                StaleEpochException stale = staleEpoch("mount-done", done.nodeId(), done.leaseEpoch());
                return RecordBatches.Step.alone(kafkaRecord, what, trace, () -> answers.onStaleAnswer(done, newest, tx)
                        .chain(() -> Uni.createFrom().failure(stale)));
            }
            if (done.kind() == NodeCommandKind.LIST_VOLUMES) {
                // a page of ListVolumes for the comparison of the volumes created through the services (issue 14)
                return RecordBatches.Step.alone(kafkaRecord, what, trace, () -> listings.onDone(done, tx));
            }
            if (done.kind().snapshotting()) {
                // create-snapshot / delete-snapshot answers (issue 14 item 2)
                return RecordBatches.Step.alone(kafkaRecord, what, trace, () -> snapshots.onDone(done, tx));
            }
            if (done.kind().provisioning() || done.kind().expanding()) {
                // create-volume / delete-volume answers (issue 14), controller and node expansions (item 3)
                return RecordBatches.Step.alone(kafkaRecord, what, trace, () -> provisions.onDone(done, tx));
            }
            return RecordBatches.Step.joinable(kafkaRecord, what, trace, tx, done.commandId(),
                    () -> answers.mountDoneStep(done, tx), () -> answers.onMountDone(done, tx));
        }, ClaimService::lockVolumesOfCommands);
    }

    /**
     * When the event happened: its CloudEvents {@code ce_time} header when present and sane (parseable,
     * not in the future beyond {@link CloudEventHeaders#CLOCK_SKEW}, not older than the record's own timestamp by more than
     * {@link CloudEventHeaders#MAX_CE_TIME_AGE}), else the record's timestamp, else {@code now}.
     */
    static Instant eventTime(ConsumerRecord<?, ?> record, Instant now) {
        return CloudEventHeaders.eventTime(record.headers(), record.timestamp(), now).orElse(now);
    }

    /**
     * The three low-traffic topics, plugin-status, node-state and node-events, through one consumer (channel
     * {@code node-reports}, issue 36: each consumer of its own cost two connections, their heartbeats, idle fetches and
     * SCRAM re-authentications while nothing happened). Each record is handled as its topic's handler below says; one
     * that fails is dead-lettered to its own topic's dead-letter topic, as when each topic had its channel. They are
     * handled one at a time in poll order, so a record retried for the database's sake holds the other two topics too
     * (they are held by the same outage anyway).
     */
    @Incoming("node-reports")
    public Uni<Void> onNodeReport(KafkaRecord<String, String> message) {
        ConsumerRecord<String, String> record = consumerRecord(message);
        byte[] raw = io.csiorchestrator.support.security.RawValue.take(record);
        String topic = record.topic();
        Uni<Void> handling;
        if (topic.equals(topics.name(Topic.PLUGIN_STATUS))) {
            handling = onPluginStatus(record);
        } else if (topic.equals(topics.name(Topic.NODE_STATE))) {
            handling = onNodeState(record, raw);
        } else if (topic.equals(topics.name(Topic.NODE_EVENTS))) {
            handling = onNodeEvent(record, raw);
        } else {
            handling = Uni.createFrom().failure(new IllegalStateException("channel node-reports got a record of " + topic));
        }
        return handling.onItemOrFailure().transformToUni((ok, failure) -> Uni.createFrom().completionStage(failure == null
                ? message.ack()
                : message.nack(failure, org.eclipse.microprofile.reactive.messaging.Metadata.of(
                        io.smallrye.reactive.messaging.kafka.api.OutgoingKafkaRecordMetadata.builder()
                                .withTopic(topic + Topic.DEAD_LETTER_SUFFIX).build()))));
    }

    /** A node's report of its actual state, for anti-entropy ({@link AntiEntropyRepairs}); keyed by its node id. */
    Uni<Void> onNodeState(ConsumerRecord<String, String> record, byte[] raw) {
        return handled(() -> {
            CloudEventHeaders.requireValid(record.headers(), EventType.NODE_STATE);
            NodeStateReported report = EventCodec.decode(NodeStateReported.class, record.value());
            ClaimRequestChecks.requireKey(EventType.NODE_STATE.displayName(), record, "nodeId", report.nodeId());
            authenticity.requireNode(record, raw, EventType.NODE_STATE.displayName(), report.nodeId());
            return retried(() -> antiEntropy.onReport(report), "node-state " + report.nodeId() + " #" + report.sequence());
        });
    }

    /** A plugin's aggregate view, or its tombstone, as plugin-registry-service published it; keyed by its plugin id. */
    Uni<Void> onPluginStatus(ConsumerRecord<String, String> record) {
        return handled(() -> {
            // A tombstone (no value) carries the headers too.
            CloudEventHeaders.requireValid(record.headers(), EventType.PLUGIN_STATUS);
            if (record.key() == null) {
                throw MalformedEventException.single("plugin-status", "(key)", null, "a plugin-status record needs the plugin id as key");
            }
            PluginStatus status = record.value() == null ? null : EventCodec.decode(PluginStatus.class, record.value());
            if (status != null && !status.pluginId().equals(record.key())) {
                throw MalformedEventException.single("plugin-status", "pluginId", status.pluginId(),
                        "does not match the record key '" + record.key() + "'");
            }
            return retried(() -> pluginWaits.onPluginStatus(record.key(), status), "plugin-status " + record.key());
        });
    }

    /**
     * node-events: a {@code volume-condition} event (a volume's CSI condition on a node, reported by
     * that node's worker) is stored for the volume's health; {@code capacity} and {@code volume-usage} (issue 34) go
     * to {@link io.csiorchestrator.claims.capacity.VolumeUsageReports}; every other kind is for monitoring and
     * acknowledged unread. A volume-condition event without its volume, plugin or a
     * {@code details.condition} of {@code abnormal}/{@code normal} is dead-lettered.
     */
    Uni<Void> onNodeEvent(ConsumerRecord<String, String> record, byte[] raw) {
        return handled(() -> {
            CloudEventHeaders.requireValid(record.headers(), EventType.NODE_EVENT);
            NodeEvent event = EventCodec.decode(NodeEvent.class, record.value());
            ClaimRequestChecks.requireKey(EventType.NODE_EVENT.displayName(), record, "nodeId", event.nodeId());
            authenticity.requireNode(record, raw, EventType.NODE_EVENT.displayName(), event.nodeId());
            if (event.kind() == NodeEventKind.FENCED) {
                // About an ended epoch by nature (sent once the worker is back, maybe after its next grant): judged by
                // details.epoch against each claim's mount epoch, not refused as stale.
                return onFenced(event);
            }
            refuseStale("node-events", event.nodeId(), event.leaseEpoch());
            if (event.kind() == NodeEventKind.CAPACITY) {
                storage.onCapacity(event, storage.capacityOf(event)); // memory only (CapacityView)
                return Uni.createFrom().voidItem();
            }
            if (event.kind() == NodeEventKind.VOLUME_USAGE) {
                io.csiorchestrator.events.VolumeUsageFigures figures = storage.usageOf(event);
                return retried(() -> storage.onVolumeUsage(event, figures), "node-events volume-usage " + event.volumeId());
            }
            if (event.kind() != NodeEventKind.VOLUME_CONDITION) {
                return Uni.createFrom().voidItem();
            }
            String condition = event.details().get("condition");
            List<Violation> problems = new java.util.ArrayList<>();
            if (!"abnormal".equals(condition) && !"normal".equals(condition)) {
                problems.add(new Violation("details.condition", Violation.quote(condition), "must be abnormal or normal"));
            }
            if (event.namespace() == null) {
                problems.add(new Violation("namespace", null, "a volume-condition event names its volume"));
            }
            if (event.volumeId() == null) {
                problems.add(new Violation("volumeId", null, "a volume-condition event names its volume"));
            }
            if (!problems.isEmpty()) {
                throw new MalformedEventException(EventType.NODE_EVENT.displayName(), problems);
            }
            return retried(() -> claims.onVolumeCondition(event), "node-events volume-condition " + event.volumeId());
        });
    }

    /**
     * node-leases, read by every replica from the start of the compacted topic (a group of its own per process, no
     * offsets committed): each lease goes into this replica's {@link io.csiorchestrator.claims.domain.LeaseBook},
     * received now (after a restart every lease counts as just granted). A record whose key is not its node id is
     * dead-lettered; one of an older epoch than the node's newest changes nothing.
     */
    @Incoming("node-leases")
    public Uni<Void> onNodeLease(ConsumerRecord<String, String> record) {
        return handled(() -> {
            CloudEventHeaders.requireValid(record.headers(), EventType.NODE_LEASE);
            NodeLease lease = EventCodec.decode(NodeLease.class, record.value());
            if (!lease.nodeId().equals(record.key())) {
                throw MalformedEventException.single("node-leases", "nodeId", lease.nodeId(),
                        "does not match the record key '" + record.key() + "'");
            }
            LeaseBook.State state = switch (lease.state()) {
                case VALID -> LeaseBook.State.VALID;
                case LAPSED -> LeaseBook.State.LAPSED;
                case FENCED -> LeaseBook.State.FENCED;
            };
            LeaseBook.Applied applied = fencing.book().receive(lease.nodeId(), lease.epoch(), state, fencing.now());
            if (applied == LeaseBook.Applied.STALE) {
                LOG.debugf("node-leases: %s epoch %d %s is older than the newest known; ignored", lease.nodeId(),
                        lease.epoch(), lease.state().wire());
            } else if (state != LeaseBook.State.VALID) {
                LOG.infof("node-leases: %s's lease epoch %d %s", lease.nodeId(), lease.epoch(), lease.state().wire());
                return retried(() -> fences.fenceCheckNode(lease.nodeId()), "node-leases " + lease.nodeId());
            }
            return Uni.createFrom().voidItem();
        });
    }

    /**
     * A FENCED node event: the claims (readers and writers) whose mounts it lists as removed ({@code unmounted},
     * {@code lazilyDetached}) end ({@link io.csiorchestrator.claims.ClaimFences#onNodeFenced}). One without a numeric {@code details.epoch} is dead-lettered.
     */
    private Uni<Void> onFenced(NodeEvent event) {
        long epoch;
        try {
            epoch = Long.parseLong(event.details().getOrDefault("epoch", ""));
        } catch (NumberFormatException e) {
            throw MalformedEventException.single(EventType.NODE_EVENT.displayName(), "details.epoch",
                    event.details().get("epoch"), "a fenced event names the lease epoch it fenced at (a number)");
        }
        List<String> removed = new java.util.ArrayList<>();
        for (String key : List.of("unmounted", "lazilyDetached")) {
            String list = event.details().get(key);
            if (list != null && !list.isBlank()) {
                for (String m : list.split(",")) {
                    if (!m.isBlank()) {
                        removed.add(m.trim());
                    }
                }
            }
        }
        LOG.infof("node-events: %s fenced at epoch %d (by %s); mounts removed: %s", event.nodeId(), epoch,
                event.details().get("fencedBy"), removed);
        return retried(() -> fences.onNodeFenced(event.nodeId(), epoch, removed), "node-events fenced " + event.nodeId());
    }

    /**
     * A mount-done or node event of a lease epoch older than its node's newest is ignored (issue 19 fencing tokens: a
     * node back from a partition cannot overwrite newer state): counted and dead-lettered with the reason.
     */
    private void refuseStale(String topic, String nodeId, Long epoch) {
        if (fencing.book().stale(nodeId, epoch)) {
            throw staleEpoch(topic, nodeId, epoch);
        }
    }

    /** The stale record of {@code topic}, counted and logged: its reason names both epochs. */
    private StaleEpochException staleEpoch(String topic, String nodeId, Long epoch) {
        Long newest = fencing.book().epoch(nodeId);
        metrics.staleEpoch(topic);
        String reason = "stale lease epoch " + epoch + " < " + newest + " for " + nodeId;
        LOG.warnf("%s ignored: %s", topic, reason);
        return new StaleEpochException(reason);
    }

    /**
     * The handling of one record as a {@link Uni}: whatever {@code handling} throws (a bad header, a value
     * that breaks a parser, a bug) fails it, so the record is nacked to its dead-letter topic with the
     * reason and the partition moves on; nothing a record holds can escape to the channel.
     */
    private static Uni<Void> handled(java.util.function.Supplier<Uni<Void>> handling) {
        return Uni.createFrom().deferred(handling::get);
    }

    private Uni<Void> retried(java.util.function.Supplier<Uni<Void>> work, String what) {
        return retries.retried(work, what);
    }
}
