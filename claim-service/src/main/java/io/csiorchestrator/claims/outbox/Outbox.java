package io.csiorchestrator.claims.outbox;

import io.csiorchestrator.claims.KafkaTopics;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.claims.store.OutboxEntity;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeCommand;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.UUID;

/**
 * Writes an event into the outbox table in the caller's transaction: it is published by the
 * {@link OutboxRelay} only once that transaction committed, with the ce_id kept here.
 */
@ApplicationScoped
public class Outbox {

    @Inject
    KafkaTopics topics;

    /**
     * Adds {@code event}; {@code cause} (nullable) is the transaction's input, whose trace context the
     * relay's publish span continues.
     */
    public Uni<Void> add(ContractEvent event, Tx cause) {
        OutboxEntity row = new OutboxEntity();
        row.ceId = UUID.randomUUID().toString();
        row.ceType = event.eventType().cloudEventType();
        row.ceTime = Instant.now();
        row.topic = topics.name(event.eventType().topic());
        row.recordKey = event.recordKey();
        row.partitionNo = event instanceof NodeCommand command ? topics.nodeCommandPartition(command.nodeId()) : null;
        row.payload = EventCodec.encodeToString(event);
        row.createdAt = row.ceTime;
        row.traceparent = cause == null ? null : cause.traceparent();
        row.tracestate = cause == null ? null : cause.tracestate();
        return row.persist().replaceWithVoid();
    }
}
