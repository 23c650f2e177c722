package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;

/**
 * A worker asks for (or renews) its node's lease. Topic {@code node-lease-requests}, key: node id. Sent at start and
 * every renew interval (the granted ttl / 6). The worker counts the lease's expiry from the moment it sent the
 * request that the grant answers, on its own monotonic clock, so it always lapses before the registry's view.
 *
 * @param requestId unique per request; the grant names it in {@link NodeLease#requestId()}
 * @param heldEpoch the epoch the worker holds and wants renewed; 0 if it holds none (first request, or after a lapse)
 * @param sentAt    the worker's wall-clock time of sending (for operators; the arithmetic uses the monotonic clock)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record NodeLeaseRequested(
        String requestId,
        String nodeId,
        long heldEpoch,
        Instant sentAt) implements ContractEvent {

    @Override
    public EventType eventType() {
        return EventType.NODE_LEASE_REQUESTED;
    }

    @Override
    public String recordKey() {
        return nodeId;
    }

    @Override
    public void checkFields(Violations v) {
        v.text("requestId", requestId, 200);
        v.id("nodeId", nodeId);
        if (heldEpoch < 0) {
            v.add("heldEpoch", heldEpoch, "must not be negative");
        }
        v.required("sentAt", sentAt);
    }
}
