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
import java.util.function.Supplier;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import org.hibernate.FlushMode;

/**
 * Writes an event into the outbox table in the caller's transaction. Inside {@link #inTransaction} the row is sent by
 * this process right after that transaction committed ({@link DirectSends}: publish after commit, issue 36 item 2)
 * unless an earlier row of its topic and key is still unpublished and not this writer's own; such a row, and any row
 * written outside {@link #inTransaction}, is published by the {@link OutboxRelay}. Either way with the ce_id kept here.
 */
@ApplicationScoped
public class Outbox {

    @Inject
    KafkaTopics topics;
    @Inject
    OutboxWriter writer;
    @Inject
    DirectSends sends;
    @Inject
    OutboxRelay relay;

    /**
     * The row: one prepared INSERT, not a managed entity (issue 36: no entity to create, persist, read back by
     * identity and dirty-check at the flush). No flush before it: nothing else in the session writes the outbox, and
     * a flush here would write the claim's pending changes early and again at the commit. {@code direct} is decided in
     * the same statement: this writer sends it itself unless an earlier row of the same topic and key waits for another
     * writer or for the relay (the volume's lock, held by the caller, orders this check after that row's commit).
     */
    private static final String INSERT = "INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, partition_no,"
            + " payload, created_at, traceparent, tracestate, writer, direct)"
            + " VALUES (:ceId, :ceType, :ceTime, :topic, :recordKey, :partitionNo, :payload, :ceTime, :traceparent, :tracestate,"
            + " :writer, CAST(:direct AS boolean) AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.published_at IS NULL"
            + " AND o.topic = :topic AND o.record_key = :recordKey AND (NOT o.direct OR o.writer <> :writer)))"
            + " RETURNING seq, direct";

    /**
     * Runs {@code work} in a transaction whose outbox rows this process sends itself once it committed; the relay is
     * signalled only when a row was left to it. Nested in another such transaction, {@code work} joins it (as
     * Panache's does).
     */
    public <T> Uni<T> inTransaction(Supplier<Uni<T>> work) {
        return Uni.createFrom().deferred(() -> {
            Context context = Vertx.currentContext();
            if (context == null || OutboxBatch.current() != null) {
                return Panache.withTransaction(work);
            }
            OutboxBatch batch = OutboxBatch.open(context);
            return Panache.withTransaction(work)
                    .invoke(() -> {
                        sends.committed(batch);
                        if (batch.toRelay) {
                            relay.signal();
                        }
                    })
                    .onFailure().invoke(() -> sends.failed(batch))
                    .onCancellation().invoke(() -> sends.failed(batch))
                    .onTermination().invoke(() -> OutboxBatch.close(context, batch));
        });
    }

    /**
     * Adds {@code event}; {@code cause} (nullable) is the transaction's input, whose trace context the
     * publish span continues.
     */
    public Uni<Void> add(ContractEvent event, Tx cause) {
        String ceId = UUID.randomUUID().toString();
        String ceType = event.eventType().cloudEventType();
        Instant ceTime = Instant.now();
        String topic = topics.name(event.eventType().topic());
        Integer partitionNo = event instanceof NodeCommand command ? topics.nodeCommandPartition(command.nodeId()) : null;
        String payload = EventCodec.encodeToString(event);
        String traceparent = cause == null ? null : cause.traceparent();
        String tracestate = cause == null ? null : cause.tracestate();
        OutboxBatch batch = OutboxBatch.current();
        boolean mayBeDirect = batch != null && writer.held() && !relay.suspended()
                && !sends.handingOver(OutboxRow.orderKey(topic, event.recordKey()));
        return Panache.getSession().chain(s -> s.createNativeQuery(INSERT)
                .setFlushMode(FlushMode.MANUAL)
                .setParameter("ceId", ceId)
                .setParameter("ceType", ceType)
                .setParameter("ceTime", ceTime)
                .setParameter("topic", topic)
                .setParameter("recordKey", event.recordKey())
                .setParameter("partitionNo", partitionNo)
                .setParameter("payload", payload)
                .setParameter("traceparent", traceparent)
                .setParameter("tracestate", tracestate)
                .setParameter("writer", writer.key())
                .setParameter("direct", mayBeDirect)
                .getSingleResult())
                .invoke(result -> {
                    Object[] columns = (Object[]) result;
                    if (Boolean.TRUE.equals(columns[1])) {
                        sends.inserted(batch, new OutboxRow(((Number) columns[0]).longValue(), ceId, ceType, ceTime, topic,
                                event.recordKey(), partitionNo, payload, ceTime, traceparent, tracestate));
                    } else if (batch != null) {
                        batch.toRelay = true;
                    }
                })
                .replaceWithVoid();
    }
}
