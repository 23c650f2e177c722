package io.csiorchestrator.hostpath.mount;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import io.csiorchestrator.csi.mount.MountTable;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Makes and removes bind mounts: with mount(2) and umount2(2) called directly ({@link Syscalls}), or, where those
 * cannot be loaded, with util-linux's {@code mount} and {@code umount}. Mount flags from requests are never passed
 * on a command line. Whether a path is a mount point, and its flags, it asks statx(2) and statvfs(3) (a system call
 * each); the mount table (/proc/self/mountinfo, whose reading costs the kernel time for every mount on the machine)
 * only where those cannot tell.
 */
public final class Mounter {

    private static final long COMMAND_TIMEOUT_SECONDS = 30;
    private static final int MAX_STACKED_UNMOUNTS = 16;

    private final Supplier<MountTable> mountTable;
    private final Optional<Syscalls> syscalls;

    /** @param mountTable reads the mount table afresh (e.g. {@code MountTable::readSelf}), where statx cannot tell */
    public Mounter(Supplier<MountTable> mountTable) {
        this(mountTable, true);
    }

    /**
     * @param mountTable  reads the mount table afresh, where statx cannot tell (always without the system calls)
     * @param useSyscalls false: always util-linux's commands and the mount table (the tests compare both ways)
     */
    public Mounter(Supplier<MountTable> mountTable, boolean useSyscalls) {
        this.mountTable = mountTable;
        this.syscalls = useSyscalls ? Syscalls.load() : Optional.empty();
    }

    /** Whether mounts are made with system calls (else with util-linux's commands). */
    public boolean usesSyscalls() {
        return syscalls.isPresent();
    }

    /** The top mount at a path: what the plugin needs to know of it. */
    public record MountPoint(boolean readOnly) {
    }

    /**
     * The top mount at exactly {@code path} (made absolute, symbolic links followed), or empty when the path is not a
     * mount point or does not exist. Read-only is the mount's flag (statvfs's ST_RDONLY, which a read-only file system
     * sets too; the mount table's per-mount "ro").
     */
    public Optional<MountPoint> mountAt(Path path) {
        if (syscalls.isPresent()) {
            Boolean root = syscalls.get().isMountRoot(path);
            if (root != null && !root) {
                return Optional.empty();
            }
            long flags = root == null ? -1 : syscalls.get().mountFlags(path);
            if (flags >= 0) {
                return Optional.of(new MountPoint((flags & Syscalls.ST_RDONLY) != 0));
            }
        }
        return mountTable.get().mountAt(path).map(mount -> new MountPoint(mount.readOnly()));
    }

    /** Bind-mounts {@code source} at {@code target}, read-only when asked. */
    public void bind(Path source, Path target, boolean readOnly) throws IOException {
        if (syscalls.isPresent()) {
            syscalls.get().bind(source, target);
        } else {
            run("mount", "--bind", source.toString(), target.toString());
        }
        if (readOnly) {
            try {
                remountReadOnly(target);
            } catch (IOException e) {
                unmountAll(target);
                throw e;
            }
        }
    }

    /**
     * Makes the bind mount at {@code target} read-only ({@code mount -o remount,bind,ro}): only this mount's
     * flag changes, not the file system's nor other bind mounts of it. The kernel refuses (busy) while a file
     * is open for writing through this mount.
     */
    public void remountReadOnly(Path target) throws IOException {
        if (syscalls.isPresent()) {
            long flags = syscalls.get().mountFlags(target);
            long keep = flags >= 0 ? Syscalls.perMountFlags(flags)
                    : mountTable.get().mountAt(target).map(m -> Syscalls.perMountFlags(m.mountOptions())).orElse(0L);
            syscalls.get().remountBindReadOnly(target, keep);
        } else {
            run("mount", "-o", "remount,bind,ro", target.toString());
        }
    }

    /**
     * Unmounts everything mounted at {@code target}, including mounts stacked on each other. A umount that fails because
     * another process (e.g. the worker's fence guard) unmounted the target meanwhile is not an error: the target is not
     * mounted any more, which is what was asked (CSI: NodeUnpublish/NodeUnstage are idempotent).
     */
    public void unmountAll(Path target) throws IOException {
        for (int i = 0; i < MAX_STACKED_UNMOUNTS && mountAt(target).isPresent(); i++) {
            try {
                if (syscalls.isPresent()) {
                    syscalls.get().unmount(target);
                } else {
                    run("umount", target.toString());
                }
            } catch (IOException e) {
                if (mountAt(target).isPresent()) {
                    throw e;
                }
            }
        }
        if (mountAt(target).isPresent()) {
            throw new IOException("still mounted after " + MAX_STACKED_UNMOUNTS + " unmounts: " + target);
        }
    }

    private static void run(String... command) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output;
        try (InputStream in = process.getInputStream()) {
            output = new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
        }
        try {
            if (!process.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not finish in " + COMMAND_TIMEOUT_SECONDS + " s");
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + String.join(" ", command), e);
        }
        if (process.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed with exit code " + process.exitValue()
                    + (output.isEmpty() ? "" : ": " + output));
        }
    }
}
