package io.csiorchestrator.claims.outbox;

import io.csiorchestrator.claims.KafkaTopics;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeCommand;
import io.quarkus.hibernate.reactive.panache.Panache;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.UUID;
import java.util.function.Supplier;
import org.hibernate.FlushMode;
import org.hibernate.reactive.mutiny.Mutiny;

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
     * The row: a prepared INSERT, not a managed entity (issue 36: no entity to create, persist, read back by identity
     * and dirty-check at the flush). No flush before it: nothing else in the session writes the outbox, and a flush here
     * would write the claim's pending changes early and again at the commit.
     *
     * <p>First as this writer's own ({@code direct}), inserted only if no earlier row of the same topic and key is
     * unpublished and another writer's or the relay's (the volume's lock, held by the caller, orders this check after
     * that row's commit); the row count says which. Otherwise, a second statement, as the relay's. An update count, not
     * a RETURNING: Hibernate's native select path (result discovery per execution) cost more than the statement.
     */
    private static final String INSERT_DIRECT = "INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, partition_no,"
            + " payload, created_at, traceparent, tracestate, writer, direct)"
            + " SELECT CAST(:ceId AS varchar), CAST(:ceType AS varchar), CAST(:ceTime AS timestamptz), CAST(:topic AS varchar),"
            + " CAST(:recordKey AS varchar), CAST(:partitionNo AS integer), CAST(:payload AS text), CAST(:ceTime AS timestamptz),"
            + " CAST(:traceparent AS varchar), CAST(:tracestate AS varchar), CAST(:writer AS bigint), true"
            + " WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.published_at IS NULL AND o.topic = CAST(:topic AS varchar)"
            + " AND o.record_key = CAST(:recordKey AS varchar) AND (NOT o.direct OR o.writer <> CAST(:writer AS bigint)))";
    private static final String INSERT_FOR_RELAY = "INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, partition_no,"
            + " payload, created_at, traceparent, tracestate, writer, direct)"
            + " VALUES (:ceId, :ceType, :ceTime, :topic, :recordKey, :partitionNo, :payload, :ceTime, :traceparent, :tracestate,"
            + " :writer, false)";

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
        OutboxRow row = new OutboxRow(0, ceId, ceType, ceTime, topic, event.recordKey(), partitionNo, payload, ceTime,
                traceparent, tracestate);
        return Panache.getSession().chain(s -> (mayBeDirect ? insert(s, INSERT_DIRECT, row) : Uni.createFrom().item(0))
                .chain(inserted -> {
                    if (inserted == 1) {
                        sends.inserted(batch, row);
                        return Uni.createFrom().voidItem();
                    }
                    if (batch != null) {
                        batch.toRelay = true;
                    }
                    return insert(s, INSERT_FOR_RELAY, row).replaceWithVoid();
                }));
    }

    private Uni<Integer> insert(Mutiny.Session s, String sql, OutboxRow row) {
        return s.createNativeQuery(sql)
                .setFlushMode(FlushMode.MANUAL)
                .setParameter("ceId", row.ceId())
                .setParameter("ceType", row.ceType())
                .setParameter("ceTime", row.ceTime())
                .setParameter("topic", row.topic())
                .setParameter("recordKey", row.recordKey())
                .setParameter("partitionNo", row.partitionNo())
                .setParameter("payload", row.payload())
                .setParameter("traceparent", row.traceparent())
                .setParameter("tracestate", row.tracestate())
                .setParameter("writer", writer.key())
                .executeUpdate();
    }
}
