package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.v1.NodeGetCapabilitiesRequest;
import io.csiorchestrator.csi.v1.NodeGetCapabilitiesResponse;
import io.csiorchestrator.csi.v1.NodeExpandVolumeRequest;
import io.csiorchestrator.csi.v1.NodeExpandVolumeResponse;
import io.csiorchestrator.csi.v1.NodeGetInfoRequest;
import io.csiorchestrator.csi.v1.NodeGetInfoResponse;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest;
import io.csiorchestrator.csi.v1.NodeGetVolumeStatsResponse;
import io.csiorchestrator.csi.v1.NodeGrpc;
import io.csiorchestrator.csi.v1.NodePublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodePublishVolumeResponse;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeResponse;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnpublishVolumeResponse;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeRequest;
import io.csiorchestrator.csi.v1.NodeUnstageVolumeResponse;
import io.csiorchestrator.csi.v1.Topology;
import io.csiorchestrator.csi.v1.VolumeCapability;
import io.csiorchestrator.csi.v1.VolumeUsage;
import io.csiorchestrator.hostpath.mount.Mounter;
import io.csiorchestrator.hostpath.state.CapabilityRecord;
import io.csiorchestrator.hostpath.state.NodePublication;
import io.csiorchestrator.hostpath.state.PluginState;
import io.csiorchestrator.hostpath.state.Staging;
import io.grpc.stub.StreamObserver;

