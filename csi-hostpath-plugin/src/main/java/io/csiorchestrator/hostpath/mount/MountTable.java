package io.csiorchestrator.hostpath.mount;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The mounts this process sees, read from {@code /proc/self/mountinfo} on every question, so the
 * answer is exact (a path is a mount point when a mount's mount point is that path), not guessed
 * from device numbers.
 */
public final class MountTable {

    private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

    private final Path mountinfo;

    public MountTable() {
        this(MOUNTINFO);
    }

    public MountTable(Path mountinfo) {
        this.mountinfo = mountinfo;
    }

    public List<MountInfo> mounts() {
        try {
            return MountInfo.parse(Files.readString(mountinfo));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + mountinfo, e);
        }
    }

    /** The topmost mount at exactly this path, if any. */
    public Optional<MountInfo> mountAt(Path path) {
        String wanted = canonical(path);
        List<MountInfo> mounts = mounts();
        MountInfo top = null;
        for (MountInfo mount : mounts) {
            if (mount.mountPoint().equals(wanted)) {
                top = mount; // later lines are mounted over earlier ones
            }
        }
        return Optional.ofNullable(top);
    }

    public boolean isMountPoint(Path path) {
        return mountAt(path).isPresent();
    }

    /** Mounts at or below a directory, deepest first (the order to unmount them in). */
    public List<MountInfo> mountsUnder(Path directory) {
        String prefix = canonical(directory);
        return mounts().stream()
                .filter(mount -> mount.mountPoint().equals(prefix) || mount.mountPoint().startsWith(prefix + "/"))
                .sorted((a, b) -> Integer.compare(b.mountPoint().length(), a.mountPoint().length()))
                .toList();
    }

    /** The absolute, normalized path with symbolic links resolved as far as the path exists. */
    static String canonical(Path path) {
        Path absolute = path.toAbsolutePath().normalize();
        try {
            return absolute.toRealPath().toString();
        } catch (IOException e) {
            return absolute.toString();
        }
    }
}
