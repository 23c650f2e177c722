package io.csiorchestrator.worker.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WorkerPathsTest {

    @TempDir
    Path temp;

    private WorkerPaths paths() {
        return new WorkerPaths(temp.resolve("root"), new PosixDirs());
    }

    @Test
    void layoutHasOneStagingPathPerVolumeAndATargetPerAllocation() {
        WorkerPaths p = paths();
        Path root = temp.resolve("root");
        assertEquals(root.resolve("staging/ns1/vol1"), p.stagingPath("ns1", "vol1"));
        assertEquals(root.resolve("per-alloc/a1/ns1/vol1"), p.targetPath("a1", "ns1", "vol1"));
        assertEquals(root.resolve("records/ns1/vol1.json"), p.recordFile("ns1", "vol1"));
        // two namespaces with the same volume id never share a path
        assertFalse(p.stagingPath("ns1", "v").equals(p.stagingPath("ns2", "v")));
    }

    @Test
    void hostileIdsAreRejectedWithAClearMessage() {
        WorkerPaths p = paths();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> p.stagingPath("ns", "../x"));
        assertTrue(e.getMessage().contains("volume id"), e.getMessage());
        assertTrue(e.getMessage().contains("'..'") || e.getMessage().contains("separator"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> p.targetPath("..", "ns", "v"));
        assertThrows(IllegalArgumentException.class, () -> p.targetPath("a", "/etc", "v"));
        assertThrows(IllegalArgumentException.class, () -> p.stagingPath("ns", ".hidden"));
        assertThrows(IllegalArgumentException.class, () -> p.requireUnderRoot(temp.resolve("root/../outside")));
        assertThrows(IllegalArgumentException.class, () -> p.requireUnderRoot(temp.resolve("root")));
        assertFalse(Files.exists(temp.resolve("x")));
    }

    @Test
    void directoriesAreCreatedOwnerOnly() throws Exception {
        WorkerPaths p = paths();
        PosixDirs dirs = new PosixDirs();
        Path target = p.targetPath("a1", "ns", "v");
        p.ensureTargetParent(target);
        assertTrue(Files.isDirectory(target.getParent()));
        assertFalse(Files.exists(target), "the plugin creates the target itself");
        assertEquals(0700, dirs.mode(target.getParent()));
        assertEquals(0700, dirs.mode(p.allocationDir("a1")));
        assertEquals(0700, dirs.mode(p.root().resolve("per-alloc")));

        Path staging = p.stagingPath("ns", "v");
        Files.createDirectories(staging.getParent());
        Files.createDirectory(staging);
        dirs.chmod(staging, 0755);
        p.ensureDirectory(staging);
        assertEquals(0700, dirs.mode(staging), "an existing directory is tightened to 0700");
    }

    @Test
    void aSymlinkInPlaceOfADirectoryIsRefused() throws Exception {
        WorkerPaths p = paths();
        Files.createDirectories(p.root().resolve("staging"));
        Path outside = Files.createDirectory(temp.resolve("outside"));
        Files.createSymbolicLink(p.root().resolve("staging/ns"), outside);
        assertThrows(java.io.IOException.class, () -> p.ensureDirectory(p.stagingPath("ns", "v")));
        assertFalse(Files.exists(outside.resolve("v")));
    }

    /**
     * {@link WorkerPaths#requireNoLinks}: a link as the last component or as a directory on the way is refused
     * with {@link UnsafePathException} naming the asked path and the link; a regular file on the way is refused;
     * a path whose tail does not exist yet and an existing real directory pass.
     */
    @Test
    void requireNoLinksRefusesALinkAnywhereBelowTheRootAndAcceptsAMissingTail() throws Exception {
        WorkerPaths p = paths();
        Path outside = Files.createDirectory(temp.resolve("outside"));
        Path target = p.targetPath("a1", "ns", "v");
        Files.createDirectories(target.getParent());
        assertEquals(target, p.requireNoLinks(target), "a missing last component is fine");
        Files.createDirectory(target);
        assertEquals(target, p.requireNoLinks(target), "a real directory is fine");
        Files.delete(target);

        Files.createSymbolicLink(target, outside);
        UnsafePathException last = assertThrows(UnsafePathException.class, () -> p.requireNoLinks(target));
        assertTrue(last.getMessage().contains(target + " is a symbolic link (to " + outside + ")"), last.getMessage());
        assertEquals(target, last.path());

        Path other = p.targetPath("a2", "ns", "v");
        Files.createDirectories(p.root().resolve("per-alloc"));
        Files.createSymbolicLink(p.allocationDir("a2"), outside);
        UnsafePathException middle = assertThrows(UnsafePathException.class, () -> p.requireNoLinks(other));
        assertTrue(middle.getMessage().startsWith("refusing path " + other + ": " + p.allocationDir("a2")
                + " is a symbolic link"), middle.getMessage());

        Path third = p.targetPath("a3", "ns", "v");
        Files.writeString(p.allocationDir("a3"), "a file where a directory belongs");
        UnsafePathException file = assertThrows(UnsafePathException.class, () -> p.requireNoLinks(third));
        assertTrue(file.getMessage().contains(p.allocationDir("a3") + " is not a directory"), file.getMessage());
        assertFalse(Files.exists(outside.resolve("ns")), "nothing was created through a link");
    }
}
