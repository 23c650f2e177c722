package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;

/**
 * plugin-registry-service's word on a node's lease. Topic {@code node-leases}, compacted, key: node id (the newest
 * record of a node is its lease's current state). A renewal keeps the epoch; the first grant after a lapse or a
 * fence (or the very first) has a higher epoch. A {@code lapsed} or {@code fenced} epoch is never granted again.
 *
 * @param epoch             the lease's epoch, from 1; every node command and node report carries the epoch it was
 *                          issued or sent under (the fencing token)
 * @param state             valid, lapsed or fenced
 * @param requestId         the {@link NodeLeaseRequested} this grant answers; null for a lapse or a fence
 * @param ttlMillis         the lease's time to live, counted by the worker from its request's send time
 * @param fenceBudgetMillis the worker fences its mounts this long before its local expiry if not renewed
 * @param at                when the registry decided this (its wall clock, for operators)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record NodeLease(
        String nodeId,
        long epoch,
        NodeLeaseState state,
        String requestId,
        long ttlMillis,
        long fenceBudgetMillis,
        Instant at) implements ContractEvent {

    @Override
    public EventType eventType() {
        return EventType.NODE_LEASE;
    }

    @Override
    public String recordKey() {
        return nodeId;
    }

    public boolean valid() {
        return state == NodeLeaseState.VALID;
    }

    @Override
    public void checkFields(Violations v) {
        v.id("nodeId", nodeId);
        if (epoch < 1) {
            v.add("epoch", epoch, "must be at least 1");
        }
        v.required("state", state);
        v.optionalText("requestId", requestId, 200);
        if (ttlMillis < 1) {
            v.add("ttlMillis", ttlMillis, "must be at least 1");
        }
        if (fenceBudgetMillis < 0) {
            v.add("fenceBudgetMillis", fenceBudgetMillis, "must not be negative");
        } else if (ttlMillis >= 1 && fenceBudgetMillis >= ttlMillis) {
            v.add("fenceBudgetMillis", fenceBudgetMillis, "must be below ttlMillis " + ttlMillis);
        }
        v.required("at", at);
    }
}
