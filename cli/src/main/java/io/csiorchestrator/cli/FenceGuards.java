package io.csiorchestrator.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The workers' fence guards (issue 19) of a local system. A guard outlives its worker on purpose (a worker that dies
 * with fenced mounts must still be fenced when its lease runs out), so stopping the whole system stops them too, right
 * after the workers: {@code ./csi down} unmounts everything itself, and a guard left starving would fence the next
 * {@code up}'s lease epoch for nothing.
 */
final class FenceGuards {

    static final String PID_FILE = "fence-guard.pid";
    static final String SCRIPT = "csi-fence-guard";

    private FenceGuards() {
    }

    /** Stops (SIGTERM, then SIGKILL after 10 s) every live guard whose state dir is below {@code workDir}. */
    static List<Long> stopUnder(Path workDir) {
        List<Long> stopped = new ArrayList<>();
        if (workDir == null || !Files.isDirectory(workDir)) {
            return stopped;
        }
        List<Path> pidFiles;
        try (Stream<Path> found = Files.find(workDir, 4, (p, a) -> a.isRegularFile()
                && p.getFileName().toString().equals(PID_FILE))) {
            pidFiles = found.toList();
        } catch (IOException e) {
            return stopped;
        }
        for (Path pidFile : pidFiles) {
            live(pidFile).ifPresent(guard -> {
                guard.destroy();
                try {
                    guard.onExit().get(10, TimeUnit.SECONDS);
                } catch (Exception e) {
                    guard.destroyForcibly();
                }
                stopped.add(guard.pid());
            });
        }
        return stopped;
    }

    /** The guard a pid file names, if it runs and its command line is the guard script on that pid file's dir. */
    static Optional<ProcessHandle> live(Path pidFile) {
        try {
            long pid = Long.parseLong(Files.readString(pidFile).trim());
            byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
            List<String> args = List.of(new String(raw, StandardCharsets.UTF_8).split("\0"));
            Path stateDir = pidFile.getParent();
            if (args.contains(stateDir.resolve(SCRIPT).toString()) && args.contains(stateDir.toString())) {
                return ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
            }
        } catch (IOException | NumberFormatException e) {
            // no such process, or not a guard's pid file
        }
        return Optional.empty();
    }
}
