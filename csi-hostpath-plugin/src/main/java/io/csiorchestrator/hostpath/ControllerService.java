package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.v1.CreateSnapshotRequest;
import io.csiorchestrator.csi.v1.CreateSnapshotResponse;
import io.csiorchestrator.csi.v1.DeleteSnapshotRequest;
import io.csiorchestrator.csi.v1.DeleteSnapshotResponse;
import io.csiorchestrator.csi.v1.ListSnapshotsRequest;
import io.csiorchestrator.csi.v1.ListSnapshotsResponse;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeResponse;
import io.csiorchestrator.csi.v1.ControllerGetCapabilitiesRequest;
import io.csiorchestrator.csi.v1.ControllerGetCapabilitiesResponse;
import io.csiorchestrator.csi.v1.ControllerGrpc;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerPublishVolumeResponse;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerUnpublishVolumeResponse;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.CreateVolumeResponse;
import io.csiorchestrator.csi.v1.DeleteVolumeRequest;
import io.csiorchestrator.csi.v1.DeleteVolumeResponse;
import io.csiorchestrator.csi.v1.ListVolumesRequest;
import io.csiorchestrator.csi.v1.ListVolumesResponse;
import io.csiorchestrator.csi.v1.GetCapacityRequest;
import io.csiorchestrator.csi.v1.GetCapacityResponse;
import io.csiorchestrator.csi.v1.Topology;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesRequest;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesResponse;
import io.csiorchestrator.csi.v1.Volume;
import io.csiorchestrator.csi.v1.VolumeCapability;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.hostpath.state.CapabilityRecord;
import io.csiorchestrator.hostpath.state.ControllerPublication;
import io.csiorchestrator.hostpath.state.PluginState;
import io.csiorchestrator.hostpath.state.VolumeRecord;
import io.grpc.stub.StreamObserver;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * CSI Controller: volumes are directories; publishing to a node only records it (the node side
 * mounts), enforcing single-node access modes and the maximum of volumes per node.
 */
final class ControllerService extends ControllerGrpc.ControllerImplBase {

    static final long DEFAULT_CAPACITY_BYTES = 1L << 30;
    static final long MAX_CAPACITY_BYTES = 1L << 40;
    static final String TOPOLOGY_KEY = "topology.hostpath.csi.csiorchestrator.io/node";
    static final String CONTEXT_PATH = "hostpath.csiorchestrator.io/path";
    static final String PUBLISH_CONTEXT_NODE = "hostpath.csiorchestrator.io/published-node";

    private final PluginOptions options;
    private final PluginStateHolder state;
    private final VolumeDirectories directories;
    private final Supplier<MountTable> mountTable;
    private final FenceKeeper fences;
    private final VolumeLifecycle lifecycle;

    ControllerService(PluginOptions options, PluginStateHolder state, VolumeDirectories directories,
                      Supplier<MountTable> mountTable, FenceKeeper fences) {
        this.options = options;
        this.state = state;
        this.directories = directories;
        this.mountTable = mountTable;
        this.fences = fences;
        this.lifecycle = new VolumeLifecycle(options, directories);
    }

