package io.csiorchestrator.hostpath;

import com.google.protobuf.Timestamp;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeRequest;
import io.csiorchestrator.csi.v1.ControllerExpandVolumeResponse;
import io.csiorchestrator.csi.v1.CreateSnapshotRequest;
import io.csiorchestrator.csi.v1.CreateSnapshotResponse;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.DeleteSnapshotRequest;
import io.csiorchestrator.csi.v1.DeleteSnapshotResponse;
import io.csiorchestrator.csi.v1.ListSnapshotsRequest;
import io.csiorchestrator.csi.v1.ListSnapshotsResponse;
import io.csiorchestrator.csi.v1.NodeExpandVolumeRequest;
import io.csiorchestrator.csi.v1.NodeExpandVolumeResponse;
import io.csiorchestrator.csi.v1.Snapshot;
import io.csiorchestrator.csi.v1.VolumeCondition;
import io.csiorchestrator.csi.v1.VolumeContentSource;
import io.csiorchestrator.hostpath.state.JsonFile;
import io.csiorchestrator.hostpath.state.LifecycleBook;
import io.csiorchestrator.hostpath.state.NodeExpansions;
import io.csiorchestrator.hostpath.state.PluginState;
import io.csiorchestrator.hostpath.state.SnapshotRecord;
import io.csiorchestrator.hostpath.state.VolumeRecord;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Snapshots, clones and expansion of the hostpath plugin (issue 14 item 6). Every method runs under
 * the plugin's state lock ({@link PluginStateHolder#locked}) and reads its files afresh.
 *
 * <ul>
 *   <li>A snapshot is a copy of the source volume's directory at {@code snapshots/<id>} (beside
 *       {@code volumes/}), ready to use when CreateSnapshot answers; its id derives from its name, so
 *       the same name and source again is the same snapshot, the same name with another source
 *       ALREADY_EXISTS.</li>
 *   <li>CreateVolume from a snapshot or a volume copies its content into the new volume's directory;
 *       the capacity is at least the source's.</li>
 *   <li>ControllerExpandVolume records the larger capacity and asks for node expansion: until a node ran
 *       NodeExpandVolume, NodeGetVolumeStats there reports the size from before. The capacity is
 *       reported, not enforced as a quota (a directory has none): NodeGetVolumeStats reports the bytes
 *       the directory holds against it, and the volume condition turns abnormal when they exceed it.</li>
 * </ul>
 */
final class VolumeLifecycle {

    static final String LIFECYCLE_FILE = "lifecycle.json";
    static final String NODE_EXPANSIONS_FILE = "node-expansions.json";
    static final String SNAPSHOTS_DIR = "snapshots";

    private final VolumeDirectories directories;
    private final JsonFile<LifecycleBook> book;
    private final JsonFile<NodeExpansions> nodeSizes;
    private final Path snapshotsRoot;
    private final boolean offlineExpansion;

    VolumeLifecycle(PluginOptions options, VolumeDirectories directories) {
        this.directories = directories;
        this.offlineExpansion = options.offlineExpansion();
        this.book = new JsonFile<>(options.volumesParent().resolve(LIFECYCLE_FILE), LifecycleBook.class,
                LifecycleBook::empty);
        this.nodeSizes = new JsonFile<>(options.stateDir().resolve(NODE_EXPANSIONS_FILE), NodeExpansions.class,
                NodeExpansions::empty);
        this.snapshotsRoot = options.volumesParent().resolve(SNAPSHOTS_DIR);
    }

    // ------------------------------------------------------------------ snapshots

