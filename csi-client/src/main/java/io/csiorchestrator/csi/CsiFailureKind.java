package io.csiorchestrator.csi;

import io.grpc.Status;

/**
 * What a failed CSI call means for the orchestrator, from its gRPC status code
 * (the "treat as" column of the CSI rules for the orchestrator side).
 */
public enum CsiFailureKind {
    /** The plugin is down or slow; the operation may still be in progress. Retry the same call. */
    UNCERTAIN,
    /** Transient: out of resources or another operation pending on the volume. Retry with backoff. */
    TRANSIENT,
    /** A precondition does not hold (not staged, published elsewhere, gone). Verify; no blind retry. */
    PRECONDITION,
    /** Will fail the same way until the request or the plugin changes. Do not retry. */
    FATAL;

    public static CsiFailureKind of(Status.Code code) {
        return switch (code) {
            case UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED -> UNCERTAIN;
            case RESOURCE_EXHAUSTED, ABORTED -> TRANSIENT;
            case FAILED_PRECONDITION, NOT_FOUND -> PRECONDITION;
            default -> FATAL;
        };
    }
}
