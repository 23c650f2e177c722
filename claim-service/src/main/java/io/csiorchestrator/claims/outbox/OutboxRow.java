package io.csiorchestrator.claims.outbox;

import io.vertx.mutiny.sqlclient.Row;
import java.time.Instant;
import java.time.OffsetDateTime;

/**
 * One outbox row as it is sent: read back by the relay ({@link #of(Row)}) or kept in memory by the process that wrote
 * it ({@link DirectSends}; {@code seq} 0 there: its writer knows it by its ce_id). {@code partitionNo} is non-null for
 * node commands (their partition is the node's under the topic's partition count at send time).
 */
record OutboxRow(long seq, String ceId, String ceType, Instant ceTime, String topic, String recordKey, Integer partitionNo,
                 String payload, Instant createdAt, String traceparent, String tracestate) {

    /** The queue one topic and key's rows are sent in, in commit order. */
    String orderKey() {
        return orderKey(topic, recordKey);
    }

    static String orderKey(String topic, String recordKey) {
        return topic + '\u0000' + recordKey;
    }

    static OutboxRow of(Row row) {
        OffsetDateTime created = row.getOffsetDateTime("created_at");
        return new OutboxRow(row.getLong("seq"), row.getString("ce_id"), row.getString("ce_type"),
                row.getOffsetDateTime("ce_time").toInstant(), row.getString("topic"), row.getString("record_key"),
                row.getInteger("partition_no"), row.getString("payload"), created == null ? null : created.toInstant(),
                row.getString("traceparent"), row.getString("tracestate"));
    }
}
