package io.csiorchestrator.cli;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What the CLI asks of this process' mount table ({@code /proc/self/mountinfo}), read through
 * csi-client's {@link MountTable}, the reader the plugin and the worker use too.
 */
public final class Mounts {

    private Mounts() {
    }

    /** A fresh snapshot of the mount table. */
    public static MountTable table() {
        return MountTable.readSelf();
    }

    /** Mount points at or below {@code dir}, deepest first, each once. */
    public static List<String> under(Path dir) {
        return under(table(), dir);
    }

    static List<String> under(MountTable table, Path dir) {
        return table.mountsUnder(dir).stream().map(MountInfo::mountPoint).distinct().toList();
    }

    public static boolean isMountPoint(String path) {
        return table().isMountPoint(Path.of(path));
    }

    /** Whether the topmost mount at {@code path} is read-only (false when nothing is mounted there). */
    static boolean readOnly(MountTable table, String path) {
        return table.mountAt(Path.of(path)).map(MountInfo::readOnly).orElse(false);
    }

    /** Unmounts everything at or below {@code dir} (lazily if busy); returns what was mounted. */
    public static List<String> unmountAllUnder(Path dir) {
        List<String> mounted = under(dir);
        for (String point : mounted) {
            while (isMountPoint(point)) {
                if (!run("umount", point) && !run("umount", "-l", point)) {
                    break;
                }
            }
        }
        return mounted;
    }

    private static boolean run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
