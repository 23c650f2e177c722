package io.csiorchestrator.hostpath.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real bind mounts (the tests run as root) made with mount(2)/umount2(2) directly, checked in /proc/self/mountinfo and
 * by writing through them, and compared with what util-linux's commands make of the same request.
 */
class MounterSyscallTest {

    @TempDir
    Path dir;

    private final Mounter syscalls = new Mounter(MountTable::readSelf);
    private final Mounter commands = new Mounter(MountTable::readSelf, false);

    @AfterEach
    void unmountLeftovers() throws IOException {
        for (MountInfo m : MountTable.readSelf().mountsUnder(dir)) {
            commands.unmountAll(Path.of(m.mountPoint()));
        }
    }

    @Test
    void theSystemCallsAreUsedOnLinux() {
        assertTrue(syscalls.usesSyscalls(), "mount(2) through jnr-ffi on this Linux machine");
        assertFalse(commands.usesSyscalls());
    }

    /** A writable bind mount: the source's file is seen through it, writes land in the source; then it is gone. */
    @Test
    void bindMountsAndUnmounts() throws IOException {
        Path source = Files.createDirectories(dir.resolve("source"));
        Path target = Files.createDirectories(dir.resolve("target"));
        Files.writeString(source.resolve("a"), "from the source");
        syscalls.bind(source, target, false);
        MountInfo mount = MountTable.readSelf().mountAt(target).orElseThrow();
        assertFalse(mount.readOnly());
        assertEquals("from the source", Files.readString(target.resolve("a")));
        Files.writeString(target.resolve("b"), "through the mount");
        assertEquals("through the mount", Files.readString(source.resolve("b")));
        syscalls.unmountAll(target);
        assertFalse(MountTable.readSelf().isMountPoint(target));
        assertFalse(Files.exists(target.resolve("a")));
    }

    /**
     * Read-only: the mount is ro, a write through it is refused, the source stays writable, and the per-mount flags
     * are the ones util-linux's {@code mount --bind} + {@code mount -o remount,bind,ro} give.
     */
    @Test
    void readOnlyBindMountMatchesUtilLinux() throws IOException {
        Path source = Files.createDirectories(dir.resolve("source"));
        Path viaSyscalls = Files.createDirectories(dir.resolve("syscalls"));
        Path viaCommands = Files.createDirectories(dir.resolve("commands"));
        syscalls.bind(source, viaSyscalls, true);
        commands.bind(source, viaCommands, true);
        MountTable table = MountTable.readSelf();
        MountInfo ours = table.mountAt(viaSyscalls).orElseThrow();
        MountInfo theirs = table.mountAt(viaCommands).orElseThrow();
        assertTrue(ours.readOnly(), ours.mountOptions());
        assertEquals(options(theirs), options(ours));
        FileSystemException refused = assertThrows(FileSystemException.class,
                () -> Files.writeString(viaSyscalls.resolve("c"), "x"));
        assertTrue(refused.getMessage().contains("Read-only file system"), refused.toString());
        Files.writeString(source.resolve("c"), "the source stays writable");
        assertEquals("the source stays writable", Files.readString(viaSyscalls.resolve("c")));
    }

    /** A bind mount that carries nosuid and nodev keeps them when made read-only (a bind remount sets every flag). */
    @Test
    void readOnlyRemountKeepsThePerMountFlags() throws IOException {
        Path source = Files.createDirectories(dir.resolve("source"));
        Path target = Files.createDirectories(dir.resolve("target"));
        Syscalls calls = Syscalls.load().orElseThrow();
        calls.bind(source, target);
        calls.remountBindReadOnly(target, Syscalls.MS_NOSUID | Syscalls.MS_NODEV);
        syscalls.remountReadOnly(target);
        Set<String> options = options(MountTable.readSelf().mountAt(target).orElseThrow());
        assertTrue(options.containsAll(Set.of("ro", "nosuid", "nodev")), options.toString());
    }

