package io.csiorchestrator.hostpath.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.mount.MountTable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Mounter#unmountAll} against a mount that another process removes between the plugin's look at the mount table
 * and its {@code umount} (seen in the fencing chaos run: the worker's fence guard's {@code umount -l} landed there, the
 * plugin answered NodeUnpublish INTERNAL "not mounted", kept the publication, and every NodeUnstage of the volume was
 * refused from then on). The real {@code umount} runs on a directory that is not mounted, as it finds it in the race.
 * These run util-linux's commands and the mount table the test gives (the way without the system calls, where the
 * table is the only witness); {@code MounterSyscallTest} has the same race with umount2(2) and statx(2).
 */
class MounterTest {

    private static MountTable mountedAt(Path target) {
        return MountTable.parse("36 35 98:0 /src " + target + " rw,relatime shared:1 - ext4 /dev/root rw\n");
    }

    /** Mounted at the first look, gone by the time umount runs: the target is unmounted, which is all that was asked. */
    @Test
    void aMountRemovedByAnotherProcessDuringTheUnmountIsDone(@TempDir Path dir) throws IOException {
        AtomicInteger looks = new AtomicInteger();
        Mounter mounter = new Mounter(() -> looks.getAndIncrement() == 0 ? mountedAt(dir) : MountTable.parse(""), false);
        mounter.unmountAll(dir);
        assertTrue(looks.get() >= 2, "the mount table was read again after the failed umount");
    }

    /** A umount that fails while the target stays mounted is still an error naming the target and umount's word. */
    @Test
    void aFailedUnmountOfAMountThatStaysIsAnError(@TempDir Path dir) {
        Mounter mounter = new Mounter(() -> mountedAt(dir), false);
        IOException e = assertThrows(IOException.class, () -> mounter.unmountAll(dir));
        assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("umount"), e.getMessage());
        assertEquals(IOException.class, e.getClass());
    }
}
