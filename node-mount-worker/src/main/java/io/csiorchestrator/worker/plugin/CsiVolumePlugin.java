package io.csiorchestrator.worker.plugin;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.CsiCallException;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.CsiRpc;
import io.csiorchestrator.csi.CsiSocketException;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import io.csiorchestrator.csi.v1.CapacityRange;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeResponse;
import io.csiorchestrator.csi.v1.NodeExpandVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.CreateSnapshotRequest;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.DeleteSnapshotRequest;
import io.csiorchestrator.csi.v1.DeleteVolumeRequest;
import io.csiorchestrator.csi.v1.Topology;
import io.csiorchestrator.csi.v1.TopologyRequirement;
import io.csiorchestrator.csi.v1.Volume;
import io.csiorchestrator.csi.v1.VolumeContentSource;
import io.csiorchestrator.events.ProvisionSpec;
import io.csiorchestrator.events.ProvisionedSnapshot;
import io.csiorchestrator.events.ProvisionedVolume;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsResponse;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.csiorchestrator.csi.v1.VolumeCapability;
import io.csiorchestrator.worker.mount.ControllerVolumePlugin;
import io.csiorchestrator.worker.mount.NodeVolumePlugin;
import io.csiorchestrator.worker.mount.PluginCallFailure;
import io.csiorchestrator.worker.mount.VolumeCondition;
import io.csiorchestrator.worker.mount.VolumeRequest;
import io.csiorchestrator.worker.telemetry.WorkerTracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.smallrye.mutiny.Uni;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * One plugin's node and controller services over the csi-client library: builds the CSI
 * requests (capability from access and attachment mode, fs type and flags; paths translated for
 * a containerized plugin), waits for the client's retried call, and turns its failures into
 * {@link PluginCallFailure}s carrying the client's operator message. Each call is a CLIENT span
 * {@code csi/<Rpc>} (retries included) in the current trace: the caller's thread awaits the call.
 */
public final class CsiVolumePlugin implements NodeVolumePlugin, ControllerVolumePlugin {

    private final String pluginId;
    private final CsiPluginClient client;
    private final boolean requiresStaging;
    private final PluginSettings settings;
    private final Path workerRoot;
    private final Duration callLimit;
    private final WorkerTracing tracing;
    private final boolean reportsVolumeCondition;
    /** The plugin advertises SINGLE_NODE_MULTI_WRITER (controller, if any, and node): the CSI 1.5 modes go to it as they are. */
    private volatile boolean singleNodeMultiWriter;

    public CsiVolumePlugin(String pluginId, CsiPluginClient client, boolean requiresStaging, PluginSettings settings,
                           Path workerRoot, Duration callLimit) {
        this(pluginId, client, requiresStaging, settings, workerRoot, callLimit, WorkerTracing.noop());
    }

    public CsiVolumePlugin(String pluginId, CsiPluginClient client, boolean requiresStaging, PluginSettings settings,
                           Path workerRoot, Duration callLimit, WorkerTracing tracing) {
        this(pluginId, client, requiresStaging, false, settings, workerRoot, callLimit, tracing);
    }

    public CsiVolumePlugin(String pluginId, CsiPluginClient client, boolean requiresStaging,
                           boolean reportsVolumeCondition, PluginSettings settings, Path workerRoot, Duration callLimit,
                           WorkerTracing tracing) {
        this.reportsVolumeCondition = reportsVolumeCondition;
        this.tracing = tracing;
        this.pluginId = pluginId;
        this.client = client;
        this.requiresStaging = requiresStaging;
        this.settings = settings;
        this.workerRoot = workerRoot;
        this.callLimit = callLimit;
    }

    /**
     * Whether the plugin advertises SINGLE_NODE_MULTI_WRITER ({@link #advertisesSingleNodeMultiWriter}); without it a
     * claim in single-node-single-writer or single-node-multi-writer is sent as SINGLE_NODE_WRITER (csi-client's
     * {@code CsiAccessMode.csiModeFor}). This view, for chaining after construction.
     */
    public CsiVolumePlugin withSingleNodeMultiWriter(boolean advertised) {
        this.singleNodeMultiWriter = advertised;
        return this;
    }

    /** Called (on the calling thread; it must not block) when a call answers RESOURCE_EXHAUSTED. */
    private volatile Runnable onResourceExhausted = () -> { };

    /** Runs {@code action} whenever a call answers RESOURCE_EXHAUSTED (the supervisor's NodeGetInfo refresh); for chaining. */
    public CsiVolumePlugin onResourceExhausted(Runnable action) {
        this.onResourceExhausted = action;
        return this;
    }

