package io.csiorchestrator.claims.messaging;

import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.PathSafeId;
import java.time.Instant;
import java.util.Optional;

/**
 * The answer to a claim request that a known scheduler signed but claim-service refused (issue 33 item 4): outside
 * the replay window, a body that breaks the contract, a record key that is not the body's volume. The scheduler learns
 * why on {@code claim-status} ({@code rejected}, the refusal as reason) instead of only by its own timeout. Answered
 * only when the body's {@code requestId}, {@code namespace}, {@code volumeId} and {@code allocationId} can be read
 * (text, valid ids: a claim-status names them all); {@code mode} and {@code nodeId} when they can. A replay, an unsigned
 * or a forged record is never answered. Pure logic.
 */
public final class RefusedClaimRequests {

    /** At most this much of the refusal goes into the answer's reason (claim-status allows 4096 characters). */
    private static final int MAX_REASON = 2000;

    private RefusedClaimRequests() {
    }

    /** The {@code rejected} answer to the refused request whose (possibly redacted) value is {@code value}; empty when it names too little. */
    public static Optional<ClaimStatus> answer(String value, MalformedEventException refusal) {
        if (value == null) {
            return Optional.empty();
        }
        JsonNode body;
        try {
            body = EventCodec.mapper().readTree(value);
        } catch (Exception e) {
            return Optional.empty();
        }
        if (body == null || !body.isObject()) {
            return Optional.empty();
        }
        String requestId = text(body, "requestId");
        String namespace = id(body, "namespace");
        String volumeId = id(body, "volumeId");
        String allocationId = id(body, "allocationId");
        if (requestId == null || requestId.isBlank() || requestId.length() > 200 || namespace == null || volumeId == null
                || allocationId == null) {
            return Optional.empty();
        }
        ClaimMode mode = null;
        try {
            String m = text(body, "mode");
            mode = m == null ? null : ClaimMode.fromWire(m);
        } catch (RuntimeException e) {
            // an unknown mode is one of the refusal's reasons; the answer goes without it
        }
        String reason = "refused: " + refusal.getMessage();
        if (reason.length() > MAX_REASON) {
            reason = reason.substring(0, MAX_REASON) + "...";
        }
        ClaimStatus status = new ClaimStatus(requestId, namespace, volumeId, allocationId, id(body, "nodeId"), mode,
                ClaimState.REJECTED, reason.replaceAll("\\p{Cntrl}", " "), null, Instant.now());
        try {
            EventCodec.requireValid(status);
        } catch (MalformedEventException e) {
            return Optional.empty();
        }
        return Optional.of(status);
    }

    private static String text(JsonNode body, String field) {
        JsonNode n = body.get(field);
        return n != null && n.isTextual() ? n.asText() : null;
    }

    private static String id(JsonNode body, String field) {
        String t = text(body, field);
        if (t == null) {
            return null;
        }
        try {
            return PathSafeId.require(field, t);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }
}
