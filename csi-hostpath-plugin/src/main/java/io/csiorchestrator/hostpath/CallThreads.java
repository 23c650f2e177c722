package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.v1.ControllerGrpc;
import io.csiorchestrator.csi.v1.IdentityGrpc;
import io.csiorchestrator.csi.v1.NodeGrpc;
import io.csiorchestrator.hostpath.faults.FaultInjector;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;

import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which thread runs a call (issue 36 item 6). The calls of a claim and its release (controller publish and unpublish,
 * node stage, publish, unpublish and unstage) and the identity calls run on the connection's event loop thread, where
 * the request was read: the plugin runs one operation at a time anyway ({@link PluginStateHolder}), and handing each
 * call to a pool thread and its answer back cost two thread wake-ups a call, more than a node call's own work on a
 * busy machine. Every call that may take long runs on a pool thread as before, so it never holds up the calls behind
 * it on the connection (Probe above all): anything while a faults file exists (a delay or a hang), a fencing
 * ControllerUnpublishVolume (it waits for the other node's plugin), and the calls that walk or copy a volume's files
 * (stats, create from a source, delete, snapshots, expansion), which are not in the list.
 */
final class CallThreads implements ServerCallExecutorSupplier, AutoCloseable {

    private static final String CONTROLLER_UNPUBLISH = ControllerGrpc.getControllerUnpublishVolumeMethod().getFullMethodName();
    private static final Set<String> ON_EVENT_LOOP = Stream.of(
            IdentityGrpc.getGetPluginInfoMethod(), IdentityGrpc.getGetPluginCapabilitiesMethod(), IdentityGrpc.getProbeMethod(),
            ControllerGrpc.getControllerPublishVolumeMethod(), ControllerGrpc.getControllerUnpublishVolumeMethod(),
            ControllerGrpc.getControllerGetCapabilitiesMethod(),
            NodeGrpc.getNodeStageVolumeMethod(), NodeGrpc.getNodeUnstageVolumeMethod(), NodeGrpc.getNodePublishVolumeMethod(),
            NodeGrpc.getNodeUnpublishVolumeMethod(), NodeGrpc.getNodeGetCapabilitiesMethod(), NodeGrpc.getNodeGetInfoMethod())
            .map(MethodDescriptor::getFullMethodName).collect(Collectors.toUnmodifiableSet());

    private final FaultInjector faults;
    private final boolean fencing;
    private final ExecutorService pool;

    CallThreads(FaultInjector faults, boolean fencing) {
        this.faults = faults;
        this.fencing = fencing;
        AtomicInteger count = new AtomicInteger();
        this.pool = Executors.newCachedThreadPool(task -> {
            Thread thread = new Thread(task, "csi-call-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
    }

    /** The pool for a call that may take long, else null: the server's direct executor, the event loop thread. */
    @Override
    public <ReqT, RespT> Executor getExecutor(ServerCall<ReqT, RespT> call, Metadata headers) {
        return onEventLoop(call.getMethodDescriptor().getFullMethodName()) ? null : pool;
    }

    boolean onEventLoop(String method) {
        if (!ON_EVENT_LOOP.contains(method)) {
            return false;
        }
        if (fencing && method.equals(CONTROLLER_UNPUBLISH)) {
            return false;
        }
        return !faults.present(); // the rules are read by the call itself (CallInterceptor)
    }

    @Override
    public void close() {
        pool.shutdownNow();
    }
}
