package io.csiorchestrator.csi.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Exact mount point questions (merged from the hostpath plugin's and the node-mount-worker's former tests). */
class MountTableTest {

    private static final String TABLE = """
            22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            36 22 8:1 /srv/vols/v1 /var/lib/worker/staging/ns/v1 rw,relatime shared:1 - ext4 /dev/sda1 rw
            37 22 8:1 /srv/vols/v1 /var/lib/worker/per-alloc/a1/ns/v1 ro,relatime shared:1 master:2 - ext4 /dev/sda1 rw
            38 22 0:45 / /mnt/with\\040space rw - tmpfs tmp\\011fs rw,size=10k
            39 22 8:1 /srv/vols/v1 /var/lib/worker/per-alloc/a1/ns/v1 rw,relatime - ext4 /dev/sda1 rw
            """;

    @Test
    void detectsBindMountsOfTheSameFileSystemExactly() {
        MountTable table = MountTable.parse(TABLE);
        assertEquals(5, table.mounts().size());
        assertTrue(table.isMountPoint(Path.of("/var/lib/worker/staging/ns/v1")));
        assertTrue(table.isMountPoint(Path.of("/var/lib/worker/per-alloc/a1/ns/v1/")));
        assertTrue(table.isMountPoint(Path.of("/var/lib/worker/staging/ns/../ns/v1")), "normalized");
        assertFalse(table.isMountPoint(Path.of("/var/lib/worker/staging/ns")));
        assertFalse(table.isMountPoint(Path.of("/var/lib/worker/staging/ns/v")));
        assertFalse(table.isMountPoint(Path.of("/var/lib/worker/staging/ns/v1/sub")));
        assertFalse(table.mountAt(Path.of("/var/lib/worker/staging/ns/v1")).orElseThrow().readOnly());
        assertEquals("/srv/vols/v1", table.mountAt(Path.of("/var/lib/worker/staging/ns/v1")).orElseThrow().root());
    }

    @Test
    void theTopmostMountAnswers() {
        MountInfo top = MountTable.parse(TABLE).mountAt(Path.of("/var/lib/worker/per-alloc/a1/ns/v1")).orElseThrow();
        assertEquals(39, top.mountId(), "the later line is mounted over the earlier one");
        assertFalse(top.readOnly());
    }

    @Test
    void unescapedMountPointsMatch() {
        MountTable table = MountTable.parse(TABLE);
        MountInfo mount = table.mountAt(Path.of("/mnt/with space")).orElseThrow();
        assertEquals("tmpfs", mount.fsType());
        assertFalse(table.isMountPoint(Path.of("/mnt/with\\040space")));
    }

    @Test
    void listsMountsUnderADirectoryDeepestFirst() {
        MountTable table = MountTable.parse(TABLE);
        assertEquals(List.of("/var/lib/worker/per-alloc/a1/ns/v1", "/var/lib/worker/per-alloc/a1/ns/v1",
                        "/var/lib/worker/staging/ns/v1"),
                table.mountsUnder(Path.of("/var/lib/worker")).stream().map(MountInfo::mountPoint).toList());
        assertEquals(List.of("/var/lib/worker/staging/ns/v1"),
                table.mountsUnder(Path.of("/var/lib/worker/staging/ns/v1")).stream().map(MountInfo::mountPoint).toList(),
                "the directory itself counts");
        assertTrue(table.mountsUnder(Path.of("/var/lib/work")).isEmpty(), "a name prefix is not a directory");
        assertEquals(5, table.mountsUnder(Path.of("/")).size());
    }

    @Test
    void readsAFileAndResolvesSymbolicLinks(@TempDir Path dir) throws Exception {
        Path real = Files.createDirectories(dir.resolve("real/target")).toRealPath();
        Path link = Files.createSymbolicLink(dir.resolve("link"), real.getParent());
        Path mountinfo = Files.writeString(dir.resolve("mountinfo"),
                "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                        + "40 22 8:1 /srv " + real.toString().replace(" ", "\\040") + " ro - ext4 /dev/sda1 rw\n");

        MountTable table = MountTable.read(mountinfo);
        assertTrue(table.isMountPoint(real));
        assertTrue(table.isMountPoint(link.resolve("target")), "the kernel records the resolved path");
        assertFalse(table.isMountPoint(link.resolve("target/not-there")));
        assertEquals(List.of(real.toString()),
                table.mountsUnder(link).stream().map(MountInfo::mountPoint).toList());
    }

    @Test
    void readsTheRealTable() {
        assertTrue(MountTable.readSelf().isMountPoint(Path.of("/")));
    }
}
