package io.csiorchestrator.plugins.metrics;

import io.csiorchestrator.plugins.PluginRegistry;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.quarkus.runtime.Startup;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The registry's own meters (Prometheus at {@code /q/metrics}). Tags are low-cardinality only: the
 * outcome of a report, the kind of an expiry; never a node id.
 */
@ApplicationScoped
@Startup // every series is there (at 0) from the start, not from the first report
public class RegistryMetrics {

    /** {@code plugin-health} records handled, tag {@code outcome} (see {@link #OUTCOMES}). */
    public static final String REPORTS = "csi.plugin.health.reports";
    /** From a report's event time ({@code ce_time}, else the record timestamp) to its state committed, tag {@code outcome}. */
    public static final String REPORT_LATENCY = "csi.plugin.health.report.latency";
    /** Tries of recording a report again after a failure, tag {@code failure} = {@code transient} (the database away) / {@code other}. */
    public static final String REPORT_RETRIES = "csi.plugin.health.report.retries";
    /** Instances the expiry sweep silenced or removed, tag {@code kind} = {@code silenced} / {@code removed}. */
    public static final String INSTANCES_EXPIRED = "csi.plugin.instances.expired";

    /** A record that is not a valid report: dead-lettered at once. */
    public static final String MALFORMED = "malformed";
    /** A valid report that could not be recorded after every retry: dead-lettered. */
    public static final String FAILED = "failed";
    public static final String SILENCED = "silenced";
    public static final String REMOVED = "removed";

    /** Every outcome tag value: the {@link PluginRegistry.Outcome}s in lower case, then malformed and failed. */
    public static final java.util.List<String> OUTCOMES = java.util.List.of(
            outcome(PluginRegistry.Outcome.CHANGED), outcome(PluginRegistry.Outcome.HEARTBEAT),
            outcome(PluginRegistry.Outcome.DUPLICATE), outcome(PluginRegistry.Outcome.STALE), MALFORMED, FAILED);

    /** Histogram buckets of the report latency: a heartbeat every 30 s, a TTL of 90 s. */
    static final Duration[] LATENCY_BUCKETS = {
            Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50),
            Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
            Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30),
            Duration.ofSeconds(60)};

    private final Map<String, Counter> reports = new ConcurrentHashMap<>();
    private final Map<String, Timer> latencies = new ConcurrentHashMap<>();
    private final Counter transientRetries;
    private final Counter otherRetries;
    private final Counter silenced;
    private final Counter removed;
    private final Clock clock;

    @Inject
    public RegistryMetrics(MeterRegistry registry, Clock clock) {
        this.clock = clock;
        for (String outcome : OUTCOMES) {
            reports.put(outcome, Counter.builder(REPORTS).tag("outcome", outcome)
                    .description("plugin-health records handled, by outcome").register(registry));
        }
        for (PluginRegistry.Outcome outcome : PluginRegistry.Outcome.values()) {
            latencies.put(outcome(outcome), Timer.builder(REPORT_LATENCY).tag("outcome", outcome(outcome))
                    .description("from a plugin-health report's event time to its state committed in the registry")
                    .serviceLevelObjectives(LATENCY_BUCKETS)
                    .minimumExpectedValue(LATENCY_BUCKETS[0])
                    .maximumExpectedValue(LATENCY_BUCKETS[LATENCY_BUCKETS.length - 1])
                    .register(registry));
        }
        transientRetries = Counter.builder(REPORT_RETRIES).tag("failure", "transient")
                .description("plugin-health reports recorded again after a failure (transient: the database away)")
                .register(registry);
        otherRetries = Counter.builder(REPORT_RETRIES).tag("failure", "other")
                .description("plugin-health reports recorded again after a failure (transient: the database away)")
                .register(registry);
        silenced = Counter.builder(INSTANCES_EXPIRED).tag("kind", SILENCED)
                .description("plugin instances the expiry sweep silenced (no heartbeat within the TTL) or removed")
                .register(registry);
        removed = Counter.builder(INSTANCES_EXPIRED).tag("kind", REMOVED)
                .description("plugin instances the expiry sweep silenced (no heartbeat within the TTL) or removed")
                .register(registry);
    }

    public static String outcome(PluginRegistry.Outcome outcome) {
        return outcome.name().toLowerCase(Locale.ROOT);
    }

    /** Counts one handled record; {@code outcome} is one of {@link #OUTCOMES}. */
    public void report(String outcome) {
        Counter counter = reports.get(outcome);
        if (counter == null) {
            throw new IllegalArgumentException("unknown outcome " + outcome);
        }
        counter.increment();
    }

    /** Recording a report failed and is tried again; {@code transientFailure}: the database is away. */
    public void retry(boolean transientFailure) {
        (transientFailure ? transientRetries : otherRetries).increment();
    }

    /** How many times recording a report was tried again after a transient (or other) failure. */
    public double retries(boolean transientFailure) {
        return (transientFailure ? transientRetries : otherRetries).count();
    }

    /** The report's state committed now (for a duplicate or stale report: decided now). */
    public void committed(PluginRegistry.Outcome outcome, Instant eventTime) {
        if (eventTime == null) {
            return;
        }
        Duration latency = Duration.between(eventTime, clock.instant());
        // A producer's clock ahead of ours would give a negative latency: count it as none.
        latencies.get(outcome(outcome)).record(latency.isNegative() ? Duration.ZERO : latency);
    }

    /** What one sweep of one plugin did, counted after its transaction committed. */
    public void expired(int silencedInstances, int removedInstances) {
        silenced.increment(silencedInstances);
        removed.increment(removedInstances);
    }
}