    CreateSnapshotResponse createSnapshot(CreateSnapshotRequest request, PluginState current) {
        String name = RequestChecks.requireName(request.getName());
        String sourceId = RequestChecks.requireId("source_volume_id", request.getSourceVolumeId());
        LifecycleBook loaded = book.load();
        Optional<SnapshotRecord> existing = loaded.snapshots().values().stream()
                .filter(s -> s.name().equals(name)).findFirst();
        if (existing.isPresent()) {
            if (!existing.get().sourceVolumeId().equals(sourceId)) {
                throw CsiStatus.alreadyExists("snapshot " + name + " exists as " + existing.get().id()
                        + " of volume " + existing.get().sourceVolumeId() + ", not of volume " + sourceId);
            }
            return CreateSnapshotResponse.newBuilder().setSnapshot(toSnapshot(existing.get())).build();
        }
        VolumeRecord source = current.volume(sourceId)
                .orElseThrow(() -> CsiStatus.notFound("source volume " + sourceId + " does not exist"));
        String id = snapshotIdOf(name);
        try {
            copyFresh(directories.of(sourceId), snapshotsRoot.resolve(id));
        } catch (IOException | UncheckedIOException e) {
            throw CsiStatus.internal("cannot copy volume " + sourceId + " into snapshot " + id + ": " + e.getMessage());
        }
        Instant now = Instant.now();
        SnapshotRecord snapshot = new SnapshotRecord(id, name, sourceId, source.capacityBytes(), now.getEpochSecond(),
                now.getNano(), request.getParametersMap());
        book.save(loaded.withSnapshot(snapshot));
        return CreateSnapshotResponse.newBuilder().setSnapshot(toSnapshot(snapshot)).build();
    }

    /** OK for a snapshot that does not exist (CSI); a snapshot's copy does not depend on its volume. */
    DeleteSnapshotResponse deleteSnapshot(DeleteSnapshotRequest request) {
        String id = RequestChecks.requireId("snapshot_id", request.getSnapshotId());
        try {
            VolumeDirectories.deleteTree(snapshotsRoot.resolve(id));
        } catch (IOException e) {
            throw CsiStatus.internal("cannot delete the copy of snapshot " + id + ": " + e.getMessage());
        }
        LifecycleBook loaded = book.load();
        if (loaded.snapshots().containsKey(id)) {
            book.save(loaded.withoutSnapshot(id));
        }
        return DeleteSnapshotResponse.getDefaultInstance();
    }

    /** Filters by snapshot id and source volume (an unknown one gives an empty list), pages by index. */
    ListSnapshotsResponse listSnapshots(ListSnapshotsRequest request) {
        if (request.getMaxEntries() < 0) {
            throw CsiStatus.invalidArgument("max_entries may not be negative");
        }
        List<SnapshotRecord> all = book.load().snapshots().values().stream()
                .filter(s -> request.getSnapshotId().isEmpty() || s.id().equals(request.getSnapshotId()))
                .filter(s -> request.getSourceVolumeId().isEmpty() || s.sourceVolumeId().equals(request.getSourceVolumeId()))
                .toList();
        int start = Paging.start(request.getStartingToken(), all.size());
        int end = Paging.end(start, request.getMaxEntries(), all.size());
        ListSnapshotsResponse.Builder response = ListSnapshotsResponse.newBuilder();
        all.subList(start, end).forEach(s -> response.addEntries(
                ListSnapshotsResponse.Entry.newBuilder().setSnapshot(toSnapshot(s))));
        if (end < all.size()) {
            response.setNextToken(Integer.toString(end));
        }
        return response.build();
    }

    // ------------------------------------------------------------------ clones and restores

    /** A CreateVolume content source: its key in the book, the directory to copy and its size. */
    record Source(String key, Path directory, long sizeBytes) {
    }

    /** The request's content source key ({@code snapshot:<id>} or {@code volume:<id>}), or null for none. */
    static String sourceKey(CreateVolumeRequest request) {
        if (!request.hasVolumeContentSource()) {
            return null;
        }
        VolumeContentSource source = request.getVolumeContentSource();
        if (source.hasSnapshot()) {
            return "snapshot:" + RequestChecks.requireId("volume_content_source.snapshot.snapshot_id",
                    source.getSnapshot().getSnapshotId());
        }
        if (source.hasVolume()) {
            return "volume:" + RequestChecks.requireId("volume_content_source.volume.volume_id",
                    source.getVolume().getVolumeId());
        }
        throw CsiStatus.invalidArgument("volume_content_source names neither a snapshot nor a volume");
    }

    /** The source a new volume copies, which must exist (NOT_FOUND otherwise, as CSI says). */
    Source resolve(String key, PluginState current) {
        String id = key.substring(key.indexOf(':') + 1);
        if (key.startsWith("snapshot:")) {
            SnapshotRecord snapshot = Optional.ofNullable(book.load().snapshots().get(id))
                    .orElseThrow(() -> CsiStatus.notFound("source snapshot " + id + " does not exist"));
            return new Source(key, snapshotsRoot.resolve(id), snapshot.sizeBytes());
        }
        VolumeRecord volume = current.volume(id)
                .orElseThrow(() -> CsiStatus.notFound("source volume " + id + " does not exist"));
        return new Source(key, directories.of(id), volume.capacityBytes());
    }

