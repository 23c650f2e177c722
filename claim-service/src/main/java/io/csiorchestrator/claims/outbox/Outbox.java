package io.csiorchestrator.claims.outbox;

import io.csiorchestrator.claims.KafkaTopics;
import io.csiorchestrator.claims.Tx;
import io.csiorchestrator.claims.store.ClaimStore;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Transactions;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeCommand;
import io.smallrye.mutiny.Uni;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.UUID;
import java.util.function.Supplier;

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
    @Inject
    Transactions transactions;

    /**
     * The row: a prepared INSERT on the session's connection ({@link SessionSql}), not a managed entity and not a
     * Hibernate native query (issue 36: no entity to create, persist, read back by identity and dirty-check at the flush;
     * no query plan and parameter mapping per execution). No flush before it: nothing else in the session writes the
     * outbox, and a flush here would write the claim's pending changes early and again at the commit.
     *
     * <p>First as this writer's own ({@code direct}), inserted only if no earlier row of the same topic and key is
     * unpublished and another writer's or the relay's (the volume's lock, held by the caller, orders this check after
     * that row's commit); the row count says which. Otherwise, a second statement, as the relay's. An update count, not
     * a RETURNING: Hibernate's native select path (result discovery per execution) cost more than the statement.
     */
    private static final String INSERT_DIRECT = "INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, partition_no,"
            + " payload, created_at, traceparent, tracestate, writer, direct)"
            + " SELECT CAST($1 AS varchar), CAST($2 AS varchar), CAST($3 AS timestamptz), CAST($4 AS varchar),"
            + " CAST($5 AS varchar), CAST($6 AS integer), CAST($7 AS text), CAST($3 AS timestamptz),"
            + " CAST($8 AS varchar), CAST($9 AS varchar), CAST($10 AS bigint), true"
            + " WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.published_at IS NULL AND o.topic = CAST($4 AS varchar)"
            + " AND o.record_key = CAST($5 AS varchar) AND (NOT o.direct OR o.writer <> CAST($10 AS bigint)))";
    private static final String INSERT_FOR_RELAY = "INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, partition_no,"
            + " payload, created_at, traceparent, tracestate, writer, direct)"
            + " VALUES ($1, $2, $3, $4, $5, $6, $7, $3, $8, $9, $10, false)";

    /**
     * Runs {@code work} in a transaction whose outbox rows this process sends itself once it committed; the relay is
     * signalled only when a row was left to it. Its claims and volumes are the transaction's {@link ClaimStore}, written
     * before the commit. Nested in another such transaction, {@code work} joins it (as a nested Transactions.inTransaction does).
     */
    public <T> Uni<T> inTransaction(Supplier<Uni<T>> work) {
        return Uni.createFrom().deferred(() -> {
            Context context = Vertx.currentContext();
            if (context == null || OutboxBatch.current() != null) {
                return transactions.inTransaction(() -> ClaimStore.within(work));
            }
            OutboxBatch batch = OutboxBatch.open(context);
            return transactions.inTransaction(() -> ClaimStore.within(work))
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
        return (mayBeDirect ? insert(INSERT_DIRECT, row) : Uni.createFrom().item(0))
                .chain(inserted -> {
                    if (inserted == 1) {
                        sends.inserted(batch, row);
                        return Uni.createFrom().voidItem();
                    }
                    if (batch != null) {
                        batch.toRelay = true;
                    }
                    return insert(INSERT_FOR_RELAY, row).replaceWithVoid();
                });
    }

    private Uni<Integer> insert(String sql, OutboxRow row) {
        return SessionSql.update(sql, row.ceId(), row.ceType(), row.ceTime(), row.topic(), row.recordKey(), row.partitionNo(),
                row.payload(), row.traceparent(), row.tracestate(), writer.key());
    }
}
