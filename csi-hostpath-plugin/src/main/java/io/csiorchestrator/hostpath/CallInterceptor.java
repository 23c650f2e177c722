package io.csiorchestrator.hostpath;

import com.google.protobuf.MessageOrBuilder;
import io.csiorchestrator.csi.CsiRedactor;
import io.csiorchestrator.hostpath.faults.FaultInjector;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Around every CSI call: injected latency and failures ({@link FaultInjector}), the call log
 * ({@link CallLog}: the call's arrival, then its answer or its cancellation), and a log line with
 * the request redacted by {@link CsiRedactor}.
 */
final class CallInterceptor implements ServerInterceptor {

    private static final Logger LOG = Logger.getLogger(CallInterceptor.class.getName());

    private final FaultInjector faults;
    private final CallLog callLog;

    CallInterceptor(FaultInjector faults, CallLog callLog) {
        this.faults = faults;
        this.callLog = callLog;
    }

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers,
                                                                 ServerCallHandler<ReqT, RespT> next) {
        String method = call.getMethodDescriptor().getBareMethodName();
        AtomicReference<Object> request = new AtomicReference<>();
        AtomicBoolean injected = new AtomicBoolean();
        AtomicBoolean answered = new AtomicBoolean();
        callLog.started(method);
        ServerCall<ReqT, RespT> recorded = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                answered.set(true);
                callLog.record(method, status.getCode());
                log(method, status, request.get(), injected.get());
                super.close(status, trailers);
            }
        };
        ServerCall.Listener<ReqT> handler = next.startCall(recorded, headers);
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(handler) {
            @Override
            public void onMessage(ReqT message) {
                request.set(message);
                delay(faults.latencyFor(method));
                Optional<Status> failure = faults.takeFailure(method, message);
                if (failure.isPresent()) {
                    injected.set(true);
                    recorded.close(failure.get(), new Metadata());
                    return;
                }
                super.onMessage(message);
            }

            @Override
            public void onHalfClose() {
                if (!injected.get()) {
                    super.onHalfClose();
                }
            }

            @Override
            public void onCancel() {
                // the caller went away (or its deadline passed) before the answer: gRPC then skips
                // the handler, so this is the call's only end; logged so no call stays "in flight"
                if (!answered.get()) {
                    answered.set(true);
                    callLog.record(method, Status.Code.CANCELLED);
                    log(method, Status.CANCELLED, request.get(), false);
                }
                super.onCancel();
            }
        };
    }

    private static void delay(Duration latency) {
        if (latency.isZero()) {
            return;
        }
        try {
            TimeUnit.MILLISECONDS.sleep(latency.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void log(String method, Status status, Object request, boolean injected) {
        Level level = method.equals("Probe") && status.isOk() ? Level.FINE : Level.INFO;
        if (!LOG.isLoggable(level)) {
            return;
        }
        String safeRequest = request instanceof MessageOrBuilder message ? CsiRedactor.toSafeString(message) : "";
        String description = status.getDescription() == null ? "" : ": "
                + (request instanceof MessageOrBuilder message
                ? CsiRedactor.scrub(status.getDescription(), message) : status.getDescription());
        LOG.log(level, method + " -> " + status.getCode() + (injected ? " (injected)" : "") + description
                + (safeRequest.isEmpty() ? "" : "; request " + safeRequest));
    }
}
