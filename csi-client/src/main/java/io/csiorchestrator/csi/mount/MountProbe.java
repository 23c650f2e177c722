package io.csiorchestrator.csi.mount;

import java.nio.file.Path;
import java.util.Optional;
import jnr.constants.platform.Errno;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/**
 * Whether a path is a mount point, and the flags of the mount holding it, at the cost of a system call each: statx(2)'s
 * STATX_ATTR_MOUNT_ROOT and statvfs(3)'s f_flag (jnr-ffi). Reading /proc/self/mountinfo instead makes the kernel
 * write out every mount's line (about 0.8 ms of kernel time at 300 mounts, and it grows with every mount on the
 * machine). Linux only: {@link #system} is empty where the C library cannot be loaded, and each question answers
 * null or -1 where the kernel cannot tell (statx missing, a kernel before 5.8, an error such as ENOTCONN of a dead
 * FUSE mount); the caller then reads the mount table.
 */
public final class MountProbe {

    /** statvfs f_flag: the mount (or its file system) is read-only. */
    public static final long ST_RDONLY = 1;

    // <linux/stat.h>, <fcntl.h>
    private static final int AT_FDCWD = -100;
    private static final int STATX_INO = 0x100;
    private static final long STATX_ATTR_MOUNT_ROOT = 0x2000;
    // struct statx: stx_attributes at 8, stx_attributes_mask at 56; 256 bytes in all
    private static final int STATX_SIZE = 256;
    private static final int STX_ATTRIBUTES = 8;
    private static final int STX_ATTRIBUTES_MASK = 56;
    // glibc's struct statvfs on 64-bit Linux: f_flag is the tenth unsigned long; 112 bytes in all
    private static final int STATVFS_SIZE = 112;
    private static final int F_FLAG = 72;

    /** The two calls, as libc declares them. */
    public interface LibC {
        int statx(int dirfd, String path, int flags, int mask, Pointer buffer);

        int statvfs(String path, Pointer buffer);
    }

    private final LibC libc;
    private final Runtime runtime;
    /** False once statx turned out to be missing (glibc before 2.28) or not to report mount roots (Linux before 5.8). */
    private volatile boolean statxWorks = true;

    private MountProbe(LibC libc) {
        this.libc = libc;
        this.runtime = Runtime.getRuntime(libc);
    }

    private static volatile Optional<MountProbe> loaded;

    /** The probe of this process (the binding is generated once), or empty where it cannot be (not 64-bit Linux, no libc). */
    public static Optional<MountProbe> system() {
        Optional<MountProbe> once = loaded;
        if (once == null) {
            synchronized (MountProbe.class) {
                once = loaded;
                if (once == null) {
                    once = load();
                    loaded = once;
                }
            }
        }
        return once;
    }

    private static Optional<MountProbe> load() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")
                || !"64".equals(System.getProperty("sun.arch.data.model"))) {
            return Optional.empty();
        }
        try {
            return Optional.of(new MountProbe(LibraryLoader.create(LibC.class).load("c")));
        } catch (RuntimeException | LinkageError e) {
            return Optional.empty();
        }
    }

    /**
     * Whether {@code path} is the root of a mount (the top one there, as a path lookup finds it). False when the path
     * does not exist; null when statx cannot tell (then ask the mount table).
     */
    public Boolean isMountRoot(Path path) {
        if (!statxWorks) {
            return null;
        }
        Pointer buffer = jnr.ffi.Memory.allocateDirect(runtime, STATX_SIZE);
        int result;
        try {
            result = libc.statx(AT_FDCWD, path.toString(), 0, STATX_INO, buffer);
        } catch (LinkageError e) {
            statxWorks = false;
            return null;
        }
        if (result != 0) {
            int errno = runtime.getLastError();
            if (errno == Errno.ENOENT.intValue() || errno == Errno.ENOTDIR.intValue()) {
                return false;
            }
            if (errno == Errno.ENOSYS.intValue()) {
                statxWorks = false;
            }
            return null;
        }
        if ((buffer.getLong(STX_ATTRIBUTES_MASK) & STATX_ATTR_MOUNT_ROOT) == 0) {
            statxWorks = false;
            return null;
        }
        return (buffer.getLong(STX_ATTRIBUTES) & STATX_ATTR_MOUNT_ROOT) != 0;
    }

    /** statvfs(3)'s f_flag of the mount holding {@code path} (ST_RDONLY, ST_NOSUID, ...); -1 when it cannot tell. */
    public long mountFlags(Path path) {
        Pointer buffer = jnr.ffi.Memory.allocateDirect(runtime, STATVFS_SIZE);
        return libc.statvfs(path.toString(), buffer) == 0 ? buffer.getLong(F_FLAG) : -1;
    }
}
