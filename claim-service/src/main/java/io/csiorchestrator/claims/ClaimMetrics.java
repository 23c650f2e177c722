package io.csiorchestrator.claims;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import jakarta.annotation.PostConstruct;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The claim-service's own meters (Micrometer, rendered by {@code /q/metrics} in Prometheus format).
 * Tags are low-cardinality only: claim mode, outcome, decision, reason code. Never a volume,
 * allocation or node id.
 *
 * <ul>
 *   <li>{@code csi.claim.latency} {mode, outcome}: claim requested (event time) → ready / failed /
 *       rejected committed;</li>
 *   <li>{@code csi.claim.release.latency} {outcome}: release requested → released committed;</li>
 *   <li>{@code csi.claim.decisions} {decision, reason}: claim rule decisions;</li>
 *   <li>{@code csi.outbox.pending}: outbox rows not yet acknowledged by the broker;</li>
 *   <li>{@code csi.outbox.publish}: outbox row written (its transaction) → broker ack;</li>
 *   <li>{@code csi.claim.consumer.retries} {failure}: handling a record failed and is tried again
 *       ({@code transient}: the database away, retried for as long as it lasts; {@code other}: within
 *       the retry budget, then dead-lettered).</li>
 *   <li>{@code csi.claim.consumer.batch.records} {channel}: records per poll of claim-requested and mount-done, each
 *       poll handled together (the valid ones in one transaction);</li>
 *   <li>{@code csi.claims.stale.epoch} {topic} (Prometheus {@code csi_claims_stale_epoch_total}): mount-done and
 *       node-events records of a lease epoch older than their node's newest, ignored and dead-lettered (issue 19).</li>
 * </ul>
 */
@ApplicationScoped
public class ClaimMetrics {

    public static final String CLAIM_LATENCY = "csi.claim.latency";
    public static final String RELEASE_LATENCY = "csi.claim.release.latency";
    public static final String DECISIONS = "csi.claim.decisions";
    public static final String OUTBOX_PENDING = "csi.outbox.pending";
    public static final String OUTBOX_PUBLISH = "csi.outbox.publish";
    public static final String CONSUMER_RETRIES = "csi.claim.consumer.retries";
    public static final String CONSUMER_BATCH = "csi.claim.consumer.batch.records";
    public static final String REPAIRS = "csi.claims.repairs";
    public static final String STALE_EPOCH = "csi.claims.stale.epoch";
    public static final String REPAIRS_DEFERRED = "csi.claims.repairs.deferred";
    public static final String VOLUME_LISTINGS = "csi.claims.volume.listings";
    public static final String VOLUMES_UNLISTED = "csi.claims.volumes.unlisted";