    /**
     * The CSI rule for the CSI 1.5 single-node modes: the plugin takes them only when it advertises the
     * SINGLE_NODE_MULTI_WRITER capability, on its controller service (when it has one) and its node service.
     */
    public static boolean advertisesSingleNodeMultiWriter(io.csiorchestrator.csi.PluginFingerprint fp) {
        boolean controller = !fp.hasControllerService() || fp.controllerCapabilities()
                .contains(io.csiorchestrator.csi.v1.ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER);
        boolean node = fp.node().map(n -> n.capabilities()
                .contains(io.csiorchestrator.csi.v1.NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER)).orElse(true);
        return controller && node && (fp.hasControllerService() || fp.node().isPresent());
    }

    @Override
    public String pluginId() {
        return pluginId;
    }

    @Override
    public boolean requiresStaging() {
        return requiresStaging;
    }

    @Override
    public void stage(VolumeRequest r) {
        NodeStageVolumeRequest request = NodeStageVolumeRequest.newBuilder()
                .setVolumeId(r.externalVolumeId())
                .putAllPublishContext(r.publishContext())
                .setStagingTargetPath(plugin(r.stagingPath()))
                .setVolumeCapability(capability(r))
                .putAllSecrets(r.secrets())
                .putAllVolumeContext(r.volumeContext())
                .build();
        await(CsiRpc.NODE_STAGE_VOLUME, client.nodeStage(request));
    }

    @Override
    public void unstage(String externalVolumeId, Path stagingPath) {
        await(CsiRpc.NODE_UNSTAGE_VOLUME, client.nodeUnstage(NodeUnstageVolumeRequest.newBuilder().setVolumeId(externalVolumeId)
                .setStagingTargetPath(plugin(stagingPath)).build()));
    }

    @Override
    public void publish(VolumeRequest r) {
        NodePublishVolumeRequest.Builder request = NodePublishVolumeRequest.newBuilder()
                .setVolumeId(r.externalVolumeId())
                .putAllPublishContext(r.publishContext())
                .setTargetPath(plugin(r.targetPath()))
                .setVolumeCapability(capability(r))
                .setReadonly(r.readOnly())
                .putAllSecrets(r.secrets())
                .putAllVolumeContext(r.volumeContext());
        if (requiresStaging && r.stagingPath() != null) {
            request.setStagingTargetPath(plugin(r.stagingPath()));
        }
        await(CsiRpc.NODE_PUBLISH_VOLUME, client.nodePublish(request.build()));
    }

    @Override
    public void unpublish(String externalVolumeId, Path targetPath) {
        await(CsiRpc.NODE_UNPUBLISH_VOLUME, client.nodeUnpublish(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(externalVolumeId)
                .setTargetPath(plugin(targetPath)).build()));
    }

    @Override
    public boolean reportsVolumeCondition() {
        return reportsVolumeCondition;
    }

    @Override
    public Optional<VolumeCondition> volumeCondition(String externalVolumeId, Path volumePath) {
        NodeGetVolumeStatsResponse response = await(CsiRpc.NODE_GET_VOLUME_STATS, client.nodeGetVolumeStats(
                NodeGetVolumeStatsRequest.newBuilder().setVolumeId(externalVolumeId).setVolumePath(plugin(volumePath))
                        .build()));
        if (!response.hasVolumeCondition()) {
            return Optional.empty();
        }
        return Optional.of(new VolumeCondition(response.getVolumeCondition().getAbnormal(),
                response.getVolumeCondition().getMessage()));
    }

