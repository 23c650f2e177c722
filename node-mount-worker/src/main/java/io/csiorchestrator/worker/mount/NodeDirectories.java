package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.mount.MountView;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;
import java.util.logging.Logger;

/** Removes the directories a mount left once nothing is mounted on them and they are empty, under the worker's root only. */
final class NodeDirectories {

    private static final Logger LOG = Logger.getLogger(NodeDirectories.class.getName());

    private final WorkerPaths paths;
    private final Supplier<MountView> mounts;

    NodeDirectories(WorkerPaths paths, Supplier<MountView> mounts) {
        this.paths = paths;
        this.mounts = mounts;
    }

    /**
     * Removes the target directory (and the allocation's empty parents); never a mounted or non-empty one. A mount
     * made on one of them after it was checked makes its removal fail (rmdir of a mount point is EBUSY), which is
     * logged and kept, as a non-empty directory is.
     */
    void removeEmptyTarget(Path target, String alloc) throws IOException {
        MountView table = mounts.get();
        if (table.isMountPoint(target)) {
            return;
        }
        removeEmptyDirectory(target, table);
        removeEmptyDirectory(target.getParent(), table);
        removeEmptyDirectory(paths.allocationDir(alloc), table);
    }

    /** Removes {@code dir} when it is under the worker's root, not a mount point and empty. */
    void removeEmptyDirectory(Path dir) throws IOException {
        if (paths.isUnderRoot(dir)) {
            removeEmptyDirectory(dir, mounts.get());
        }
    }

    /** Removes a staging directory and then its parent, each when under the root, not a mount point and empty (one read of the table). */
    void removeEmptyStaging(Path staging) throws IOException {
        MountView table = mounts.get();
        removeEmptyDirectory(staging, table);
        removeEmptyDirectory(staging.getParent(), table);
    }

    private void removeEmptyDirectory(Path dir, MountView table) throws IOException {
        if (!paths.isUnderRoot(dir) || table.isMountPoint(dir)) {
            return;
        }
        try {
            Files.deleteIfExists(dir);
        } catch (DirectoryNotEmptyException e) {
            LOG.fine(() -> dir + " is not empty; kept");
        } catch (java.nio.file.FileSystemException e) {
            if (!mounts.get().isMountPoint(dir)) { // mounted since the table was read: EBUSY, kept
                throw e;
            }
            LOG.fine(() -> dir + " was mounted meanwhile; kept");
        }
    }
}
