package io.csiorchestrator.hostpath;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;

import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/** Answers a unary call from a blocking computation: its value, its status, or INTERNAL for a bug. */
final class GrpcCalls {

    private static final Logger LOG = Logger.getLogger(GrpcCalls.class.getName());

    private GrpcCalls() {
    }

    static <T> void answer(StreamObserver<T> observer, Supplier<T> computation) {
        T response;
        try {
            response = computation.get();
        } catch (StatusRuntimeException e) {
            observer.onError(e);
            return;
        } catch (RuntimeException e) {
            LOG.log(Level.SEVERE, "unexpected failure", e);
            observer.onError(Status.INTERNAL.withDescription(e.getClass().getSimpleName() + ": " + e.getMessage())
                    .asRuntimeException());
            return;
        }
        observer.onNext(response);
        observer.onCompleted();
    }
}
