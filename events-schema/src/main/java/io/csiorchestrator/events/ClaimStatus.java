package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;

/**
 * One transition of a claim, for schedulers and monitoring. Topic {@code claim-status}, key:
 * volume id.
 *
 * @param requestId the claim-requested request this answers
 * @param state     accepted, rejected, ready, releasing, released or failed
 * @param reason    why; required for rejected and failed
 * @param hostPath  where the volume is mounted on the node; required for ready
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ClaimStatus(
        String requestId,
        String namespace,
        String volumeId,
        String allocationId,
        String nodeId,
        ClaimMode mode,
        ClaimState state,
        String reason,
        String hostPath,
        Instant occurredAt) implements ContractEvent {

    @Override
    public EventType eventType() {
        return EventType.CLAIM_STATUS;
    }

    @Override
    public String recordKey() {
        return volumeId;
    }

    @Override
    public void checkFields(Violations v) {
        v.text("requestId", requestId, 200);
        v.id("namespace", namespace);
        v.id("volumeId", volumeId);
        v.id("allocationId", allocationId);
        v.optionalId("nodeId", nodeId);
        v.required("state", state);
        if (state == ClaimState.REJECTED || state == ClaimState.FAILED) {
            v.text("reason", reason, 4096);
        } else {
            v.optionalText("reason", reason, 4096);
        }
        if (state == ClaimState.READY) {
            v.text("hostPath", hostPath, 4096);
        } else {
            v.optionalText("hostPath", hostPath, 4096);
        }
        v.required("occurredAt", occurredAt);
    }
}
