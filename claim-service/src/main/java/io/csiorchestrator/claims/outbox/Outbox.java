package io.csiorchestrator.claims.outbox;

import io.csiorchestrator.claims.KafkaTopics;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeCommand;
import io.quarkus.hibernate.reactive.panache.Panache;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.UUID;
import org.hibernate.FlushMode;

/**
 * Writes an event into the outbox table in the caller's transaction: it is published by the
 * {@link OutboxRelay} only once that transaction committed, with the ce_id kept here.
 */
@ApplicationScoped
public class Outbox {

    @Inject
    KafkaTopics topics;

    /**
     * The row: one prepared INSERT, not a managed entity (issue 36: no entity to create, persist, read back by
     * identity and dirty-check at the flush). No flush before it: nothing else in the session writes the outbox, and
     * a flush here would write the claim's pending changes early and again at the commit.
     */
    private static final String INSERT = "INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, partition_no,"
            + " payload, created_at, traceparent, tracestate)"
            + " VALUES (:ceId, :ceType, :ceTime, :topic, :recordKey, :partitionNo, :payload, :ceTime, :traceparent, :tracestate)";

    /**
     * Adds {@code event}; {@code cause} (nullable) is the transaction's input, whose trace context the
     * relay's publish span continues.
     */
    public Uni<Void> add(ContractEvent event, Tx cause) {
        String ceId = UUID.randomUUID().toString();
        String ceType = event.eventType().cloudEventType();
        Instant ceTime = Instant.now();
        String topic = topics.name(event.eventType().topic());
        Integer partitionNo = event instanceof NodeCommand command ? topics.nodeCommandPartition(command.nodeId()) : null;
        String payload = EventCodec.encodeToString(event);
        return Panache.getSession().chain(s -> s.createNativeQuery(INSERT)
                .setFlushMode(FlushMode.MANUAL)
                .setParameter("ceId", ceId)
                .setParameter("ceType", ceType)
                .setParameter("ceTime", ceTime)
                .setParameter("topic", topic)
                .setParameter("recordKey", event.recordKey())
                .setParameter("partitionNo", partitionNo)
                .setParameter("payload", payload)
                .setParameter("traceparent", cause == null ? null : cause.traceparent())
                .setParameter("tracestate", cause == null ? null : cause.tracestate())
                .executeUpdate())
                .replaceWithVoid();
    }
}
