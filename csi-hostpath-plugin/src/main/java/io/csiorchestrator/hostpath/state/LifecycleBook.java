package io.csiorchestrator.hostpath.state;

import java.util.Collections;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The controller's lifecycle facts beside {@link PluginState} (kept apart so the volume records stay
 * as they are): snapshots by id, the content source each volume was created from, and, per expanded
 * volume, the size its "file system" had before a ControllerExpandVolume that still needs a
 * NodeExpandVolume on each node.
 *
 * @param snapshots       snapshots by id
 * @param volumeSources   volume id -> {@code snapshot:<id>} or {@code volume:<id>}; absent for an empty volume
 * @param fileSystemBytes volume id -> the size nodes see until they ran NodeExpandVolume
 */
public record LifecycleBook(SortedMap<String, SnapshotRecord> snapshots, SortedMap<String, String> volumeSources,
                            SortedMap<String, Long> fileSystemBytes) {

    public LifecycleBook {
        snapshots = Collections.unmodifiableSortedMap(new TreeMap<>(snapshots == null ? Map.of() : snapshots));
        volumeSources = Collections.unmodifiableSortedMap(new TreeMap<>(volumeSources == null ? Map.of() : volumeSources));
        fileSystemBytes = Collections.unmodifiableSortedMap(
                new TreeMap<>(fileSystemBytes == null ? Map.of() : fileSystemBytes));
    }

    public static LifecycleBook empty() {
        return new LifecycleBook(null, null, null);
    }

    public LifecycleBook withSnapshot(SnapshotRecord snapshot) {
        TreeMap<String, SnapshotRecord> next = new TreeMap<>(snapshots);
        next.put(snapshot.id(), snapshot);
        return new LifecycleBook(next, volumeSources, fileSystemBytes);
    }

    public LifecycleBook withoutSnapshot(String id) {
        TreeMap<String, SnapshotRecord> next = new TreeMap<>(snapshots);
        next.remove(id);
        return new LifecycleBook(next, volumeSources, fileSystemBytes);
    }

    /** A newly created volume: its source (null for none) and no pending node expansion. */
    public LifecycleBook withNewVolume(String volumeId, String source) {
        TreeMap<String, String> sources = new TreeMap<>(volumeSources);
        if (source == null) {
            sources.remove(volumeId);
        } else {
            sources.put(volumeId, source);
        }
        TreeMap<String, Long> sizes = new TreeMap<>(fileSystemBytes);
        sizes.remove(volumeId);
        return new LifecycleBook(snapshots, sources, sizes);
    }

    /** Remembers the size nodes see before an expansion, unless an earlier expansion remembered one. */
    public LifecycleBook withFileSystemBytesIfAbsent(String volumeId, long bytes) {
        TreeMap<String, Long> sizes = new TreeMap<>(fileSystemBytes);
        sizes.putIfAbsent(volumeId, bytes);
        return new LifecycleBook(snapshots, volumeSources, sizes);
    }
}
