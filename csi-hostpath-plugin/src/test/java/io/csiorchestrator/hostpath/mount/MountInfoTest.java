package io.csiorchestrator.hostpath.mount;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MountInfoTest {

    private static final String SAMPLE = """
            22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            95 22 8:1 /tmp/state/volumes/hp-1 /tmp/staging/hp\\0401 rw,relatime shared:1 - ext4 /dev/sda1 rw
            96 22 8:1 /tmp/state/volumes/hp-1 /tmp/target ro,relatime shared:1 master:2 - ext4 /dev/sda1 rw
            97 22 0:5 / /tmp/odd\\134name rw - tmpfs tmpfs rw
            garbage line
            """;

    @Test
    void parsesFieldsAndUnescapesOctal() {
        List<MountInfo> mounts = MountInfo.parse(SAMPLE);

        assertEquals(4, mounts.size());
        MountInfo staging = mounts.get(1);
        assertEquals(95, staging.mountId());
        assertEquals(22, staging.parentId());
        assertEquals("/tmp/state/volumes/hp-1", staging.root());
        assertEquals("/tmp/staging/hp 1", staging.mountPoint());
        assertEquals("ext4", staging.fsType());
        assertEquals("/dev/sda1", staging.source());
        assertFalse(staging.readOnly());
        assertTrue(mounts.get(2).readOnly(), "optional fields before the separator are skipped");
        assertEquals("/tmp/odd\\name", mounts.get(3).mountPoint());
    }

    @Test
    void mountTableAnswersExactlyForAPath(@TempDir Path dir) throws Exception {
        Path mountinfo = Files.writeString(dir.resolve("mountinfo"), SAMPLE);
        MountTable table = new MountTable(mountinfo);

        assertTrue(table.isMountPoint(Path.of("/tmp/target")));
        assertTrue(table.isMountPoint(Path.of("/tmp/staging/hp 1")));
        assertFalse(table.isMountPoint(Path.of("/tmp/targe")));
        assertFalse(table.isMountPoint(Path.of("/tmp/target/sub")));
        assertEquals(List.of("/tmp/staging/hp 1"),
                table.mountsUnder(Path.of("/tmp/staging")).stream().map(MountInfo::mountPoint).toList());
        assertEquals(List.of("/tmp/staging/hp 1", "/tmp/odd\\name", "/tmp/target"),
                table.mountsUnder(Path.of("/tmp")).stream().map(MountInfo::mountPoint).toList(), "deepest first");
    }
}