import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * CSI Node: staging bind-mounts the volume's directory at the staging path; publishing
 * bind-mounts the staging path (or, without staging, the volume's directory) at the target path,
 * read-only when asked. Repeated calls are answered as the spec's idempotency rules say, and a
 * mount that disappeared under a recorded staging or publication is made again by the same call.
 */
final class NodeService extends NodeGrpc.NodeImplBase {

    private static final Logger LOG = Logger.getLogger(NodeService.class.getName());

    private final PluginOptions options;
    private final PluginStateHolder state;
    private final VolumeDirectories directories;
    private final Mounter mounter;
    private final FenceKeeper fences;
    private final VolumeLifecycle lifecycle;

    NodeService(PluginOptions options, PluginStateHolder state, VolumeDirectories directories, Mounter mounter,
                FenceKeeper fences) {
        this.options = options;
        this.state = state;
        this.directories = directories;
        this.mounter = mounter;
        this.fences = fences;
        this.lifecycle = new VolumeLifecycle(options, directories);
    }

    @Override
    public void nodeStageVolume(NodeStageVolumeRequest request, StreamObserver<NodeStageVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            requireStaging();
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            Path stagingPath = RequestChecks.requirePath("staging_target_path", request.getStagingTargetPath());
            VolumeCapability capability = RequestChecks.requireCapability("volume_capability",
                    request.getVolumeCapability(), request.hasVolumeCapability());
            RequestChecks.requireAdvertisedMode("volume_capability", capability, options.singleNodeMultiWriter());
            PluginState current = holder.current();
            requireVolume(current, volumeId);
            fences.requireNotFenced(volumeId);
            requireControllerPublished(current, volumeId);
            Staging wanted = new Staging(volumeId, stagingPath.toString(), CapabilityRecord.of(capability));
            Staging existing = current.stagings().get(volumeId);
            if (existing != null) {
                if (!existing.stagingPath().equals(wanted.stagingPath())) {
                    throw CsiStatus.failedPrecondition("volume " + volumeId + " is already staged at "
                            + existing.stagingPath() + "; a volume has one staging path per node");
                }
                if (!existing.equals(wanted)) {
                    throw CsiStatus.alreadyExists("volume " + volumeId + " is already staged at " + stagingPath
                            + " with another capability");
                }
                ensureMounted(directories.of(volumeId), stagingPath, wanted.capability().readerOnly(), volumeId);
                return NodeStageVolumeResponse.getDefaultInstance();
            }
            if (mounter.mountAt(stagingPath).isPresent() && !isOurs(stagingPath, volumeId)) {
                throw CsiStatus.alreadyExists("something else is mounted at " + stagingPath);
            }
            if (!options.controllerPublish()) {
                requireRoomOnNode(current, volumeId);
            }
            ensureMounted(directories.of(volumeId), stagingPath, wanted.capability().readerOnly(), volumeId);
            holder.commit(current.withStaging(wanted));
            return NodeStageVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodeUnstageVolume(NodeUnstageVolumeRequest request, StreamObserver<NodeUnstageVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            requireStaging();
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            Path stagingPath = RequestChecks.requirePath("staging_target_path", request.getStagingTargetPath());
            PluginState current = holder.current();
            requireVolume(current, volumeId);
            List<NodePublication> publications = current.nodePublicationsOf(volumeId).stream()
                    .filter(p -> p.sourcePath().equals(stagingPath.toString()))
                    .toList();
            if (!publications.isEmpty()) {
                throw CsiStatus.failedPrecondition("volume " + volumeId + " is still published at "
                        + publications.stream().map(NodePublication::targetPath).toList()
                        + "; unpublish it there first");
            }
            Staging existing = current.stagings().get(volumeId);
            boolean recorded = existing != null && existing.stagingPath().equals(stagingPath.toString());
            if (recorded || (mounter.mountAt(stagingPath).isPresent() && isOurs(stagingPath, volumeId))) {
                unmount(stagingPath);
            }
            if (recorded) {
                holder.commit(current.withoutStaging(volumeId));
            }
            return NodeUnstageVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodePublishVolume(NodePublishVolumeRequest request, StreamObserver<NodePublishVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            Path targetPath = RequestChecks.requirePath("target_path", request.getTargetPath());
            VolumeCapability capability = RequestChecks.requireCapability("volume_capability",
                    request.getVolumeCapability(), request.hasVolumeCapability());
            RequestChecks.requireAdvertisedMode("volume_capability", capability, options.singleNodeMultiWriter());
            PluginState current = holder.current();
            fences.requireNotFenced(volumeId);
            Path source;
            if (options.stageUnstage()) {
                Path stagingPath = RequestChecks.requirePath("staging_target_path", request.getStagingTargetPath());
                requireVolume(current, volumeId);
                Staging staging = current.stagings().get(volumeId);
                if (staging == null || !staging.stagingPath().equals(stagingPath.toString())) {
                    throw CsiStatus.failedPrecondition("volume " + volumeId + " is not staged at " + stagingPath);
                }
                if (mounter.mountAt(stagingPath).isEmpty()) {
                    throw CsiStatus.failedPrecondition("the staging mount of volume " + volumeId + " at "
                            + stagingPath + " is gone; stage the volume again");
                }
                source = stagingPath;
            } else {
                requireVolume(current, volumeId);
                requireControllerPublished(current, volumeId);
                source = directories.of(volumeId);
            }
            CapabilityRecord capabilityRecord = CapabilityRecord.of(capability);
            boolean readOnly = request.getReadonly() || capabilityRecord.readerOnly();
            NodePublication wanted = new NodePublication(volumeId, targetPath.toString(), source.toString(), readOnly,
                    capabilityRecord);
            NodePublication existing = current.nodePublications().get(targetPath.toString());
            if (existing != null) {
                if (!existing.equals(wanted)) {
                    throw CsiStatus.alreadyExists("target " + targetPath + " already holds "
                            + (existing.volumeId().equals(volumeId) ? "this volume" : "volume " + existing.volumeId())
                            + " with another capability, source or read-only setting");
                }
                ensureMounted(source, targetPath, readOnly, volumeId);
                return NodePublishVolumeResponse.getDefaultInstance();
            }
            if (mounter.mountAt(targetPath).isPresent() && !isOurs(targetPath, volumeId)) {
                throw CsiStatus.alreadyExists("something else is mounted at " + targetPath);
            }
            if (!options.stageUnstage() && !options.controllerPublish()) {
                requireRoomOnNode(current, volumeId);
            }
            ensureMounted(source, targetPath, readOnly, volumeId);
            holder.commit(current.withNodePublication(wanted));
            return NodePublishVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodeUnpublishVolume(NodeUnpublishVolumeRequest request,
                                    StreamObserver<NodeUnpublishVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            Path targetPath = RequestChecks.requirePath("target_path", request.getTargetPath());
            PluginState current = holder.current();
            requireVolume(current, volumeId);
            NodePublication existing = current.nodePublications().get(targetPath.toString());
            if (existing != null && !existing.volumeId().equals(volumeId)) {
                throw CsiStatus.failedPrecondition("target " + targetPath + " holds volume " + existing.volumeId()
                        + ", not " + volumeId);
            }
            if (existing != null || (mounter.mountAt(targetPath).isPresent() && isOurs(targetPath, volumeId))) {
                unmount(targetPath);
                removeTargetDirectory(targetPath);
            }
            if (existing != null) {
                holder.commit(current.withoutNodePublication(targetPath.toString()));
            }
            return NodeUnpublishVolumeResponse.getDefaultInstance();
        }));
    }

    @Override
    public void nodeGetVolumeStats(NodeGetVolumeStatsRequest request,
                                   StreamObserver<NodeGetVolumeStatsResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> {
            String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
            if (request.getVolumePath().isEmpty()) {
                throw CsiStatus.invalidArgument("volume_path is required");
            }
            PluginState current = holder.current();
            requireVolume(current, volumeId);
            // The spec: NOT_FOUND when the volume is not accessible at the given path. A path that
            // cannot be one of ours (relative, with '..', too long) is such a path, not a bad argument.
            Optional<Path> usable = RequestChecks.usablePath(request.getVolumePath());
            Path volumePath = usable.filter(path -> current.nodePublicationsOf(volumeId).stream()
                            .anyMatch(p -> p.targetPath().equals(path.toString()))
                            || Optional.ofNullable(current.stagings().get(volumeId))
                            .map(s -> s.stagingPath().equals(path.toString())).orElse(false))
                    .filter(Files::isDirectory)
                    .orElseThrow(() -> CsiStatus.notFound("volume " + volumeId + " is not published or staged at "
                            + usable.map(Path::toString).orElse("that path (not an absolute path)")));
            // the volume's capacity as this node's "file system" knows it (VolumeLifecycle), against the
            // bytes its directory holds: reported, and abnormal past the capacity, but not enforced
            long total = lifecycle.fileSystemBytes(current.volume(volumeId).orElseThrow());
            long used = lifecycle.usedBytes(volumeId);
            // statvfs of the published path (issue 34): the bytes still free there bound what is available, and the
            // inodes are the file system's (a directory has no inode quota either)
            FileSystemFigures figures;
            try {
                figures = FileSystemFigures.of(volumePath);
            } catch (java.io.IOException e) {
                throw CsiStatus.internal("cannot read the file system figures of " + volumePath + ": " + e.getMessage());
            }
            NodeGetVolumeStatsResponse.Builder response = NodeGetVolumeStatsResponse.newBuilder()
                    .addUsage(VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.BYTES).setTotal(total)
                            .setAvailable(Math.min(Math.max(0, total - used), figures.availableBytes())).setUsed(used));
            figures.inodes().ifPresent(inodes -> response.addUsage(VolumeUsage.newBuilder()
                    .setUnit(VolumeUsage.Unit.INODES).setTotal(inodes.total()).setAvailable(inodes.available())
                    .setUsed(inodes.used())));
            return response
                    .setVolumeCondition(VolumeLifecycle.condition(directories.condition(volumeId), volumeId, used, total))
                    .build();
        }));
    }

    @Override
    public void nodeExpandVolume(NodeExpandVolumeRequest request, StreamObserver<NodeExpandVolumeResponse> observer) {
        GrpcCalls.answer(observer, () -> state.locked(holder -> lifecycle.nodeExpand(request, holder.current())));
    }

    @Override
    public void nodeGetCapabilities(NodeGetCapabilitiesRequest request,
                                    StreamObserver<NodeGetCapabilitiesResponse> observer) {
        GrpcCalls.answer(observer, () -> {
            NodeGetCapabilitiesResponse.Builder response = NodeGetCapabilitiesResponse.newBuilder()
                    .addCapabilities(rpc(NodeServiceCapability.RPC.Type.GET_VOLUME_STATS))
                    .addCapabilities(rpc(NodeServiceCapability.RPC.Type.VOLUME_CONDITION))
                    .addCapabilities(rpc(NodeServiceCapability.RPC.Type.EXPAND_VOLUME));
            if (options.stageUnstage()) {
                response.addCapabilities(rpc(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME));
            }
            if (options.singleNodeMultiWriter()) {
                response.addCapabilities(rpc(NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER));
            }
            return response.build();
        });
    }

    @Override
    public void nodeGetInfo(NodeGetInfoRequest request, StreamObserver<NodeGetInfoResponse> observer) {
        GrpcCalls.answer(observer, () -> NodeGetInfoResponse.newBuilder()
                .setNodeId(options.nodeId())
                .setMaxVolumesPerNode(MaxVolumes.current(options))
                .setAccessibleTopology(Topology.newBuilder().putAllSegments(options.topology())
                        .putSegments(ControllerService.TOPOLOGY_KEY, options.nodeId()))
                .build());
    }

    /** Unmounts the staging mounts this plugin recorded (for --unmount-staging-on-exit). */
    void unmountStagings() {
        state.locked(holder -> {
            for (Staging staging : holder.current().stagings().values()) {
                try {
                    mounter.unmountAll(Path.of(staging.stagingPath()));
                    LOG.info("unmounted the staging mount of volume " + staging.volumeId() + " at "
                            + staging.stagingPath());
                } catch (IOException e) {
                    LOG.warning("cannot unmount " + staging.stagingPath() + ": " + e.getMessage());
                }
            }
            return null;
        });
    }

    // ---------------------------------------------------------------- helpers

    private void requireStaging() {
        if (!options.stageUnstage()) {
            throw CsiStatus.unimplemented("this plugin runs with --stage-unstage=false");
        }
    }

    private static void requireVolume(PluginState state, String volumeId) {
        if (state.volume(volumeId).isEmpty()) {
            throw CsiStatus.notFound("volume " + volumeId + " does not exist");
        }
    }

    private void requireControllerPublished(PluginState state, String volumeId) {
        if (options.controllerPublish() && state.publication(volumeId, options.nodeId()).isEmpty()) {
            throw CsiStatus.failedPrecondition("volume " + volumeId + " is not published to node "
                    + options.nodeId() + " (ControllerPublishVolume first)");
        }
    }

    private void requireRoomOnNode(PluginState state, String volumeId) {
        boolean alreadyHere = state.stagings().containsKey(volumeId) || !state.nodePublicationsOf(volumeId).isEmpty();
        long max = MaxVolumes.current(options);
        if (max > 0 && !alreadyHere && state.volumesInUseOnNode() >= max) {
            throw CsiStatus.resourceExhausted("node " + options.nodeId() + " has reached its maximum of "
                    + max + " volumes");
        }
    }

    /**
     * The mount at {@code mountPoint} is this volume's when its root is the volume's directory (a bind mount of it or of
     * its staging): the path shows that very directory (same device and inode).
     */
    private boolean isOurs(Path mountPoint, String volumeId) {
        try {
            return Files.isSameFile(mountPoint, directories.of(volumeId));
        } catch (IOException e) {
            return false;
        }
    }

    /** Bind-mounts source at target unless that is already done; creates the target directory. */
    private void ensureMounted(Path source, Path target, boolean readOnly, String volumeId) {
        try {
            Optional<Mounter.MountPoint> mount = mounter.mountAt(target);
            if (mount.isPresent()) {
                if (mount.get().readOnly() != readOnly) {
                    throw CsiStatus.alreadyExists(target + " is mounted " + (readOnly ? "read-write" : "read-only")
                            + ", not as asked");
                }
                return;
            }
            Files.createDirectories(target);
            mounter.bind(source, target, readOnly);
            LOG.info("mounted volume " + volumeId + " at " + target + (readOnly ? " read-only" : ""));
        } catch (IOException e) {
            throw CsiStatus.internal("cannot mount volume " + volumeId + " at " + target + ": " + e.getMessage());
        }
    }

    private void unmount(Path target) {
        try {
            mounter.unmountAll(target);
        } catch (IOException e) {
            throw CsiStatus.internal("cannot unmount " + target + ": " + e.getMessage());
        }
    }

    /** The plugin created the target directory, so it removes it; a non-empty one is left alone. */
    private static void removeTargetDirectory(Path target) {
        try {
            Files.deleteIfExists(target);
        } catch (DirectoryNotEmptyException e) {
            LOG.warning("target " + target + " is not empty after unmounting; left in place");
        } catch (IOException e) {
            LOG.warning("cannot remove target " + target + ": " + e.getMessage());
        }
    }

    private static NodeServiceCapability rpc(NodeServiceCapability.RPC.Type type) {
        return NodeServiceCapability.newBuilder()
                .setRpc(NodeServiceCapability.RPC.newBuilder().setType(type))
                .build();
    }
}