    /** The source key a volume was created with, or null. */
    String recordedSource(String volumeId) {
        return book.load().volumeSources().get(volumeId);
    }

    /** Makes the new volume's directory, with the source's content when there is one, and records its source. */
    void populate(String volumeId, Source source) throws IOException {
        if (source == null) {
            directories.create(volumeId);
        } else {
            copyFresh(source.directory(), directories.of(volumeId));
        }
        book.save(book.load().withNewVolume(volumeId, source == null ? null : source.key()));
    }

    // ------------------------------------------------------------------ expansion

    ControllerExpandVolumeResponse controllerExpand(ControllerExpandVolumeRequest request, PluginStateHolder holder) {
        String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
        if (!request.hasCapacityRange()) {
            throw CsiStatus.invalidArgument("capacity_range is required");
        }
        long required = request.getCapacityRange().getRequiredBytes();
        long limit = request.getCapacityRange().getLimitBytes();
        if (required < 0 || limit < 0 || (limit > 0 && required > limit)) {
            throw CsiStatus.invalidArgument("capacity_range: required_bytes " + required + " and limit_bytes "
                    + limit + " are inconsistent");
        }
        if (required > ControllerService.MAX_CAPACITY_BYTES) {
            throw CsiStatus.outOfRange("capacity " + required + " exceeds the plugin's maximum of "
                    + ControllerService.MAX_CAPACITY_BYTES + " bytes");
        }
        PluginState current = holder.current();
        VolumeRecord volume = current.volume(volumeId)
                .orElseThrow(() -> CsiStatus.notFound("volume " + volumeId + " does not exist"));
        if (limit > 0 && volume.capacityBytes() > limit) {
            throw CsiStatus.outOfRange("volume " + volumeId + " has " + volume.capacityBytes()
                    + " bytes already, more than limit_bytes " + limit + "; the plugin does not shrink volumes");
        }
        long capacity = volume.capacityBytes();
        if (required > capacity && offlineExpansion) {
            List<String> where = new java.util.ArrayList<>();
            current.publicationsOf(volumeId).forEach(p -> where.add("controller-published to node " + p.nodeId()));
            if (current.stagings().containsKey(volumeId)) {
                where.add("staged");
            }
            current.nodePublicationsOf(volumeId).forEach(p -> where.add("published at " + p.targetPath()));
            if (!where.isEmpty()) {
                throw CsiStatus.failedPrecondition("volume " + volumeId + " is in use (" + String.join(", ", where)
                        + "); this plugin expands volumes offline only (VolumeExpansion OFFLINE): unpublish it first");
            }
        }
        if (required > capacity) {
            // the size nodes see until NodeExpandVolume, recorded before the capacity grows
            book.save(book.load().withFileSystemBytesIfAbsent(volumeId, capacity));
            holder.commit(current.withVolume(new VolumeRecord(volumeId, volume.name(), required, volume.parameters())));
            capacity = required;
        }
        return ControllerExpandVolumeResponse.newBuilder().setCapacityBytes(capacity)
                .setNodeExpansionRequired(book.load().fileSystemBytes().containsKey(volumeId)).build();
    }

    /**
     * FAILED_PRECONDITION when the controller has not expanded the volume to the requested size yet:
     * the same call cannot succeed until ControllerExpandVolume did, so the CO must not retry it.
     */
    NodeExpandVolumeResponse nodeExpand(NodeExpandVolumeRequest request, PluginState current) {
        String volumeId = RequestChecks.requireId("volume_id", request.getVolumeId());
        if (request.getVolumePath().isEmpty()) {
            throw CsiStatus.invalidArgument("volume_path is required");
        }
        VolumeRecord volume = current.volume(volumeId)
                .orElseThrow(() -> CsiStatus.notFound("volume " + volumeId + " does not exist"));
        requireStagedOrPublishedAt(current, volumeId, request.getVolumePath());
        long required = request.getCapacityRange().getRequiredBytes();
        if (required > volume.capacityBytes()) {
            throw CsiStatus.failedPrecondition("volume " + volumeId + " has " + volume.capacityBytes()
                    + " bytes; ControllerExpandVolume has not expanded it to " + required + " bytes yet");
        }
        nodeSizes.save(nodeSizes.load().with(volumeId, volume.capacityBytes()));
        return NodeExpandVolumeResponse.newBuilder().setCapacityBytes(volume.capacityBytes()).build();
    }

