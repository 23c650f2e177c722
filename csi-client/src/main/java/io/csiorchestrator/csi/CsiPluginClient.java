package io.csiorchestrator.csi;

import com.google.protobuf.MessageOrBuilder;
import io.csiorchestrator.csi.v1.CreateSnapshotRequest;
import io.csiorchestrator.csi.v1.CreateSnapshotResponse;
import io.csiorchestrator.csi.v1.DeleteSnapshotRequest;
import io.csiorchestrator.csi.v1.DeleteSnapshotResponse;
import io.csiorchestrator.csi.v1.ListSnapshotsRequest;
import io.csiorchestrator.csi.v1.ListSnapshotsResponse;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeResponse;
import io.csiorchestrator.csi.v1.NodeExpandVolumeRequest;
import io.csiorchestrator.csi.v1.NodeExpandVolumeResponse;
import io.csiorchestrator.csi.v1.ControllerGetCapabilitiesRequest;
import io.csiorchestrator.csi.v1.ControllerGetCapabilitiesResponse;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeResponse;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeResponse;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeResponse;
import io.csiorchestrator.csi.v1.DeleteVolumeRequest;
import io.csiorchestrator.csi.v1.DeleteVolumeResponse;
import io.csiorchestrator.csi.v1.GetPluginCapabilitiesRequest;
import io.csiorchestrator.csi.v1.GetPluginCapabilitiesResponse;
import io.csiorchestrator.csi.v1.GetPluginInfoRequest;
import io.csiorchestrator.csi.v1.GetPluginInfoResponse;
import io.csiorchestrator.csi.v1.ListVolumesRequest;
import io.csiorchestrator.csi.v1.ListVolumesResponse;
import io.csiorchestrator.csi.v1.MutinyControllerGrpc;
import io.csiorchestrator.csi.v1.MutinyIdentityGrpc;
import io.csiorchestrator.csi.v1.MutinyNodeGrpc;
import io.csiorchestrator.csi.v1.NodeGetCapabilitiesRequest;
import io.csiorchestrator.csi.v1.NodeGetCapabilitiesResponse;
import io.csiorchestrator.csi.v1.NodeGetInfoRequest;
import io.csiorchestrator.csi.v1.NodeGetInfoResponse;
import io.csiorchestrator.csi.v1.GetCapacityRequest;
import io.csiorchestrator.csi.v1.GetCapacityResponse;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsResponse;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodePublishVolumeResponse;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeResponse;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeResponse;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeResponse;
import io.csiorchestrator.csi.v1.PluginCapability;
import io.csiorchestrator.csi.v1.ProbeRequest;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesRequest;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.AbstractStub;
import io.smallrye.mutiny.Uni;
import org.jboss.logging.Logger;

import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A CSI plugin as the orchestrator calls it: one unix socket, every call with a deadline, retried
 * by the {@link CsiRetryPolicy}, failures turned into {@link CsiCallException}s with operator
 * messages ({@link CsiErrors}), and requests logged only through the {@link CsiRedactor}.
 * NOT_FOUND from NodeUnpublishVolume, NodeUnstageVolume and ControllerUnpublishVolume counts as done.
 *
 * <p>Every method returns a lazy {@link Uni}: nothing is sent until it is subscribed, and each
 * subscription is a new call. Instances are thread-safe.
 */
