package io.csiorchestrator.csi.mount;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A snapshot of a mount table ({@code /proc/self/mountinfo} by default): read it again to see later mounts.
 * A path is a mount point when a mount's mount point is exactly that path (compared after making it absolute,
 * normalized and, as far as it exists, free of symbolic links, as the kernel records it); comparing device
 * numbers of a directory and its parent would miss bind mounts of the same file system, which is what CSI
 * plugins usually make.
 */
public final class MountTable implements MountView {

    public static final Path SELF = Path.of("/proc/self/mountinfo");
    /**
     * This process's table, read anew at each call: the supplier a service gives its mount steps, which then ask the
     * kernel about each path instead ({@link MountView#probing}); a table a test gives them is used as it is.
     */
    public static final java.util.function.Supplier<MountTable> READ_SELF = MountTable::readSelf;

    private final List<MountInfo> mounts;

    private MountTable(List<MountInfo> mounts) {
        this.mounts = List.copyOf(mounts);
    }

    /** The current mount table of this process. */
    public static MountTable readSelf() {
        return read(SELF);
    }

    public static MountTable read(Path mountinfo) {
        try {
            return parse(Files.readString(mountinfo, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + mountinfo, e);
        }
    }

    /** @throws IllegalArgumentException for a malformed line (see {@link MountInfo#parse}) */
    public static MountTable parse(String mountinfo) {
        return new MountTable(MountInfo.parse(mountinfo));
    }

    /** Every mount, in the file's order (a later mount at the same point is mounted over an earlier one). */
    public List<MountInfo> mounts() {
        return mounts;
    }

    /** The topmost (last) mount at exactly this path, if any. */
    public Optional<MountInfo> mountAt(Path path) {
        String wanted = canonical(path);
        MountInfo top = null;
        for (MountInfo mount : mounts) {
            if (mount.mountPoint().equals(wanted)) {
                top = mount;
            }
        }
        return Optional.ofNullable(top);
    }

    @Override
    public Optional<Boolean> readOnlyAt(Path path) {
        return mountAt(path).map(MountInfo::readOnly);
    }

    /** Whether something is mounted exactly at this path. */
    @Override
    public boolean isMountPoint(Path path) {
        return mountAt(path).isPresent();
    }

    /** Mounts at or below a directory, deepest first (the order to unmount them in). */
    public List<MountInfo> mountsUnder(Path directory) {
        String base = canonical(directory);
        String below = base.endsWith("/") ? base : base + "/";
        return mounts.stream()
                .filter(mount -> mount.mountPoint().equals(base) || mount.mountPoint().startsWith(below))
                .sorted((a, b) -> Integer.compare(b.mountPoint().length(), a.mountPoint().length()))
                .toList();
    }

    /**
     * The absolute, normalized path with symbolic links resolved in its longest existing part (the rest, which
     * does not exist, is appended as it is).
     */
    static String canonical(Path path) {
        Path absolute = path.toAbsolutePath().normalize();
        for (Path existing = absolute; existing != null; existing = existing.getParent()) {
            try {
                return existing.toRealPath().resolve(existing.relativize(absolute)).normalize().toString();
            } catch (IOException | SecurityException e) {
                // does not exist (or cannot be resolved): try its parent
            }
        }
        return absolute.toString();
    }
}
