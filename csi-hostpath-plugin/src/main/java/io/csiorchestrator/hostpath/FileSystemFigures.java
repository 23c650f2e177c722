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
 * What statvfs(3) says of the file system holding a path: bytes and inodes, from one statvfs call through jnr-ffi
 * (the JDK has no call for inodes). Where the C library cannot be loaded or the platform is not 64-bit Linux (the
 * {@code struct statvfs} layout read here), the bytes come from the JDK's {@link FileStore} and the inodes are absent.
 * Not {@link Files#getFileStore} first: on Linux it reads and parses the whole mount table (/proc/mounts) on every
 * call to find the mount entry, a cost that grows with every published volume's bind mount (NodeGetVolumeStats polls
 * each published volume, so a poll grew with the square of them); statvfs alone costs the same at any mount count.
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
        Optional<FileSystemFigures> direct = statvfs(path);
        if (direct.isPresent()) {
            return direct.get();
        }
        FileStore store = Files.getFileStore(path);
        return new FileSystemFigures(store.getTotalSpace(), store.getUsableSpace(), Optional.empty());
    }

    /** libc's statvfs, as glibc declares it. */
    public interface LibC {
        int statvfs(String path, Pointer buf);
    }

    // glibc's struct statvfs on 64-bit Linux: eleven unsigned longs, then int __f_spare[6] (112 bytes)
    private static final int STRUCT_SIZE = 112;
    private static final int F_FRSIZE = 8;
    private static final int F_BLOCKS = 16;
    private static final int F_BAVAIL = 32;
    private static final int F_FILES = 40;
    private static final int F_FFREE = 48;
    private static final int F_FAVAIL = 56;

    private static volatile Optional<LibC> libc;

    /** One statvfs call: bytes as the JDK's FileStore computes them, and inodes; empty where it cannot be made. */
    private static Optional<FileSystemFigures> statvfs(Path path) {
        Optional<LibC> c = load();
        if (c.isEmpty()) {
            return Optional.empty();
        }
        Pointer buffer = Memory.allocateDirect(Runtime.getRuntime(c.get()), STRUCT_SIZE);
        if (c.get().statvfs(path.toString(), buffer) != 0) {
            return Optional.empty();
        }
        long blockSize = buffer.getLong(F_FRSIZE);
        return Optional.of(new FileSystemFigures(buffer.getLong(F_BLOCKS) * blockSize, buffer.getLong(F_BAVAIL) * blockSize,
                Optional.of(new Inodes(buffer.getLong(F_FILES), buffer.getLong(F_FFREE), buffer.getLong(F_FAVAIL)))));
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
