package io.csiorchestrator.worker.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.csiorchestrator.csi.mount.MountTable;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import jnr.constants.platform.Errno;
import org.junit.jupiter.api.Test;

/**
 * The healer's classification of a path the record says is mounted, from sample inputs: the errno
 * of {@code stat} and a sample {@code /proc/self/mountinfo}.
 */
class MountCheckTest {

    /** A mountinfo with a bind mount at /w/target and a dead FUSE mount at /w/fuse (as the kernel lists them). */
    static final MountTable SAMPLE = MountTable.parse("""
            22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
            40 22 8:1 /var/lib/hp/volumes/v1 /w/target rw,relatime - ext4 /dev/sda1 rw
            42 22 0:39 / /w/fuse rw,relatime - fuse healtest rw,user_id=0,group_id=0
            """);

    /**
     * Each case: the errno stat answered (none = success), whether the path is in the mount table,
     * and the damage expected.
     */
    @Test
    void statErrnoAndMountTableClassifyTheDamage() {
        record Case(Optional<Errno> errno, boolean mounted, MountDamage expected) {
        }
        var cases = Map.of(
                "mounted and answering", new Case(Optional.empty(), true, MountDamage.NONE),
                "dead FUSE daemon", new Case(Optional.of(Errno.ENOTCONN), true, MountDamage.CORRUPTED),
                "NFS stale handle", new Case(Optional.of(Errno.ESTALE), true, MountDamage.CORRUPTED),
                "I/O error", new Case(Optional.of(Errno.EIO), true, MountDamage.CORRUPTED),
                "host down", new Case(Optional.of(Errno.EHOSTDOWN), true, MountDamage.CORRUPTED),
                "lazily unmounted, directory left", new Case(Optional.empty(), false, MountDamage.NOT_MOUNTED),
                "unmounted and directory removed", new Case(Optional.of(Errno.ENOENT), false, MountDamage.NOT_MOUNTED),
                "other errno on a mount point is not judged", new Case(Optional.of(Errno.EACCES), true, MountDamage.NONE));
        cases.forEach((name, c) -> assertEquals(c.expected(), MountCheck.classify(c.errno(), c.mounted()), name));
    }

    @Test
    void checkReadsTheMountTableForTheMountPointAndStatForTheErrno() {
        MountCheck check = new MountCheck(path -> path.endsWith("fuse") ? Optional.of(Errno.ENOTCONN) : Optional.empty());
        assertEquals(MountDamage.NONE, check.check(Path.of("/w/target"), SAMPLE).damage());
        assertEquals(MountDamage.CORRUPTED, check.check(Path.of("/w/fuse"), SAMPLE).damage());
        assertEquals("corrupted (ENOTCONN)", check.check(Path.of("/w/fuse"), SAMPLE).describe());
        assertEquals(MountDamage.NOT_MOUNTED, check.check(Path.of("/w/other"), SAMPLE).damage());
    }

    /** The real stat: a plain directory answers, a missing path answers ENOENT. */
    @Test
    void theSystemStatReportsTheKernelsErrno(@org.junit.jupiter.api.io.TempDir Path dir) {
        MountCheck check = MountCheck.system();
        MountTable none = MountTable.parse("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
        assertEquals(Optional.empty(), check.check(dir, none).errno());
        assertEquals(Optional.of(Errno.ENOENT), check.check(dir.resolve("missing"), none).errno());
        assertEquals(MountDamage.NOT_MOUNTED, check.check(dir, none).damage());
    }
}
