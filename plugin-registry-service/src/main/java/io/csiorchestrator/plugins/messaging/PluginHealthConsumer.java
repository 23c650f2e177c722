package io.csiorchestrator.plugins.messaging;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.plugins.PluginRegistry;
import io.csiorchestrator.plugins.config.RegistryConfig;
import io.csiorchestrator.plugins.metrics.RegistryMetrics;
import io.csiorchestrator.support.TransientFailures;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.eclipse.microprofile.reactive.messaging.Incoming;
import org.jboss.logging.Logger;

/**
 * Reads {@code plugin-health}. A record that is not a valid report (CloudEvents headers that break
 * {@link CloudEventHeaders#requireValid}, not JSON, a missing or invalid field, a hostile id, a key that
 * does not match its body) fails with a {@link MalformedEventException} (and so does anything else
 * reading one record throws): the channel's dead-letter-queue strategy sends it to
 * {@code <prefix>plugin-health-dead-letter} with the exception message as {@code dead-letter-reason},
 * and the next record is processed. The database being away (unreachable, restarting, failing over:
 * {@link TransientFailures}) is waited out: the report is retried with backoff (200 ms up to
 * {@code csi.registry.report-retry-max-backoff}) for as long as that lasts, so no valid report is
 * dead-lettered by an outage. Any other failure is retried {@value #OTHER_FAILURE_RETRIES} times, then
 * dead-lettered.
 */
@ApplicationScoped
public class PluginHealthConsumer {

    private static final Logger LOG = Logger.getLogger(PluginHealthConsumer.class);
    private static final String EVENT = EventType.PLUGIN_HEALTH.displayName();
    /** How many times a failure other than the database being away is retried before the report is dead-lettered. */
    static final int OTHER_FAILURE_RETRIES = 8;

    @Inject
    PluginRegistry registry;
    @Inject
    RegistryMetrics metrics;
    @Inject
    RegistryConfig config;
    @Inject
    io.csiorchestrator.plugins.lease.LeaseAuthority leases;
    @Inject
    io.csiorchestrator.support.security.RecordAuthenticity authenticity;

    @Incoming("plugin-health")
    public Uni<Void> consume(ConsumerRecord<String, String> record) {
        // Whatever the handling of one record throws fails its Uni: the record is dead-lettered with the
        // reason and the partition moves on (nothing escapes to the channel).
        return Uni.createFrom().deferred(() -> handle(record));
    }

    private Uni<Void> handle(ConsumerRecord<String, String> record) {
        PluginHealth report;
        try {
            report = read(record);
            // a node reports its own plugins only (issue 20 item 3): signed by node:<nodeId>, else dead-lettered
            authenticity.requireNode(record, EVENT, report.nodeId());
        } catch (RuntimeException e) {
            LOG.warnf("dead-lettering %s record %s-%d@%d: %s", EVENT, record.topic(), record.partition(),
                    record.offset(), e.getMessage());
            metrics.report(RegistryMetrics.MALFORMED);
            return Uni.createFrom().failure(e);
        }
        java.util.Optional<String> stale = leases.staleReport(report.nodeId(), report.leaseEpoch());
        if (stale.isPresent()) {
            // a node back from a partition must not overwrite the state of its newer epoch (issue 19 item 5)
            LOG.warnf("dead-lettering %s record %s-%d@%d: %s", EVENT, record.topic(), record.partition(), record.offset(),
                    stale.get());
            return Uni.createFrom().failure(new StaleEpochException(stale.get()));
        }
        Instant eventTime = eventTime(record);
        // The trace of this record (SmallRye's "<topic> process" span, child of the producer's traceparent):
        // kept here, as retries with backoff may run the publication on another thread.
        io.opentelemetry.context.Context trace = io.opentelemetry.context.Context.current();
        Duration maxBackoff = config.reportRetryMaxBackoff();
        int[] otherFailures = {0};
        return registry.record(report, eventTime, trace)
                .onFailure(failure -> tryAgain(failure, otherFailures, report))
                .retry().withBackOff(Duration.ofMillis(200), maxBackoff).indefinitely()
                .onFailure().invoke(failure -> metrics.report(failure instanceof MalformedEventException
                        ? RegistryMetrics.MALFORMED : RegistryMetrics.FAILED))
                .invoke(outcome -> {
                    metrics.report(RegistryMetrics.outcome(outcome));
                    LOG.debugf("%s of plugin %s on node %s: %s", EVENT, report.pluginId(), report.nodeId(), outcome);
                })
                .replaceWithVoid();
    }

    /**
     * Whether recording {@code report} is tried again after {@code failure}; only a try again is counted
     * in {@code csi.plugin.health.report.retries}. The database being away: always. A malformed report:
     * never. Any other failure: {@value #OTHER_FAILURE_RETRIES} times, then the report is dead-lettered.
     */
    private boolean tryAgain(Throwable failure, int[] otherFailures, PluginHealth report) {
        if (failure instanceof MalformedEventException) {
            return false;
        }
        boolean away = TransientFailures.isTransient(failure);
        if (!away && ++otherFailures[0] > OTHER_FAILURE_RETRIES) {
            LOG.warnf("recording %s of plugin %s on node %s failed %d times; dead-lettering it: %s", EVENT, report.pluginId(),
                    report.nodeId(), otherFailures[0], failure.toString());
            return false;
        }
        metrics.retry(away);
        LOG.warnf("recording %s of plugin %s on node %s failed, retrying%s: %s", EVENT, report.pluginId(),
                report.nodeId(), away ? " until the database is back" : "", failure.toString());
        return true;
    }

    /**
     * When the report was produced ({@link CloudEventHeaders#eventTime}); null when neither its
     * {@code ce_time} nor the record's timestamp is usable.
     */
    static Instant eventTime(ConsumerRecord<String, String> record) {
        return CloudEventHeaders.eventTime(record.headers(), record.timestamp(), Instant.now()).orElse(null);
    }

    /** The valid report in {@code record}, or a {@link MalformedEventException} naming every problem. */
    static PluginHealth read(ConsumerRecord<String, String> record) {
        CloudEventHeaders.requireValid(record.headers(), EventType.PLUGIN_HEALTH);
        PluginHealth report = EventCodec.decode(PluginHealth.class, record.value());
        if (!report.recordKey().equals(record.key())) {
            throw MalformedEventException.single(EVENT, "(key)", record.key(),
                    "must be pluginId/nodeId '" + report.recordKey() + "'");
        }
        return report;
    }
}
