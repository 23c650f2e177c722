package io.csiorchestrator.hostpath.mount;

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
 * the commands as before.
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

    /** The two calls, as libc declares them. */
    public interface LibC {
        int mount(String source, String target, String filesystemType, long flags, Pointer data);

        int umount2(String target, int flags);
    }

    private final LibC libc;
    private final Runtime runtime;

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
