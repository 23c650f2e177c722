package io.csiorchestrator.csi.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The mountinfo line parser (merged from the hostpath plugin's and the node-mount-worker's former parsers). */
class MountInfoTest {

    static final String SAMPLE = """
            22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
            95 22 8:1 /tmp/state/volumes/hp-1 /tmp/staging/hp\\0401 rw,relatime shared:1 - ext4 /dev/sda1 rw
            96 22 8:1 /tmp/state/volumes/hp-1 /tmp/target ro,relatime shared:1 master:2 - ext4 /dev/sda1 rw
            97 22 0:5 / /tmp/odd\\134name rw - tmpfs tmpfs rw

            98 22 0:45 / /mnt/with\\040space rw - tmpfs tmp\\011fs rw,size=10k
            """;

    @Test
    void parsesEveryField() {
        List<MountInfo> mounts = MountInfo.parse(SAMPLE);

        assertEquals(5, mounts.size(), "the blank line is skipped");
        MountInfo staging = mounts.get(1);
        assertEquals(95, staging.mountId());
        assertEquals(22, staging.parentId());
        assertEquals("8:1", staging.majorMinor());
        assertEquals("/tmp/state/volumes/hp-1", staging.root());
        assertEquals("/tmp/staging/hp 1", staging.mountPoint());
        assertEquals("rw,relatime", staging.mountOptions());
        assertEquals("ext4", staging.fsType());
        assertEquals("/dev/sda1", staging.source());
        assertEquals("rw", staging.superOptions());
        assertFalse(staging.readOnly());
    }

    @Test
    void skipsOptionalFields() {
        MountInfo target = MountInfo.parse(SAMPLE).get(2);
        assertEquals("/tmp/target", target.mountPoint());
        assertTrue(target.readOnly(), "optional fields before the separator are skipped");
        assertEquals("ext4", target.fsType());
        assertEquals("/dev/sda1", target.source());

        MountInfo none = MountInfo.parseLine("97 22 0:5 / /x rw - tmpfs tmpfs rw");
        assertEquals("tmpfs", none.fsType(), "no optional fields at all");
        MountInfo noSuperOptions = MountInfo.parseLine("97 22 0:5 / /x rw - tmpfs tmpfs");
        assertEquals("", noSuperOptions.superOptions());
    }

    @Test
    void readOnlyIsTheRoOptionOnly() {
        assertTrue(MountInfo.parseLine("1 1 0:5 / /x ro - tmpfs t rw").readOnly());
        assertFalse(MountInfo.parseLine("1 1 0:5 / /x rw,errors=ro - tmpfs t ro").readOnly(),
                "per-mount options only, and the whole option");
    }

    @Test
    void decodesOctalEscapes() {
        List<MountInfo> mounts = MountInfo.parse(SAMPLE);
        assertEquals("/tmp/odd\\name", mounts.get(3).mountPoint());
        assertEquals("/mnt/with space", mounts.get(4).mountPoint());
        assertEquals("tmp\tfs", mounts.get(4).source());
        assertEquals("a\\b", MountInfo.unescape("a\\134b"));
        assertEquals("a\nb", MountInfo.unescape("a\\012b"));
        assertEquals("a b", MountInfo.unescape("a\\040b"));
        assertEquals("trailing\\", MountInfo.unescape("trailing\\"));
        assertEquals("not\\08octal", MountInfo.unescape("not\\08octal"));
    }

    @Test
    void rejectsAMalformedLine() {
        assertThrows(IllegalArgumentException.class, () -> MountInfo.parse("1 2 3"));
        assertThrows(IllegalArgumentException.class, () -> MountInfo.parse("garbage line"));
        assertThrows(IllegalArgumentException.class,
                () -> MountInfo.parse("x 22 0:5 / /x rw - tmpfs tmpfs rw"), "a mount id that is not a number");
        assertThrows(IllegalArgumentException.class,
                () -> MountInfo.parse("22 1 8:1 / / rw,relatime shared:1 ext4 /dev/sda1 rw"), "no separator");
        assertThrows(IllegalArgumentException.class, () -> MountInfo.parse(SAMPLE + "garbage line\n"),
                "a table with a line it cannot read is not answered from");
    }
}