    @Override
    public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            String name = RequestChecks.requireName(request.getName());
            RequestChecks.requireCapabilities("volume_capabilities", request.getVolumeCapabilitiesList())
                    .forEach(c -> RequestChecks.requireAdvertisedMode("volume_capabilities", c, options.singleNodeMultiWriter()));
            String sourceKey = VolumeLifecycle.sourceKey(request);
            long required = request.getCapacityRange().getRequiredBytes();
            long limit = request.getCapacityRange().getLimitBytes();
            if (required < 0 || limit < 0 || (limit > 0 && required > limit)) {
                throw CsiStatus.invalidArgument("capacity_range: required_bytes " + required
                        + " and limit_bytes " + limit + " are inconsistent");
            }
            long capacity = required > 0 ? required : limit > 0 ? Math.min(limit, DEFAULT_CAPACITY_BYTES)
                    : DEFAULT_CAPACITY_BYTES;
            if (capacity > MAX_CAPACITY_BYTES) {
                throw CsiStatus.outOfRange("capacity " + capacity + " exceeds the plugin's maximum of "
                        + MAX_CAPACITY_BYTES + " bytes");
            }
            PluginState current = holder.current();
            Optional<VolumeRecord> existing = current.volumeNamed(name);
            if (existing.isPresent()) {
                VolumeRecord volume = existing.get();
                boolean fits = volume.capacityBytes() >= required && (limit == 0 || volume.capacityBytes() <= limit);
                if (!fits || !volume.parameters().equals(request.getParametersMap())) {
                    throw CsiStatus.alreadyExists("volume " + name + " exists as " + volume.id()
                            + " with capacity " + volume.capacityBytes() + " or parameters incompatible with this request");
                }
                String recorded = lifecycle.recordedSource(volume.id());
                if (!java.util.Objects.equals(recorded, sourceKey)) {
                    throw CsiStatus.alreadyExists("volume " + name + " exists as " + volume.id() + " created from "
                            + (recorded == null ? "no content source" : recorded) + ", not from "
                            + (sourceKey == null ? "no content source" : sourceKey));
                }
                return createResponse(request, volume);
            }
            // a clone or restore: the source must exist, and the new volume holds at least its size
            VolumeLifecycle.Source source = sourceKey == null ? null : lifecycle.resolve(sourceKey, current);
            if (source != null && source.sizeBytes() > capacity) {
                if (limit > 0 && source.sizeBytes() > limit) {
                    throw CsiStatus.outOfRange("the content source " + sourceKey + " has " + source.sizeBytes()
                            + " bytes, more than limit_bytes " + limit);
                }
                capacity = source.sizeBytes();
            }
            VolumeRecord volume = new VolumeRecord(volumeIdOf(name), name, capacity, request.getParametersMap());
            try {
                lifecycle.populate(volume.id(), source);
            } catch (IOException | java.io.UncheckedIOException e) {
                throw CsiStatus.internal("cannot create the directory of volume " + volume.id() + ": " + e.getMessage());
            }
            holder.commit(current.withVolume(volume));
            return createResponse(request, volume);
        }));
    }

    @Override
    public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            PluginState current = holder.current();
            if (current.volume(volumeId).isEmpty()) {
                return DeleteVolumeResponse.getDefaultInstance();
            }
            List<String> users = new ArrayList<>();
            current.publicationsOf(volumeId).forEach(p -> users.add("published to node " + p.nodeId()));
            if (current.stagings().containsKey(volumeId)) {
                users.add("staged at " + current.stagings().get(volumeId).stagingPath());
            }
            current.nodePublicationsOf(volumeId).forEach(p -> users.add("published at " + p.targetPath()));
            if (!mountTable.get().mountsUnder(directories.of(volumeId)).isEmpty()) {
                users.add("mounts below its directory");
            }
            if (!users.isEmpty()) {
                throw CsiStatus.failedPrecondition("volume " + volumeId + " is in use: " + String.join(", ", users));
            }
            try {
                directories.delete(volumeId);
            } catch (IOException e) {
                throw CsiStatus.internal("cannot delete the directory of volume " + volumeId + ": " + e.getMessage());
            }
            holder.commit(current.withoutVolume(volumeId));
            return DeleteVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void controllerPublishVolume(ControllerPublishVolumeRequest request,
                                        StreamObserver<ControllerPublishVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            requireControllerPublish();
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            String nodeId = RequestChecks.requireId("node_id", request.getNodeId());
            VolumeCapability capability = RequestChecks.requireCapability("volume_capability",
                    request.getVolumeCapability(), request.hasVolumeCapability());
            RequestChecks.requireAdvertisedMode("volume_capability", capability, options.singleNodeMultiWriter());
            PluginState current = holder.current();
            if (current.volume(volumeId).isEmpty()) {
                throw CsiStatus.notFound("volume " + volumeId + " does not exist");
            }
            if (!options.knowsNode(nodeId)) {
                throw CsiStatus.notFound("node " + nodeId + " is not known to this plugin");
            }
            ControllerPublication wanted = new ControllerPublication(volumeId, nodeId, request.getReadonly(),
                    CapabilityRecord.of(capability));
            Optional<ControllerPublication> existing = current.publication(volumeId, nodeId);
            if (existing.isPresent()) {
                if (!existing.get().equals(wanted)) {
                    throw CsiStatus.alreadyExists("volume " + volumeId + " is already published to node " + nodeId
                            + " with another capability or read-only setting");
                }
                liftFence(volumeId, nodeId);
                return publishResponse(nodeId);
            }
            List<String> otherNodes = current.publicationsOf(volumeId).stream()
                    .map(ControllerPublication::nodeId).toList();
            boolean singleNode = wanted.capability().singleNode()
                    || current.publicationsOf(volumeId).stream().anyMatch(p -> p.capability().singleNode());
            if (!otherNodes.isEmpty() && singleNode) {
                throw CsiStatus.failedPrecondition("volume " + volumeId + " is published to node "
                        + String.join(", ", otherNodes) + " and its access mode is single-node");
            }
            long max = MaxVolumes.current(options);
            if (max > 0 && current.volumesPublishedTo(nodeId) >= max) {
                throw CsiStatus.resourceExhausted("node " + nodeId + " has reached its maximum of "
                        + max + " volumes");
            }
            liftFence(volumeId, nodeId);
            holder.commit(current.withPublication(wanted));
            return publishResponse(nodeId);
        }));
    }

    @Override
    public void controllerUnpublishVolume(ControllerUnpublishVolumeRequest request,
                                          StreamObserver<ControllerUnpublishVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> {
            long fenceDeadline = fenceDeadlineNanos();
            requireControllerPublish();
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            Map<String, Long> fenceRequests = state.locked(holder -> {
                String nodeId = request.getNodeId().isEmpty() ? ""
                        : RequestChecks.requireId("node_id", request.getNodeId());
                PluginState current = holder.current();
                // The spec: a volume that no longer exists can be regarded as unpublished from every node.
                if (current.volume(volumeId).isEmpty()) {
                    return Map.<String, Long>of();
                }
                Map<String, Long> requests = Map.of();
                if (fences.enabled()) {
                    // Fenced first: a crash before the publication is gone leaves the fence, and a retry finds both.
                    Set<String> nodes = nodeId.isEmpty()
                            ? current.publicationsOf(volumeId).stream().map(ControllerPublication::nodeId)
                                    .collect(Collectors.toCollection(java.util.TreeSet::new))
                            : Set.of(nodeId);
                    requests = fences.request(volumeId, nodes);
                }
                PluginState next = current.withoutPublications(volumeId, nodeId);
                if (!next.equals(current)) {
                    holder.commit(next);
                }
                return requests;
            });
            if (!fenceRequests.isEmpty()) {
                fences.awaitEnforced(volumeId, fenceRequests, fenceDeadline);
            }
            return ControllerUnpublishVolumeResponse.getDefaultInstance();
        });
    }

    @Override
    public void validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest request,
                                           StreamObserver<ValidateVolumeCapabilitiesResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            if (request.getVolumeCapabilitiesCount() == 0) {
                throw CsiStatus.invalidArgument("volume_capabilities is required");
            }
            if (holder.current().volume(volumeId).isEmpty()) {
                throw CsiStatus.notFound("volume " + volumeId + " does not exist");
            }
            List<String> unsupported = request.getVolumeCapabilitiesList().stream()
                    .map(RequestChecks::unsupportedBecause)
                    .flatMap(Optional::stream)
                    .distinct()
                    .toList();
            if (!unsupported.isEmpty()) {
                return ValidateVolumeCapabilitiesResponse.newBuilder()
                        .setMessage(String.join("; ", unsupported))
                        .build();
            }
            return ValidateVolumeCapabilitiesResponse.newBuilder()
                    .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                            .addAllVolumeCapabilities(request.getVolumeCapabilitiesList())
                            .putAllVolumeContext(request.getVolumeContextMap())
                            .putAllParameters(request.getParametersMap()))
                    .build();
        }));
    }

    @Override
    public void listVolumes(ListVolumesRequest request, StreamObserver<ListVolumesResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            if (request.getMaxEntries() < 0) {
                throw CsiStatus.invalidArgument("max_entries may not be negative");
            }
            List<VolumeRecord> volumes = List.copyOf(holder.current().volumes().values());
            int start = 0;
            if (!request.getStartingToken().isEmpty()) {
                try {
                    start = Integer.parseInt(request.getStartingToken());
                } catch (NumberFormatException e) {
                    start = -1;
                }
                if (start < 0 || start > volumes.size()) {
                    throw CsiStatus.aborted("starting_token " + request.getStartingToken() + " is not valid");
                }
            }
            int end = request.getMaxEntries() == 0 ? volumes.size()
                    : Math.min(volumes.size(), start + request.getMaxEntries());
            ListVolumesResponse.Builder response = ListVolumesResponse.newBuilder();
            for (VolumeRecord volume : volumes.subList(start, end)) {
                response.addEntries(ListVolumesResponse.Entry.newBuilder()
                        .setVolume(toVolume(volume))
                        .setStatus(ListVolumesResponse.VolumeStatus.newBuilder()
                                .addAllPublishedNodeIds(holder.current().publicationsOf(volume.id()).stream()
                                        .map(ControllerPublication::nodeId).collect(Collectors.toList()))));
            }
            if (end < volumes.size()) {
                response.setNextToken(Integer.toString(end));
            }
            return response.build();
        }));
    }

    @Override
    public void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> lifecycle.createSnapshot(request, holder.current())));
    }

    @Override
    public void deleteSnapshot(DeleteSnapshotRequest request, StreamObserver<DeleteSnapshotResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> lifecycle.deleteSnapshot(request)));
    }

    @Override
    public void listSnapshots(ListSnapshotsRequest request, StreamObserver<ListSnapshotsResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> lifecycle.listSnapshots(request)));
    }

    @Override
    public void controllerExpandVolume(ControllerExpandVolumeRequest request,
                                       StreamObserver<ControllerExpandVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> lifecycle.controllerExpand(request, holder)));
    }

    /**
     * GetCapacity (GET_CAPACITY): statvfs of the file system holding the volume directories, the bytes an
     * unprivileged writer may still use there ({@link FileSystemFigures}). A topology segment this process's volumes are
     * not accessible from (another node's, or keys it does not know; with a shared dir every node's segment is the
     * same pool) and a block capability (not supported) have 0. The parameters are not looked at: CreateVolume takes
     * none that change where a volume goes.
     */
    @Override
    public void getCapacity(GetCapacityRequest request, StreamObserver<GetCapacityResponse> observer) {
        GrpcCalls.answer(observer, () -> {
            boolean block = request.getVolumeCapabilitiesList().stream().anyMatch(VolumeCapability::hasBlock);
            Map<String, String> segment = request.getAccessibleTopology().getSegmentsMap();
            boolean reachable = options.sharedDir() != null || segment.isEmpty()
                    || segment.equals(Map.of(TOPOLOGY_KEY, options.nodeId()));
            if (block || !reachable) {
                return GetCapacityResponse.newBuilder().setAvailableCapacity(0)
                        .setMaximumVolumeSize(com.google.protobuf.Int64Value.of(0)).build();
            }
            FileSystemFigures figures;
            try {
                figures = FileSystemFigures.of(options.volumesParent());
            } catch (IOException e) {
                throw CsiStatus.internal("cannot read the capacity of " + options.volumesParent() + ": " + e.getMessage());
            }
            return GetCapacityResponse.newBuilder().setAvailableCapacity(figures.availableBytes())
                    .setMaximumVolumeSize(com.google.protobuf.Int64Value.of(
                            Math.min(figures.availableBytes(), MAX_CAPACITY_BYTES)))
                    .build();
        });
    }

    @Override
    public void controllerGetCapabilities(ControllerGetCapabilitiesRequest request,
                                          StreamObserver<ControllerGetCapabilitiesResponse> observer) {
        GrpcCalls.answer(observer, () -> {
            ControllerGetCapabilitiesResponse.Builder response = ControllerGetCapabilitiesResponse.newBuilder()
                    .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME))
                    .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.LIST_VOLUMES))
                    .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.LIST_VOLUMES_PUBLISHED_NODES))
                    .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT))
                    .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS))
                    .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.CLONE_VOLUME))
                    .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.EXPAND_VOLUME))
                    .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.GET_CAPACITY));
            if (options.singleNodeMultiWriter()) {
                response.addCapabilities(rpc(ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER));
            }
            if (options.controllerPublish()) {
                response.addCapabilities(rpc(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME))
                        .addCapabilities(rpc(ControllerServiceCapability.RPC.Type.PUBLISH_READONLY));
            }
            return response.build();
        });
    }

    /** Volume ids derive from names, so a CreateVolume retried after a crash finds its directory. */
    static String volumeIdOf(String name) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
            return "hp-" + HexFormat.of().formatHex(digest, 0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 missing from the JDK", e);
        }
    }

    private CreateVolumeResponse createResponse(CreateVolumeRequest request, VolumeRecord volume) {
        Volume.Builder answer = toVolume(volume).toBuilder();
        if (request.hasVolumeContentSource()) {
            answer.setContentSource(request.getVolumeContentSource());
        }
        return CreateVolumeResponse.newBuilder().setVolume(answer).build();
    }

    /**
     * The volume as CSI reports it. Its accessible topology is this node's segment, except with a shared dir: then the
     * volume's directory is reached from every node sharing it, and no topology says so (CSI: without
     * accessible_topology the CO may assume the volume is equally accessible from all nodes).
     */
    private Volume toVolume(VolumeRecord volume) {
        Volume.Builder v = Volume.newBuilder()
                .setVolumeId(volume.id())
                .setCapacityBytes(volume.capacityBytes())
                .putVolumeContext(CONTEXT_PATH, directories.of(volume.id()).toString());
        if (options.sharedDir() == null) {
            v.addAccessibleTopology(Topology.newBuilder().putSegments(TOPOLOGY_KEY, options.nodeId()));
        }
        return v.build();
    }

    /** Lifts a storage fence of the volume from the node (ControllerPublishVolume is the way back). */
    private void liftFence(String volumeId, String nodeId) {
        if (fences.enabled()) {
            fences.lift(volumeId, nodeId);
        }
    }

    /**
     * When a fencing ControllerUnpublishVolume stops waiting ({@link System#nanoTime()}): after --fence-ack-timeout,
     * and 250 ms before the call's own deadline.
     */
    private long fenceDeadlineNanos() {
        long wait = options.fenceAckTimeout().toNanos();
        io.grpc.Deadline callDeadline = io.grpc.Context.current().getDeadline();
        if (callDeadline != null) {
            wait = Math.min(wait, callDeadline.timeRemaining(java.util.concurrent.TimeUnit.NANOSECONDS)
                    - java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(250));
        }
        return System.nanoTime() + wait;
    }

    private void requireControllerPublish() {
        if (!options.controllerPublish()) {
            throw CsiStatus.unimplemented("this plugin runs with --controller-publish=false");
        }
    }

    private static ControllerPublishVolumeResponse publishResponse(String nodeId) {
        return ControllerPublishVolumeResponse.newBuilder().putPublishContext(PUBLISH_CONTEXT_NODE, nodeId).build();
    }

    private static ControllerServiceCapability rpc(ControllerServiceCapability.RPC.Type type) {
        return ControllerServiceCapability.newBuilder()
                .setRpc(ControllerServiceCapability.RPC.newBuilder().setType(type))
                .build();
    }
}
