package io.csiorchestrator.csi.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The probing mount view (statx and statvfs a question) against real bind mounts (the tests run as root): it answers
 * what /proc/self/mountinfo says at each step, a mount made and remounted read-only and unmounted, without reading
 * the table at all.
 */
class MountViewTest {

    @TempDir
    Path dir;
    private Path target;

    @Test
    void theProbeAnswersAsTheMountTableDoesWithoutReadingIt() throws Exception {
        assertTrue(MountProbe.system().isPresent(), "64-bit Linux with a C library: the probe loads");
        Path source = Files.createDirectories(dir.resolve("source"));
        target = Files.createDirectories(dir.resolve("target"));
        Path missing = dir.resolve("missing");
        AtomicInteger tableReads = new AtomicInteger();
        Supplier<MountTable> counted = () -> {
            tableReads.incrementAndGet();
            return MountTable.readSelf();
        };
        Supplier<MountView> views = MountView.probing(counted);

        assertSame(views, target, missing);
        assertFalse(views.get().isMountPoint(target));
        assertEquals(Optional.empty(), views.get().readOnlyAt(target));

        run("mount", "--bind", source.toString(), target.toString());
        assertSame(views, target, missing);
        assertTrue(views.get().isMountPoint(target));
        assertEquals(Optional.of(false), views.get().readOnlyAt(target));

        run("mount", "-o", "remount,bind,ro", target.toString());
        assertSame(views, target, missing);
        assertEquals(Optional.of(true), views.get().readOnlyAt(target));

        run("umount", target.toString());
        assertFalse(views.get().isMountPoint(target));
        assertEquals(0, tableReads.get(), "every question answered by the kernel, the table never read");
    }

    /** The view and a fresh read of the table agree about {@code paths}. */
    private static void assertSame(Supplier<MountView> views, Path... paths) {
        MountTable table = MountTable.readSelf();
        for (Path p : paths) {
            assertEquals(table.isMountPoint(p), views.get().isMountPoint(p), "mount point? " + p);
            assertEquals(table.readOnlyAt(p), views.get().readOnlyAt(p), "read-only? " + p);
        }
    }

    private static void run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(List.of(command)).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), String.join(" ", command) + ": " + out);
    }

    @AfterEach
    void unmountLeftovers() throws Exception {
        if (target != null) {
            for (int i = 0; i < 5 && MountTable.readSelf().isMountPoint(target); i++) {
                new ProcessBuilder("umount", target.toString()).start().waitFor();
            }
        }
    }
}
