package io.csiorchestrator.hostpath;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/** The CSI error answers, as exceptions the services throw and {@link GrpcCalls} turns into statuses. */
final class CsiStatus {

    private CsiStatus() {
    }

    static StatusRuntimeException invalidArgument(String message) {
        return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException notFound(String message) {
        return Status.NOT_FOUND.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException alreadyExists(String message) {
        return Status.ALREADY_EXISTS.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException failedPrecondition(String message) {
        return Status.FAILED_PRECONDITION.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException resourceExhausted(String message) {
        return Status.RESOURCE_EXHAUSTED.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException outOfRange(String message) {
        return Status.OUT_OF_RANGE.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException aborted(String message) {
        return Status.ABORTED.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException unimplemented(String message) {
        return Status.UNIMPLEMENTED.withDescription(message).asRuntimeException();
    }

    static StatusRuntimeException internal(String message) {
        return Status.INTERNAL.withDescription(message).asRuntimeException();
    }
}
