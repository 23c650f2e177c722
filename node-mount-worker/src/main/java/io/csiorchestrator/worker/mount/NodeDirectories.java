package io.csiorchestrator.worker.mount;

import io.csiorchestrator.csi.mount.MountTable;
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
    private final Supplier<MountTable> mountTable;

    NodeDirectories(WorkerPaths paths, Supplier<MountTable> mountTable) {
        this.paths = paths;
        this.mountTable = mountTable;
    }

    /** Removes the target directory (and the allocation's empty parents); never a mounted or non-empty one. */
    void removeEmptyTarget(Path target, String alloc) throws IOException {
        if (mountTable.get().isMountPoint(target)) {
            return;
        }
        removeEmptyDirectory(target);
        removeEmptyDirectory(target.getParent());
        removeEmptyDirectory(paths.allocationDir(alloc));
    }

    /** Removes {@code dir} when it is under the worker's root, not a mount point and empty. */
    void removeEmptyDirectory(Path dir) throws IOException {
        if (!paths.isUnderRoot(dir) || mountTable.get().isMountPoint(dir)) {
            return;
        }
        try {
            Files.deleteIfExists(dir);
        } catch (DirectoryNotEmptyException e) {
            LOG.fine(() -> dir + " is not empty; kept");
        }
    }
}