public final class CsiPluginClient implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(CsiPluginClient.class);

    private final Path socketPath;
    private final ManagedChannel channel;
    private final CsiClientOptions options;
    private final MutinyIdentityGrpc.MutinyIdentityStub identity;
    private final MutinyControllerGrpc.MutinyControllerStub controller;
    private final MutinyNodeGrpc.MutinyNodeStub node;

    private CsiPluginClient(Path socketPath, ManagedChannel channel, CsiClientOptions options) {
        this.socketPath = socketPath;
        this.channel = channel;
        this.options = options;
        this.identity = MutinyIdentityGrpc.newMutinyStub(channel);
        this.controller = MutinyControllerGrpc.newMutinyStub(channel);
        this.node = MutinyNodeGrpc.newMutinyStub(channel);
    }

    /**
     * Opens the plugin's socket and connects within {@code options.connectTimeout()}; fails with a
     * {@link CsiSocketException} naming the socket otherwise.
     */
    public static Uni<CsiPluginClient> connect(Path socketPath, CsiClientOptions options) {
        Path socket = socketPath.toAbsolutePath().normalize();
        return CsiSocketChannels.open(socket, options.connectTimeout())
                .map(channel -> new CsiPluginClient(socket, channel, options))
                .onItem().invoke(client -> LOG.debugf("connected to CSI socket %s", socket));
    }

    /** {@link #connect(Path, CsiClientOptions)} with an endpoint such as {@code unix:///run/csi.sock}. */
    public static Uni<CsiPluginClient> connect(String endpoint, CsiClientOptions options) {
        return Uni.createFrom().item(() -> CsiSocketChannels.socketPathOf(endpoint))
                .chain(socket -> connect(socket, options));
    }

    /**
     * The same plugin connection with other options (a short-deadline probe, say). The returned
     * client shares this one's channel: closing either closes both.
     */
    public CsiPluginClient withOptions(CsiClientOptions otherOptions) {
        return new CsiPluginClient(socketPath, channel, otherOptions);
    }

    public Path socketPath() {
        return socketPath;
    }

    public CsiClientOptions options() {
        return options;
    }

    // ------------------------------------------------------------------ identity

    public Uni<GetPluginInfoResponse> getPluginInfo() {
        GetPluginInfoRequest request = GetPluginInfoRequest.getDefaultInstance();
        return call(CsiRpc.GET_PLUGIN_INFO, request, () -> deadline(identity).getPluginInfo(request), null);
    }

    public Uni<GetPluginCapabilitiesResponse> getPluginCapabilities() {
        GetPluginCapabilitiesRequest request = GetPluginCapabilitiesRequest.getDefaultInstance();
        return call(CsiRpc.GET_PLUGIN_CAPABILITIES, request,
                () -> deadline(identity).getPluginCapabilities(request), null);
    }

    /** Whether the plugin is ready; an answer without {@code ready} counts as ready, as the spec allows. */
    public Uni<Boolean> probe() {
        ProbeRequest request = ProbeRequest.getDefaultInstance();
        return call(CsiRpc.PROBE, request, () -> deadline(identity).probe(request), null)
                .map(response -> !response.hasReady() || response.getReady().getValue());
    }

    // ---------------------------------------------------------------- controller

    public Uni<ControllerGetCapabilitiesResponse> controllerGetCapabilities() {
        ControllerGetCapabilitiesRequest request = ControllerGetCapabilitiesRequest.getDefaultInstance();
        return call(CsiRpc.CONTROLLER_GET_CAPABILITIES, request,
                () -> deadline(controller).controllerGetCapabilities(request), null);
    }

    public Uni<CreateVolumeResponse> createVolume(CreateVolumeRequest request) {
        return call(CsiRpc.CREATE_VOLUME, request, () -> deadline(controller).createVolume(request), null);
    }

    public Uni<DeleteVolumeResponse> deleteVolume(DeleteVolumeRequest request) {
        return call(CsiRpc.DELETE_VOLUME, request, () -> deadline(controller).deleteVolume(request), null);
    }

    public Uni<ControllerPublishVolumeResponse> controllerPublish(ControllerPublishVolumeRequest request) {
        return call(CsiRpc.CONTROLLER_PUBLISH_VOLUME, request,
                () -> deadline(controller).controllerPublishVolume(request), null);
    }

    /** NOT_FOUND (volume or node gone) counts as done. */
    public Uni<ControllerUnpublishVolumeResponse> controllerUnpublish(ControllerUnpublishVolumeRequest request) {
        return call(CsiRpc.CONTROLLER_UNPUBLISH_VOLUME, request,
                () -> deadline(controller).controllerUnpublishVolume(request),
                ControllerUnpublishVolumeResponse::getDefaultInstance);
    }

    /**
     * Asks the plugin to validate capabilities and checks its answer: see {@link CapabilityConfirmation}.
     * The Uni fails only when the call fails; a refused confirmation is an item with
     * {@link CapabilityConfirmation#accepted()} false.
     */
    public Uni<CapabilityConfirmation> validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest request) {
        return call(CsiRpc.VALIDATE_VOLUME_CAPABILITIES, request,
                () -> deadline(controller).validateVolumeCapabilities(request), null)
                .map(response -> CapabilityConfirmation.check(request, response));
    }

    public Uni<ListVolumesResponse> listVolumes(ListVolumesRequest request) {
        return call(CsiRpc.LIST_VOLUMES, request, () -> deadline(controller).listVolumes(request), null);
    }

    // ---------------------------------------------------------------------- node

    public Uni<NodeGetInfoResponse> nodeGetInfo() {
        NodeGetInfoRequest request = NodeGetInfoRequest.getDefaultInstance();
        return call(CsiRpc.NODE_GET_INFO, request, () -> deadline(node).nodeGetInfo(request), null);
    }

    public Uni<NodeGetCapabilitiesResponse> nodeGetCapabilities() {
        NodeGetCapabilitiesRequest request = NodeGetCapabilitiesRequest.getDefaultInstance();
        return call(CsiRpc.NODE_GET_CAPABILITIES, request, () -> deadline(node).nodeGetCapabilities(request), null);
    }

    public Uni<NodeStageVolumeResponse> nodeStage(NodeStageVolumeRequest request) {
        return call(CsiRpc.NODE_STAGE_VOLUME, request, () -> deadline(node).nodeStageVolume(request), null);
    }

    /** NOT_FOUND (volume gone) counts as done. */
    public Uni<NodeUnstageVolumeResponse> nodeUnstage(NodeUnstageVolumeRequest request) {
        return call(CsiRpc.NODE_UNSTAGE_VOLUME, request, () -> deadline(node).nodeUnstageVolume(request),
                NodeUnstageVolumeResponse::getDefaultInstance);
    }

    public Uni<NodePublishVolumeResponse> nodePublish(NodePublishVolumeRequest request) {
        return call(CsiRpc.NODE_PUBLISH_VOLUME, request, () -> deadline(node).nodePublishVolume(request), null);
    }

    /** NOT_FOUND (volume gone) counts as done. */
    public Uni<NodeUnpublishVolumeResponse> nodeUnpublish(NodeUnpublishVolumeRequest request) {
        return call(CsiRpc.NODE_UNPUBLISH_VOLUME, request, () -> deadline(node).nodeUnpublishVolume(request),
                NodeUnpublishVolumeResponse::getDefaultInstance);
    }

    public Uni<CreateSnapshotResponse> createSnapshot(CreateSnapshotRequest request) {
        return call(CsiRpc.CREATE_SNAPSHOT, request, () -> deadline(controller).createSnapshot(request), null);
    }

    /** DeleteSnapshot; the plugin answers OK for a snapshot that is already gone (CSI). */
    public Uni<DeleteSnapshotResponse> deleteSnapshot(DeleteSnapshotRequest request) {
        return call(CsiRpc.DELETE_SNAPSHOT, request, () -> deadline(controller).deleteSnapshot(request), null);
    }

    public Uni<ListSnapshotsResponse> listSnapshots(ListSnapshotsRequest request) {
        return call(CsiRpc.LIST_SNAPSHOTS, request, () -> deadline(controller).listSnapshots(request), null);
    }

    public Uni<ControllerExpandVolumeResponse> controllerExpandVolume(ControllerExpandVolumeRequest request) {
        return call(CsiRpc.CONTROLLER_EXPAND_VOLUME, request,
                () -> deadline(controller).controllerExpandVolume(request), null);
    }

    /** GetCapacity (controller capability GET_CAPACITY): the capacity for the given topology, parameters and capabilities. */
    public Uni<GetCapacityResponse> getCapacity(GetCapacityRequest request) {
        return call(CsiRpc.GET_CAPACITY, request, () -> deadline(controller).getCapacity(request), null);
    }

    /** NodeExpandVolume; its FAILED_PRECONDITION is never retried ({@link CsiRetryPolicy#neverRetried}). */
    public Uni<NodeExpandVolumeResponse> nodeExpandVolume(NodeExpandVolumeRequest request) {
        return call(CsiRpc.NODE_EXPAND_VOLUME, request, () -> deadline(node).nodeExpandVolume(request), null);
    }

    public Uni<NodeGetVolumeStatsResponse> nodeGetVolumeStats(NodeGetVolumeStatsRequest request) {
        return call(CsiRpc.NODE_GET_VOLUME_STATS, request, () -> deadline(node).nodeGetVolumeStats(request), null);
    }

    // --------------------------------------------------------------- fingerprint

    /**
     * Identity, readiness and capabilities in one go. ControllerGetCapabilities is asked only of a
     * plugin that advertises the controller service; a plugin whose node service is UNIMPLEMENTED
     * (a controller-only plugin) gets no node part.
     */
    public Uni<PluginFingerprint> fingerprint() {
        return getPluginInfo().chain(info -> getPluginCapabilities().chain(capabilities -> probe().chain(ready -> {
            Set<PluginCapability.Service.Type> services = EnumSet.noneOf(PluginCapability.Service.Type.class);
            capabilities.getCapabilitiesList().stream()
                    .filter(PluginCapability::hasService)
                    .map(capability -> capability.getService().getType())
                    .forEach(services::add);
            Set<PluginCapability.VolumeExpansion.Type> expansion = EnumSet.noneOf(PluginCapability.VolumeExpansion.Type.class);
            capabilities.getCapabilitiesList().stream()
                    .filter(PluginCapability::hasVolumeExpansion)
                    .map(capability -> capability.getVolumeExpansion().getType())
                    .forEach(expansion::add);
            PluginCapability.VolumeExpansion.Type volumeExpansion =
                    expansion.contains(PluginCapability.VolumeExpansion.Type.OFFLINE) ? PluginCapability.VolumeExpansion.Type.OFFLINE
                    : expansion.contains(PluginCapability.VolumeExpansion.Type.ONLINE) ? PluginCapability.VolumeExpansion.Type.ONLINE
                    : PluginCapability.VolumeExpansion.Type.UNKNOWN;
            Uni<Set<ControllerServiceCapability.RPC.Type>> controllerCapabilities =
                    services.contains(PluginCapability.Service.Type.CONTROLLER_SERVICE)
                            ? controllerGetCapabilities().map(CsiPluginClient::controllerTypes)
                            : Uni.createFrom().item(Set.of());
            return controllerCapabilities.chain(controllerTypes -> nodeFingerprint().map(nodePart ->
                    new PluginFingerprint(info.getName(), info.getVendorVersion(), info.getManifestMap(), ready,
                            services, controllerTypes, nodePart, volumeExpansion)));
        })));
    }

    private Uni<Optional<PluginFingerprint.NodeFingerprint>> nodeFingerprint() {
        return nodeGetInfo().chain(info -> nodeGetCapabilities().map(capabilities -> {
                    Set<NodeServiceCapability.RPC.Type> types = EnumSet.noneOf(NodeServiceCapability.RPC.Type.class);
                    capabilities.getCapabilitiesList().stream()
                            .filter(NodeServiceCapability::hasRpc)
                            .map(capability -> capability.getRpc().getType())
                            .forEach(types::add);
                    return Optional.of(new PluginFingerprint.NodeFingerprint(info.getNodeId(),
                            info.getMaxVolumesPerNode(), info.getAccessibleTopology().getSegmentsMap(), types));
                }))
                .onFailure(failure -> failure instanceof CsiCallException call
                        && call.code() == Status.Code.UNIMPLEMENTED)
                .recoverWithItem(Optional.empty());
    }

    private static Set<ControllerServiceCapability.RPC.Type> controllerTypes(ControllerGetCapabilitiesResponse response) {
        Set<ControllerServiceCapability.RPC.Type> types = EnumSet.noneOf(ControllerServiceCapability.RPC.Type.class);
        response.getCapabilitiesList().stream()
                .filter(ControllerServiceCapability::hasRpc)
                .map(capability -> capability.getRpc().getType())
                .forEach(types::add);
        return types;
    }

    // ---------------------------------------------------------------- machinery

    /** A stub whose calls end at the per-attempt deadline; made anew for every attempt. */
    private <S extends AbstractStub<S>> S deadline(S stub) {
        return stub.withDeadlineAfter(options.retryPolicy().perAttemptTimeout().toNanos(), TimeUnit.NANOSECONDS);
    }

    /**
     * One CSI call under the retry policy. {@code attempt} sends the request once; {@code whenGone},
     * when given, is the answer for a NOT_FOUND that counts as done.
     */
    private <T> Uni<T> call(CsiRpc rpc, MessageOrBuilder request, Supplier<Uni<T>> attempt, Supplier<T> whenGone) {
        return Uni.createFrom().deferred(() -> {
            AtomicInteger attempts = new AtomicInteger();
            CsiAttemptListener listener = recorded -> {
                attempts.set(recorded.number());
                options.attemptListener().onAttempt(recorded);
            };
            return options.retryPolicy().run(rpc, number -> {
                        if (number > 1) {
                            // A restarted plugin is reached at once, not after gRPC's reconnect backoff.
                            channel.resetConnectBackoff();
                        }
                        return attempt.get()
                                .onFailure().invoke(failure -> logFailedAttempt(rpc, number, request, failure));
                    }, listener)
                    .onItem().invoke(item -> LOG.debugf("CSI %s succeeded after %d attempt(s) on %s",
                            rpc, attempts.get(), socketPath))
                    .onFailure().recoverWithUni(failure -> {
                        Status.Code code = CsiRetryPolicy.codeOf(failure);
                        if (whenGone != null && CsiErrors.countsAsDone(rpc, code)) {
                            LOG.debugf("CSI %s answered NOT_FOUND, which counts as done: %s", rpc,
                                    CsiRedactor.toSafeString(request));
                            return Uni.createFrom().item(whenGone);
                        }
                        CsiCallException error = toCallException(rpc, request, failure, Math.max(1, attempts.get()));
                        LOG.warnf("%s; request: %s", error.getMessage(), error.redactedRequest());
                        return Uni.createFrom().failure(error);
                    });
        });
    }

    private void logFailedAttempt(CsiRpc rpc, int number, MessageOrBuilder request, Throwable failure) {
        if (LOG.isDebugEnabled()) {
            Status status = Status.fromThrowable(failure);
            LOG.debugf("CSI %s attempt %d on %s failed with %s: %s; request: %s", rpc, number, socketPath,
                    status.getCode(), CsiRedactor.scrub(describe(status, failure), request),
                    CsiRedactor.toSafeString(request));
        }
    }

    private static CsiCallException toCallException(CsiRpc rpc, MessageOrBuilder request, Throwable failure,
                                                    int attempts) {
        Status status = Status.fromThrowable(failure);
        String pluginMessage = CsiRedactor.scrub(describe(status, failure), request);
        String operatorMessage = CsiErrors.operatorMessage(rpc, status.getCode(), CallSubject.of(request));
        // The raw failure is not attached as the cause: its text may echo unscrubbed request data.
        return new CsiCallException(rpc, status.getCode(), operatorMessage, pluginMessage, attempts,
                CsiRedactor.toSafeString(request), null);
    }

    /** The plugin's status message, or for a failure on our side its type and message. */
    private static String describe(Status status, Throwable failure) {
        if (status.getDescription() != null) {
            return status.getDescription();
        }
        Throwable cause = status.getCause() != null ? status.getCause() : failure;
        if (cause == null || cause instanceof io.grpc.StatusRuntimeException || cause instanceof io.grpc.StatusException) {
            return "";
        }
        return "client-side " + cause.getClass().getSimpleName()
                + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
    }

    /** Closes the channel (shared with clients made by {@link #withOptions}). */
    @Override
    public void close() {
        CsiSocketChannels.close(channel);
    }
}
