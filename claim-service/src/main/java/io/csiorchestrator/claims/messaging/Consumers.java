package io.csiorchestrator.claims.messaging;

import io.csiorchestrator.claims.ClaimService;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.events.CloudEventHeaders;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.context.Context;
import java.time.Instant;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.PluginStatus;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.eclipse.microprofile.reactive.messaging.Incoming;
import org.jboss.logging.Logger;

/**
 * The three inputs. Each record is decoded with the contract's codec: a malformed record fails with
 * a {@link MalformedEventException}, which nacks it to the topic's dead-letter topic (reason header
 * = the exception's message) and the partition moves on. A failure of the database is retried with
 * backoff for {@link #RETRY_BUDGET} before the record is dead-lettered, so nothing stalls a partition either.
 */
@ApplicationScoped
public class Consumers {

    private static final Logger LOG = Logger.getLogger(Consumers.class);
    /**
     * How long a record whose handling fails for another reason than being malformed (the database down,
     * a lock timeout) is retried before it is dead-lettered with the reason: below the connector's
     * 60 s limit for an unacknowledged record, so the channel stays healthy meanwhile.
     */
    static final Duration RETRY_BUDGET = Duration.ofSeconds(45);

    @Inject
    ClaimService claims;
    @Inject
    OpenTelemetry openTelemetry;

    @Incoming("claim-requested")
    public Uni<Void> onClaimRequested(ConsumerRecord<String, String> record) {
        // The record's span (extracted from its traceparent by the connector) is current now, not later.
        Tx tx = Tx.causedBy(openTelemetry, Context.current());
        Instant requestedAt = eventTime(record, Instant.now());
        return Uni.createFrom().item(() -> EventCodec.decode(ClaimRequested.class, record.value()))
                .chain(request -> retried(() -> claims.onClaimRequested(request, requestedAt, tx),
                        "claim-requested " + request.requestId()));
    }

    @Incoming("mount-done")
    public Uni<Void> onMountDone(ConsumerRecord<String, String> record) {
        Tx tx = Tx.causedBy(openTelemetry, Context.current());
        return Uni.createFrom().item(() -> EventCodec.decode(MountDone.class, record.value()))
                .chain(done -> retried(() -> claims.onMountDone(done, tx), "mount-done " + done.commandId()));
    }

    /**
     * When the event happened: its CloudEvents {@code ce_time} header when present and sane (parseable,
     * not in the future beyond {@link CloudEventHeaders#CLOCK_SKEW}, not older than the record's own timestamp by more than
     * {@link CloudEventHeaders#MAX_CE_TIME_AGE}), else the record's timestamp, else {@code now}.
     */
    static Instant eventTime(ConsumerRecord<?, ?> record, Instant now) {
        return CloudEventHeaders.eventTime(record.headers(), record.timestamp(), now).orElse(now);
    }

    @Incoming("plugin-status")
    public Uni<Void> onPluginStatus(ConsumerRecord<String, String> record) {
        return Uni.createFrom().item(() -> {
                    if (record.key() == null) {
                        throw MalformedEventException.single("plugin-status", "(key)", null, "a plugin-status record needs the plugin id as key");
                    }
                    return record.value() == null ? null : EventCodec.decode(PluginStatus.class, record.value());
                })
                .chain(status -> {
                    if (status != null && !status.pluginId().equals(record.key())) {
                        throw MalformedEventException.single("plugin-status", "pluginId", status.pluginId(),
                                "does not match the record key '" + record.key() + "'");
                    }
                    return retried(() -> claims.onPluginStatus(record.key(), status), "plugin-status " + record.key());
                });
    }

    private static Uni<Void> retried(java.util.function.Supplier<Uni<Void>> work, String what) {
        return Uni.createFrom().<Void>deferred(work::get).onFailure(t -> !(t instanceof MalformedEventException))
                .invoke(t -> LOG.warnf("%s failed, retrying: %s", what, t.toString()))
                .onFailure(t -> !(t instanceof MalformedEventException))
                .retry().withBackOff(Duration.ofMillis(100), Duration.ofSeconds(5)).expireIn(RETRY_BUDGET.toMillis());
    }
}