    @Override
    public io.csiorchestrator.worker.mount.VolumeStats volumeStats(String externalVolumeId, Path volumePath) {
        return io.csiorchestrator.worker.mount.VolumeStats.of(await(CsiRpc.NODE_GET_VOLUME_STATS,
                client.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(externalVolumeId)
                        .setVolumePath(plugin(volumePath)).build())));
    }

    @Override
    public io.csiorchestrator.events.CapacityFigures capacity(Map<String, String> segment) {
        io.csiorchestrator.csi.v1.GetCapacityRequest.Builder request = io.csiorchestrator.csi.v1.GetCapacityRequest
                .newBuilder();
        if (!segment.isEmpty()) {
            request.setAccessibleTopology(Topology.newBuilder().putAllSegments(segment));
        }
        io.csiorchestrator.csi.v1.GetCapacityResponse answer = await(CsiRpc.GET_CAPACITY,
                client.getCapacity(request.build()));
        return new io.csiorchestrator.events.CapacityFigures(segment, Math.max(0, answer.getAvailableCapacity()),
                answer.hasMaximumVolumeSize() ? Math.max(0, answer.getMaximumVolumeSize().getValue()) : null,
                answer.hasMinimumVolumeSize() ? Math.max(0, answer.getMinimumVolumeSize().getValue()) : null);
    }

    @Override
    public Map<String, String> controllerPublish(VolumeRequest r, String externalNodeId) {
        ControllerPublishVolumeRequest request = ControllerPublishVolumeRequest.newBuilder()
                .setVolumeId(r.externalVolumeId())
                .setNodeId(externalNodeId)
                .setVolumeCapability(capability(r))
                .setReadonly(r.readOnly())
                .putAllSecrets(r.secrets())
                .putAllVolumeContext(r.volumeContext())
                .build();
        return await(CsiRpc.CONTROLLER_PUBLISH_VOLUME, client.controllerPublish(request)).getPublishContextMap();
    }

    @Override
    public void controllerUnpublish(String externalVolumeId, String externalNodeId, Map<String, String> secrets) {
        await(CsiRpc.CONTROLLER_UNPUBLISH_VOLUME, client.controllerUnpublish(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(externalVolumeId)
                .setNodeId(externalNodeId).putAllSecrets(secrets).build()));
    }

    @Override
    public ProvisionedVolume createVolume(VolumeRequest r, ProvisionSpec spec) {
        CreateVolumeRequest.Builder request = CreateVolumeRequest.newBuilder()
                .setName(spec.name())
                .addVolumeCapabilities(capability(r))
                .putAllParameters(spec.parameters())
                .putAllSecrets(r.secrets());
        long min = spec.capacityMinBytes() == null ? 0 : spec.capacityMinBytes();
        long max = spec.capacityMaxBytes() == null ? 0 : spec.capacityMaxBytes();
        if (min > 0 || max > 0) {
            request.setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(min).setLimitBytes(max));
        }
        if (!spec.topology().isEmpty()) {
            Topology segment = Topology.newBuilder().putAllSegments(spec.topology()).build();
            request.setAccessibilityRequirements(TopologyRequirement.newBuilder().addRequisite(segment).addPreferred(segment));
        }
        if (spec.sourceSnapshotId() != null) {
            request.setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
                    VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(spec.sourceSnapshotId())));
        } else if (spec.sourceVolumeId() != null) {
            request.setVolumeContentSource(VolumeContentSource.newBuilder().setVolume(
                    VolumeContentSource.VolumeSource.newBuilder().setVolumeId(spec.sourceVolumeId())));
        }
        Volume volume = await(CsiRpc.CREATE_VOLUME, client.createVolume(request.build())).getVolume();
        return new ProvisionedVolume(volume.getVolumeId(), volume.getCapacityBytes(), volume.getVolumeContextMap(),
                volume.getAccessibleTopologyList().stream().map(Topology::getSegmentsMap).toList());
    }

    @Override
    public void deleteVolume(String externalVolumeId, Map<String, String> secrets) {
        try {
            await(CsiRpc.DELETE_VOLUME, client.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(externalVolumeId)
                    .putAllSecrets(secrets).build()));
        } catch (PluginCallFailure failure) {
            if (!"NOT_FOUND".equals(failure.code())) {
                throw failure;
            }
        }
    }

    @Override
    public ProvisionedSnapshot createSnapshot(String name, String externalVolumeId, Map<String, String> parameters,
                                              Map<String, String> secrets) {
        io.csiorchestrator.csi.v1.Snapshot snapshot = await(CsiRpc.CREATE_SNAPSHOT, client.createSnapshot(
                CreateSnapshotRequest.newBuilder().setName(name).setSourceVolumeId(externalVolumeId)
                        .putAllParameters(parameters).putAllSecrets(secrets).build())).getSnapshot();
        return new ProvisionedSnapshot(snapshot.getSnapshotId(), snapshot.getSourceVolumeId(), snapshot.getSizeBytes(),
                snapshot.getReadyToUse());
    }

    @Override
    public void deleteSnapshot(String externalSnapshotId, Map<String, String> secrets) {
        try {
            await(CsiRpc.DELETE_SNAPSHOT, client.deleteSnapshot(DeleteSnapshotRequest.newBuilder()
                    .setSnapshotId(externalSnapshotId).putAllSecrets(secrets).build()));
        } catch (PluginCallFailure failure) {
            if (!"NOT_FOUND".equals(failure.code())) {
                throw failure;
            }
        }
    }

    @Override
    public ProvisionedVolume controllerExpand(String externalVolumeId, long requiredBytes, long limitBytes,
                                              Map<String, String> secrets) {
        ControllerExpandVolumeResponse response = await(CsiRpc.CONTROLLER_EXPAND_VOLUME, client.controllerExpandVolume(
                ControllerExpandVolumeRequest.newBuilder().setVolumeId(externalVolumeId)
                        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(requiredBytes).setLimitBytes(limitBytes))
                        .putAllSecrets(secrets).build()));
        return ProvisionedVolume.expanded(externalVolumeId, response.getCapacityBytes(), response.getNodeExpansionRequired());
    }

    @Override
    public io.csiorchestrator.events.ListedVolumes listVolumes(String startingToken, int maxEntries) {
        io.csiorchestrator.csi.v1.ListVolumesRequest.Builder request = io.csiorchestrator.csi.v1.ListVolumesRequest
                .newBuilder().setMaxEntries(maxEntries);
        if (startingToken != null) {
            request.setStartingToken(startingToken);
        }
        io.csiorchestrator.csi.v1.ListVolumesResponse response = await(CsiRpc.LIST_VOLUMES,
                client.listVolumes(request.build()));
        return new io.csiorchestrator.events.ListedVolumes(response.getEntriesList().stream()
                .map(e -> e.getVolume().getVolumeId()).toList(),
                response.getNextToken().isEmpty() ? null : response.getNextToken());
    }

    @Override
    public long nodeExpand(String externalVolumeId, Path volumePath, Path stagingPath, long requiredBytes, long limitBytes) {
        NodeExpandVolumeRequest.Builder request = NodeExpandVolumeRequest.newBuilder().setVolumeId(externalVolumeId)
                .setVolumePath(plugin(volumePath))
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(requiredBytes).setLimitBytes(limitBytes));
        if (stagingPath != null) {
            request.setStagingTargetPath(plugin(stagingPath));
        }
        return await(CsiRpc.NODE_EXPAND_VOLUME, client.nodeExpandVolume(request.build())).getCapacityBytes();
    }

    private String plugin(Path hostPath) {
        return settings.translate(workerRoot, hostPath).toString();
    }

    private VolumeCapability capability(VolumeRequest r) {
        try {
            CsiAccessMode access = CsiAccessMode.fromExternalName(r.accessMode().wire());
            CsiAttachmentMode attachment = CsiAttachmentMode.fromExternalName(r.attachmentMode().wire());
            MountOptions options = attachment == CsiAttachmentMode.BLOCK_DEVICE ? MountOptions.NONE
                    : new MountOptions(r.fsType(), r.mountFlags());
            return VolumeCapabilities.build(access, singleNodeMultiWriter, attachment, options, MountOptions.NONE);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new PluginCallFailure("INVALID_ARGUMENT", "invalid volume capability for volume "
                    + r.externalVolumeId() + ": " + e.getMessage(), false);
        }
    }

    private <T> T await(CsiRpc rpc, Uni<T> call) {
        Span span = tracing.csiCall(pluginId, "csi.v1." + serviceName(rpc), rpc.methodName());
        try (Scope ignored = span.makeCurrent()) {
            T result = call.await().atMost(callLimit);
            WorkerTracing.endCsiCall(span, "OK", null);
            return result;
        } catch (CsiCallException e) {
            WorkerTracing.endCsiCall(span, e.code().name(), e.getMessage());
            if (e.code() == io.grpc.Status.Code.RESOURCE_EXHAUSTED) {
                onResourceExhausted.run();
            }
            throw new PluginCallFailure(e.code().name(), e.getMessage(), e.isUncertain());
        } catch (CsiSocketException e) {
            WorkerTracing.endCsiCall(span, "UNAVAILABLE", e.getMessage());
            throw new PluginCallFailure("UNAVAILABLE", e.getMessage(), true);
        } catch (io.smallrye.mutiny.TimeoutException e) {
            String message = "CSI plugin '" + pluginId + "' did not answer within " + callLimit
                    + "; the operation may still complete";
            WorkerTracing.endCsiCall(span, "DEADLINE_EXCEEDED", message);
            throw new PluginCallFailure("DEADLINE_EXCEEDED", message, true);
        } catch (RuntimeException e) {
            WorkerTracing.end(span, e);
            throw e;
        }
    }

    private static String serviceName(CsiRpc rpc) {
        return switch (rpc.service()) {
            case IDENTITY -> "Identity";
            case CONTROLLER -> "Controller";
            case NODE -> "Node";
        };
    }
}
