-- Observability (issue 7): when a claim / its release was requested (the claim-requested event's time,
-- its CloudEvents ce_time or else the Kafka record timestamp) for the claim and release latency timers,
-- and the trace context of the input that caused an outbox row, continued by the relay's publish span.
ALTER TABLE claims ADD COLUMN requested_at TIMESTAMPTZ;
ALTER TABLE claims ADD COLUMN release_requested_at TIMESTAMPTZ;
ALTER TABLE outbox ADD COLUMN traceparent VARCHAR(64);
ALTER TABLE outbox ADD COLUMN tracestate VARCHAR(512);
