package io.csiorchestrator.hostpath;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import jnr.ffi.LibraryLoader;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;
import jnr.ffi.Runtime;

/**
 * What statvfs(3) says of the file system holding a path: bytes (through the JDK's {@link FileStore}, which calls
 * statvfs on Linux) and inodes (statvfs through jnr-ffi; the JDK has no call for them). The inodes are absent where
 * the C library cannot be loaded or the platform is not 64-bit Linux (the {@code struct statvfs} layout read here).
 *
 * @param totalBytes     f_blocks * f_frsize
 * @param availableBytes f_bavail * f_frsize (what an unprivileged writer may still use)
 * @param inodes         f_files, f_ffree, f_favail; empty when unknown
 */
record FileSystemFigures(long totalBytes, long availableBytes, Optional<Inodes> inodes) {

    /** @param total f_files @param free f_ffree @param available f_favail */
    record Inodes(long total, long free, long available) {
        long used() {
            return Math.max(0, total - free);
        }
    }

    /** The figures of the file system holding {@code path}. */
    static FileSystemFigures of(Path path) throws IOException {
        FileStore store = Files.getFileStore(path);
        return new FileSystemFigures(store.getTotalSpace(), store.getUsableSpace(), inodesOf(path));
    }

    /** libc's statvfs, as glibc declares it. */
    public interface LibC {
        int statvfs(String path, Pointer buf);
    }

    // glibc's struct statvfs on 64-bit Linux: eleven unsigned longs, then int __f_spare[6] (112 bytes)
    private static final int STRUCT_SIZE = 112;
    private static final int F_FILES = 40;
    private static final int F_FFREE = 48;
    private static final int F_FAVAIL = 56;

    private static volatile Optional<LibC> libc;

    private static Optional<Inodes> inodesOf(Path path) {
        Optional<LibC> c = load();
        if (c.isEmpty()) {
            return Optional.empty();
        }
        Pointer buffer = Memory.allocateDirect(Runtime.getRuntime(c.get()), STRUCT_SIZE);
        if (c.get().statvfs(path.toString(), buffer) != 0) {
            return Optional.empty();
        }
        return Optional.of(new Inodes(buffer.getLong(F_FILES), buffer.getLong(F_FFREE), buffer.getLong(F_FAVAIL)));
    }

    private static Optional<LibC> load() {
        Optional<LibC> once = libc;
        if (once == null) {
            synchronized (FileSystemFigures.class) {
                once = libc;
                if (once == null) {
                    once = loadNow();
                    libc = once;
                }
            }
        }
        return once;
    }

    private static Optional<LibC> loadNow() {
        if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")
                || !"64".equals(System.getProperty("sun.arch.data.model"))) {
            return Optional.empty();
        }
        try {
            return Optional.of(LibraryLoader.create(LibC.class).load("c"));
        } catch (RuntimeException | LinkageError e) {
            return Optional.empty();
        }
    }
}
