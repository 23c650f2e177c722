package io.csiorchestrator.worker.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class MountInfoTest {

    private static final String TABLE = """
            22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            36 22 8:1 /srv/vols/v1 /var/lib/worker/staging/ns/v1 rw,relatime shared:1 - ext4 /dev/sda1 rw
            37 22 8:1 /srv/vols/v1 /var/lib/worker/per-alloc/a1/ns/v1 ro,relatime shared:1 master:2 - ext4 /dev/sda1 rw
            38 22 0:45 / /mnt/with\\040space rw - tmpfs tmp\\011fs rw,size=10k
            """;

    @Test
    void detectsBindMountsOfTheSameFileSystemExactly() {
        MountInfo info = MountInfo.parse(TABLE);
        assertEquals(4, info.entries().size());
        assertTrue(info.isMountPoint(Path.of("/var/lib/worker/staging/ns/v1")));
        assertTrue(info.isMountPoint(Path.of("/var/lib/worker/per-alloc/a1/ns/v1/")));
        assertFalse(info.isMountPoint(Path.of("/var/lib/worker/staging/ns")));
        assertFalse(info.isMountPoint(Path.of("/var/lib/worker/staging/ns/v")));
        assertTrue(info.topmost(Path.of("/var/lib/worker/per-alloc/a1/ns/v1")).orElseThrow().readOnly());
        assertFalse(info.topmost(Path.of("/var/lib/worker/staging/ns/v1")).orElseThrow().readOnly());
        assertEquals("/srv/vols/v1", info.topmost(Path.of("/var/lib/worker/staging/ns/v1")).orElseThrow().root());
    }

    @Test
    void decodesOctalEscapes() {
        MountInfo info = MountInfo.parse(TABLE);
        assertTrue(info.isMountPoint(Path.of("/mnt/with space")));
        MountInfo.Entry e = info.topmost(Path.of("/mnt/with space")).orElseThrow();
        assertEquals("tmpfs", e.fsType());
        assertEquals("tmp\tfs", e.source());
        assertEquals("a\\b", MountInfo.unescape("a\\134b"));
        assertEquals("a\nb", MountInfo.unescape("a\\012b"));
        assertEquals("trailing\\", MountInfo.unescape("trailing\\"));
    }

    @Test
    void listsMountsUnderADirectoryDeepestFirst() {
        List<String> under = MountInfo.parse(TABLE).mountPointsUnder(Path.of("/var/lib/worker"));
        assertEquals(2, under.size());
        assertEquals("/var/lib/worker/per-alloc/a1/ns/v1", under.get(0));
    }

    @Test
    void readsTheRealTable() {
        assertTrue(MountInfo.readSelf().isMountPoint(Path.of("/")));
    }

    @Test
    void rejectsAMalformedLine() {
        assertThrows(IllegalArgumentException.class, () -> MountInfo.parse("1 2 3"));
    }
}