    /**
     * What is mounted at a path, from statx(2) and statvfs(3), is what the mount table says: a read-write and a read-only
     * bind mount (also reached through a symbolic link), and nothing at a plain directory, inside a mount, or at a path
     * that does not exist.
     */
    @Test
    void mountAtAgreesWithTheMountTable() throws IOException {
        Path source = Files.createDirectories(dir.resolve("source"));
        Files.createDirectories(source.resolve("inside"));
        Path rw = Files.createDirectories(dir.resolve("rw"));
        Path ro = Files.createDirectories(dir.resolve("ro"));
        syscalls.bind(source, rw, false);
        syscalls.bind(source, ro, true);
        Path link = Files.createSymbolicLink(dir.resolve("link"), ro);
        Path plain = Files.createDirectories(dir.resolve("plain"));

        assertEquals(Optional.of(new Mounter.MountPoint(false)), syscalls.mountAt(rw));
        assertEquals(Optional.of(new Mounter.MountPoint(true)), syscalls.mountAt(ro));
        assertEquals(Optional.of(new Mounter.MountPoint(true)), syscalls.mountAt(link));
        for (Path notAMountPoint : List.of(plain, rw.resolve("inside"), dir.resolve("missing"), plain.resolve("x/y"))) {
            assertEquals(Optional.empty(), syscalls.mountAt(notAMountPoint), notAMountPoint.toString());
        }
        for (Path path : List.of(rw, ro, link, plain, rw.resolve("inside"), dir.resolve("missing"))) {
            assertEquals(commands.mountAt(path), syscalls.mountAt(path), "as the mount table says: " + path);
        }
    }

    /** Mounts stacked at one target are all unmounted. */
    @Test
    void stackedMountsAreAllUnmounted() throws IOException {
        Path source = Files.createDirectories(dir.resolve("source"));
        Path other = Files.createDirectories(dir.resolve("other"));
        Path target = Files.createDirectories(dir.resolve("target"));
        syscalls.bind(source, target, false);
        syscalls.bind(other, target, true);
        assertEquals(2, MountTable.readSelf().mounts().stream()
                .filter(m -> m.mountPoint().equals(target.toString())).count());
        syscalls.unmountAll(target);
        assertFalse(MountTable.readSelf().isMountPoint(target));
        syscalls.unmountAll(target); // nothing mounted: nothing to do
    }

    /** A mount kept busy by an open file stays mounted, and the error names the target and EBUSY. */
    @Test
    void aBusyMountStaysAndIsAnError() throws IOException {
        Path source = Files.createDirectories(dir.resolve("source"));
        Path target = Files.createDirectories(dir.resolve("target"));
        syscalls.bind(source, target, false);
        try (FileChannel open = FileChannel.open(target.resolve("f"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE)) {
            IOException e = assertThrows(IOException.class, () -> syscalls.unmountAll(target));
            assertTrue(e.getMessage().contains("umount2(" + target + ")") && e.getMessage().contains("EBUSY"),
                    e.getMessage());
            assertTrue(MountTable.readSelf().isMountPoint(target));
        }
        syscalls.unmountAll(target);
        assertFalse(MountTable.readSelf().isMountPoint(target));
    }

    /** A failed call names the call, the paths and the errno's name. */
    @Test
    void failuresNameTheCallAndTheErrno() {
        Path missing = dir.resolve("missing");
        Path target = dir.resolve("target-missing");
        IOException e = assertThrows(IOException.class, () -> syscalls.bind(missing, target, false));
        assertTrue(e.getMessage().contains("mount(" + missing + ", " + target + ", MS_BIND)"), e.getMessage());
        assertTrue(e.getMessage().contains("ENOENT"), e.getMessage());
    }

    private static Set<String> options(MountInfo mount) {
        return new TreeSet<>(Arrays.asList(mount.mountOptions().split(",")));
    }
}
