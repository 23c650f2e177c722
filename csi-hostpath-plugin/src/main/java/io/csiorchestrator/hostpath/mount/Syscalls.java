package io.csiorchestrator.hostpath.mount;

import io.csiorchestrator.csi.mount.MountProbe;
import java.io.IOException;
import java.nio.file.Path;
import jnr.constants.platform.Errno;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/**
 * mount(2) and umount2(2) of the C library, called directly (jnr-ffi): a bind mount costs a system call, not a fork and
 * exec of util-linux's {@code mount} (about 10-20 ms of CPU and wall time each on a small machine, three of them per
 * claim). Linux only; {@link #load} is empty where the library or the calls are missing, and {@link Mounter} then runs
 * the commands as before. Also statx(2) and statvfs(3), which say whether a path is a mount point and with which
 * per-mount flags at the cost of a system call each, where reading /proc/self/mountinfo costs about 0.8 ms of kernel
 * time at 300 mounts (the kernel writes out every mount's line).
 */
final class Syscalls {

    // <sys/mount.h>
    static final long MS_RDONLY = 1;
    static final long MS_NOSUID = 2;
    static final long MS_NODEV = 4;
    static final long MS_NOEXEC = 8;
    static final long MS_REMOUNT = 32;
    static final long MS_NOATIME = 1024;
    static final long MS_NODIRATIME = 2048;
    static final long MS_BIND = 4096;
    static final long MS_RELATIME = 1L << 21;
    static final long MS_STRICTATIME = 1L << 24;

    // <sys/statvfs.h>: f_flag bits, the mount's flags (per mount, and the file system's read-only)
    static final long ST_RDONLY = 1;
    static final long ST_NOSUID = 2;
    static final long ST_NODEV = 4;
    static final long ST_NOEXEC = 8;
    static final long ST_NOATIME = 1024;
    static final long ST_NODIRATIME = 2048;
    static final long ST_RELATIME = 4096;

    /** The two calls, as libc declares them. */
    public interface LibC {
        int mount(String source, String target, String filesystemType, long flags, Pointer data);

        int umount2(String target, int flags);
    }

    private final LibC libc;
    private final Runtime runtime;
    /** statx and statvfs (shared with the worker), or null where they cannot be had. */
    private final MountProbe probe = MountProbe.system().orElse(null);

    private Syscalls(LibC libc) {
        this.libc = libc;
        this.runtime = Runtime.getRuntime(libc);
    }

    /** Loaded once per process: the binding is generated at the first load and shared by every {@link Mounter}. */
    private static volatile java.util.Optional<Syscalls> loaded;

    /** The C library's calls, or empty when they cannot be loaded (not Linux, no libc); loaded once per process. */
    static java.util.Optional<Syscalls> load() {
        java.util.Optional<Syscalls> once = loaded;
        if (once == null) {
            synchronized (Syscalls.class) {
                once = loaded;
                if (once == null) {
                    once = loadNow();
                    loaded = once;
                }
            }
        }
        return once;
    }

    private static java.util.Optional<Syscalls> loadNow() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return java.util.Optional.empty();
        }
        try {
            return java.util.Optional.of(new Syscalls(LibraryLoader.create(LibC.class).load("c")));
        } catch (RuntimeException | LinkageError e) {
            return java.util.Optional.empty();
        }
    }

    /** {@code mount --bind source target}. */
    void bind(Path source, Path target) throws IOException {
        check(libc.mount(source.toString(), target.toString(), null, MS_BIND, null),
                "mount(" + source + ", " + target + ", MS_BIND)");
    }

    /**
     * {@code mount -o remount,bind,ro target}: only this mount's flags change; {@code keep} are the per-mount flags it
     * has now (nosuid, nodev, noexec, the atime ones), given again as util-linux does, since a bind remount sets them all.
     */
    void remountBindReadOnly(Path target, long keep) throws IOException {
        check(libc.mount("none", target.toString(), null, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, null),
                "mount(" + target + ", MS_REMOUNT|MS_BIND|MS_RDONLY)");
    }

    /** {@code umount target}: the top mount at target. */
    void unmount(Path target) throws IOException {
        check(libc.umount2(target.toString(), 0), "umount2(" + target + ")");
    }

    /**
     * Whether {@code path} is the root of a mount (the top one there, as a path lookup finds it): statx(2)'s
     * STATX_ATTR_MOUNT_ROOT. False when the path does not exist; null when statx cannot tell (then ask the mount table).
     */
    Boolean isMountRoot(Path path) {
        return probe == null ? null : probe.isMountRoot(path);
    }

    /** statvfs(3)'s f_flag of the mount holding {@code path} (ST_RDONLY, ST_NOSUID, ...); -1 when it cannot tell. */
    long mountFlags(Path path) {
        return probe == null ? -1 : probe.mountFlags(path);
    }

    /** The per-mount flags to give again on a bind remount, from statvfs's f_flag (as {@link #perMountFlags}). */
    static long perMountFlags(long statvfsFlags) {
        long flags = 0;
        flags |= (statvfsFlags & ST_NOSUID) != 0 ? MS_NOSUID : 0;
        flags |= (statvfsFlags & ST_NODEV) != 0 ? MS_NODEV : 0;
        flags |= (statvfsFlags & ST_NOEXEC) != 0 ? MS_NOEXEC : 0;
        flags |= (statvfsFlags & ST_NOATIME) != 0 ? MS_NOATIME : 0;
        flags |= (statvfsFlags & ST_NODIRATIME) != 0 ? MS_NODIRATIME : 0;
        flags |= (statvfsFlags & ST_RELATIME) != 0 ? MS_RELATIME : 0;
        return flags;
    }

    private void check(int result, String call) throws IOException {
        if (result != 0) {
            int errno = runtime.getLastError();
            Errno known = Errno.valueOf(errno);
            throw new IOException(call + " failed: " + (known == null || known == Errno.__UNKNOWN_CONSTANT__
                    ? "errno " + errno : known.name() + " (" + known.description() + ")"));
        }
    }

    /** The per-mount flags named in a mountinfo options field ({@code rw,nosuid,nodev,relatime}) to keep on a remount. */
    static long perMountFlags(String mountOptions) {
        long flags = 0;
        for (String option : mountOptions.split(",")) {
            switch (option) {
                case "nosuid" -> flags |= MS_NOSUID;
                case "nodev" -> flags |= MS_NODEV;
                case "noexec" -> flags |= MS_NOEXEC;
                case "noatime" -> flags |= MS_NOATIME;
                case "nodiratime" -> flags |= MS_NODIRATIME;
                case "relatime" -> flags |= MS_RELATIME;
                case "strictatime" -> flags |= MS_STRICTATIME;
                default -> {
                }
            }
        }
        return flags;
    }
}
