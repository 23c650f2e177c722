package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.mount.MountTable;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class MountsTest {

    static final MountTable TABLE = MountTable.parse(String.join("\n",
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
            "100 22 8:1 /w/shared/v1 /w/demo/node-1/root/staging/v1 rw,relatime shared:1 - ext4 /dev/sda1 rw",
            "101 22 8:1 /w/shared/v1 /w/demo/node-1/root/per-alloc/a1/v1 rw,relatime shared:1 - ext4 /dev/sda1 rw",
            "102 101 8:1 /w/shared/v1 /w/demo/node-1/root/per-alloc/a1/v1 ro,relatime shared:1 - ext4 /dev/sda1 rw",
            "103 22 8:1 /x /w/demo-other/with\\040space rw - ext4 /dev/sda1 rw") + "\n");

    @Test
    void underListsOnlyTheDirectoryAndBelowDeepestFirstEachOnce() {
        assertEquals(List.of("/w/demo/node-1/root/per-alloc/a1/v1", "/w/demo/node-1/root/staging/v1"),
                Mounts.under(TABLE, Path.of("/w/demo")));
        assertEquals(List.of(), Mounts.under(TABLE, Path.of("/w/dem")));
        assertEquals(List.of("/w/demo-other/with space"), Mounts.under(TABLE, Path.of("/w/demo-other")));
    }

    @Test
    void theTopmostMountDecidesReadOnly() {
        assertTrue(Mounts.readOnly(TABLE, "/w/demo/node-1/root/per-alloc/a1/v1"));
        assertFalse(Mounts.readOnly(TABLE, "/w/demo/node-1/root/staging/v1"));
        assertFalse(Mounts.readOnly(TABLE, "/not/mounted"));
    }
}