    /** Histogram buckets for every latency timer here: 5 ms .. 60 s. */
    public static final Duration[] BUCKETS = {
            Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50),
            Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
            Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30),
            Duration.ofSeconds(60)};

    @Inject
    MeterRegistry registry;

    private final AtomicLong outboxPending = new AtomicLong();
    private Gauge pendingGauge;

    @PostConstruct
    void register() {
        pendingGauge = Gauge.builder(OUTBOX_PENDING, outboxPending, AtomicLong::get)
                .description("Outbox rows committed and not yet acknowledged by the broker")
                .register(registry);
    }

    /**
     * The gauge goes with this bean. Quarkus' registry is Micrometer's global one, whose meters outlive an application
     * that stops and starts again in one JVM (its tests do, between test profiles): left there, the gauge would keep
     * reading this bean's state, and registering it again returns the old one.
     */
    @PreDestroy
    void unregister() {
        if (pendingGauge != null) {
            registry.remove(pendingGauge);
        }
    }

    private Timer timer(String name, String description, String... tags) {
        return Timer.builder(name).description(description).tags(tags)
                .serviceLevelObjectives(BUCKETS)
                .minimumExpectedValue(BUCKETS[0]).maximumExpectedValue(BUCKETS[BUCKETS.length - 1])
                .register(registry);
    }

    /** Handling a record failed and is tried again; {@code transientFailure}: the database is away. */
    public void consumerRetry(boolean transientFailure) {
        Counter.builder(CONSUMER_RETRIES).description("Record handling retried, by failure kind (transient: the database away)")
                .tags("failure", transientFailure ? "transient" : "other").register(registry).increment();
    }

    /** A poll of {@code records} records of {@code channel}, handled together. */
    public void batch(String channel, int records) {
        io.micrometer.core.instrument.DistributionSummary.builder(CONSUMER_BATCH)
                .description("Records per poll of an input handled together (the valid ones in one transaction)")
                .tags("channel", channel).register(registry).record(records);
    }

    /** The largest poll of {@code channel} handled together so far (0 before the first). */
    public double largestBatch(String channel) {
        io.micrometer.core.instrument.DistributionSummary d = registry.find(CONSUMER_BATCH).tags("channel", channel).summary();
        return d == null ? 0 : d.max();
    }

    /** How often handling a record was retried for {@code transient} (or other) failures. */
    public double consumerRetries(boolean transientFailure) {
        Counter c = registry.find(CONSUMER_RETRIES).tags("failure", transientFailure ? "transient" : "other").counter();
        return c == null ? 0 : c.count();
    }

    /** A claim (mode read / write) ended its publish side with {@code outcome} (ready / failed / rejected). */
    public void claimLatency(String mode, String outcome, Instant requestedAt) {
        if (requestedAt == null) {
            return;
        }
        timer(CLAIM_LATENCY, "Claim requested (event time) to ready / failed / rejected committed",
                "mode", mode, "outcome", outcome).record(nonNegative(Duration.between(requestedAt, Instant.now())));
    }

    /** A release (requested at {@code requestedAt}) ended with {@code outcome} (released / abandoned). */
    public void releaseLatency(String outcome, Instant requestedAt) {
        if (requestedAt == null) {
            return;
        }
        timer(RELEASE_LATENCY, "Release requested (event time) to released committed", "outcome", outcome)
                .record(nonNegative(Duration.between(requestedAt, Instant.now())));
    }

    /** A claim rule decision: {@code decision} accepted / rejected, {@code reason} a reason code. */
    public void staleEpoch(String topic) {
        Counter.builder(STALE_EPOCH).description("Records of a lease epoch older than their node's newest, ignored and dead-lettered")
                .tags("topic", topic).register(registry).increment();
    }

    public void decision(String decision, String reason) {
        Counter.builder(DECISIONS).description("Claim decisions by decision and reason code")
                .tags("decision", decision, "reason", reason).register(registry).increment();
    }

    /** Anti-entropy started a repair of {@code kind} (orphan-unmounted / mount-redriven); counted once committed. */
    public void repair(String kind) {
        Counter.builder(REPAIRS).description("Anti-entropy repairs started, by kind")
                .tags("kind", kind).register(registry).increment();
    }

    /** Anti-entropy put off a due repair of {@code kind}: the repair rate limit was reached. */
    public void repairDeferred(String kind) {
        Counter.builder(REPAIRS_DEFERRED).description("Anti-entropy repairs put off by the rate limit, by kind")
                .tags("kind", kind).register(registry).increment();
    }

    /** A ListVolumes comparison of one plugin ended (issue 14): {@code complete} or {@code failed} (given up). */
    public void volumeListing(String outcome) {
        Counter.builder(VOLUME_LISTINGS).description("ListVolumes comparisons of the volumes created through the services,"
                + " by outcome").tags("outcome", outcome).register(registry).increment();
    }

    /** Volumes marked as not listed by their plugin ({@code marked}) or listed again ({@code cleared}). */
    public void unlisted(String change, int volumes) {
        Counter c = Counter.builder(VOLUMES_UNLISTED).description("Volumes created through the services that their"
                + " plugin's ListVolumes stopped listing (marked) or listed again (cleared)").tags("change", change)
                .register(registry);
        if (volumes > 0) {
            c.increment(volumes);
        }
    }

    /** An outbox row was acknowledged by the broker {@code elapsed} after it was written. */
    public void outboxPublished(Duration elapsed) {
        timer(OUTBOX_PUBLISH, "Outbox row written to broker ack").record(nonNegative(elapsed));
    }

    /** The current number of unpublished outbox rows. */
    public void outboxPending(long rows) {
        outboxPending.set(rows);
    }

    private static Duration nonNegative(Duration d) {
        return d.isNegative() ? Duration.ZERO : d;
    }
}