    /** The size this node's "file system" of the volume has: the capacity, or the size before an expansion this node has not run NodeExpandVolume for. */
    long fileSystemBytes(VolumeRecord volume) {
        Long before = book.load().fileSystemBytes().get(volume.id());
        if (before == null) {
            return volume.capacityBytes();
        }
        long expandedHere = nodeSizes.load().sizes().getOrDefault(volume.id(), 0L);
        return Math.min(volume.capacityBytes(), Math.max(before, expandedHere));
    }

    /** The bytes the volume's directory holds (regular files, links not followed). */
    long usedBytes(String volumeId) {
        AtomicLong used = new AtomicLong();
        try {
            Files.walkFileTree(directories.of(volumeId), new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) {
                    if (attributes.isRegularFile()) {
                        used.addAndGet(attributes.size());
                    }
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) {
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw CsiStatus.internal("cannot measure volume " + volumeId + ": " + e.getMessage());
        }
        return used.get();
    }

    /** Abnormal when the directory holds more than the capacity (and the marker file, checked first, is absent). */
    static VolumeCondition condition(VolumeCondition marker, String volumeId, long used, long capacity) {
        if (marker.getAbnormal() || used <= capacity) {
            return marker;
        }
        return VolumeCondition.newBuilder().setAbnormal(true).setMessage("volume " + volumeId + " holds " + used
                + " bytes, more than its capacity of " + capacity + " bytes").build();
    }

    // ------------------------------------------------------------------ helpers

    static void requireStagedOrPublishedAt(PluginState current, String volumeId, String path) {
        Optional<Path> usable = RequestChecks.usablePath(path);
        usable.filter(p -> current.nodePublicationsOf(volumeId).stream()
                        .anyMatch(n -> n.targetPath().equals(p.toString()))
                        || Optional.ofNullable(current.stagings().get(volumeId))
                        .map(s -> s.stagingPath().equals(p.toString())).orElse(false))
                .orElseThrow(() -> CsiStatus.notFound("volume " + volumeId + " is not published or staged at "
                        + usable.map(Path::toString).orElse("that path (not an absolute path)")));
    }

    private static Snapshot toSnapshot(SnapshotRecord snapshot) {
        return Snapshot.newBuilder()
                .setSnapshotId(snapshot.id())
                .setSourceVolumeId(snapshot.sourceVolumeId())
                .setSizeBytes(snapshot.sizeBytes())
                .setCreationTime(Timestamp.newBuilder().setSeconds(snapshot.createdSeconds())
                        .setNanos(snapshot.createdNanos()))
                .setReadyToUse(true)
                .build();
    }

    /** Snapshot ids derive from names, so a CreateSnapshot retried after a crash finds its copy again. */
    static String snapshotIdOf(String name) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(("snapshot\0" + name).getBytes(StandardCharsets.UTF_8));
            return "hps-" + HexFormat.of().formatHex(digest, 0, 12);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 missing from the JDK", e);
        }
    }

    /**
     * Replaces {@code target} by a copy of {@code source}'s tree: files with their attributes, links
     * as links (never followed), so a link in a volume cannot pull outside content into the copy.
     * A leftover of a crashed copy is removed first.
     */
    static void copyFresh(Path source, Path target) throws IOException {
        VolumeDirectories.deleteTree(target);
        Files.createDirectories(target.getParent());
        Files.walkFileTree(source, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attributes) throws IOException {
                Files.copy(dir, target.resolve(source.relativize(dir).toString()), StandardCopyOption.COPY_ATTRIBUTES,
                        LinkOption.NOFOLLOW_LINKS);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) throws IOException {
                Files.copy(file, target.resolve(source.relativize(file).toString()), StandardCopyOption.COPY_ATTRIBUTES,
                        LinkOption.NOFOLLOW_LINKS);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
