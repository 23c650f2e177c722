package io.csiorchestrator.claims.store;

import io.quarkus.hibernate.reactive.panache.PanacheEntityBase;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/** One event waiting to be (or already) published, written in the transaction of the change that caused it. */
@Entity
@Table(name = "outbox")
public class OutboxEntity extends PanacheEntityBase {

    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    public Long seq;
    @Column(name = "ce_id")
    public String ceId;
    @Column(name = "ce_type")
    public String ceType;
    @Column(name = "ce_time")
    public Instant ceTime;
    public String topic;
    @Column(name = "record_key")
    public String recordKey;
    /**
     * Node commands: the node's partition when the row was committed (set = "route by node"); the relay sends
     * to the node's partition under the topic's partition count at send time.
     */
    @Column(name = "partition_no")
    public Integer partitionNo;
    public String payload;
    @Column(name = "created_at")
    public Instant createdAt;
    @Column(name = "published_at")
    public Instant publishedAt;
    /** The W3C trace context of the input that caused this event (null: none; the relay starts a new trace). */
    public String traceparent;
    public String tracestate;
}
