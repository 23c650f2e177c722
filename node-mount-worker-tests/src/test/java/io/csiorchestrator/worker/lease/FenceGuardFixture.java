package io.csiorchestrator.worker.lease;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The files of a fence guard test (FenceGuardDeltaTest, FenceGuardScriptTest): a temporary directory with the guard's
 * state dir and a source dir to bind-mount under it (as root), and what the guard leaves there (its marker, its log).
 * {@link #close()} unmounts everything under the directory and deletes it; the test stops its own processes first.
 */
final class FenceGuardFixture implements AutoCloseable {

    private final Path dir;
    private final Path state;
    private final Path source;

    private FenceGuardFixture(Path dir) {
        this.dir = dir;
        this.state = dir.resolve("state");
        this.source = dir.resolve("source");
    }

    /** A new temporary directory named from {@code prefix}, with {@code state/} and {@code source/data}. */
    static FenceGuardFixture create(String prefix) throws IOException {
        FenceGuardFixture fixture = new FenceGuardFixture(Files.createTempDirectory(prefix).toRealPath());
        Files.createDirectories(fixture.state);
        Files.createDirectories(fixture.source);
        Files.writeString(fixture.source.resolve("data"), "volume data");
        return fixture;
    }

    Path dir() {
        return dir;
    }

    /** The guard's state dir. */
    Path state() {
        return state;
    }

    /** Bind-mounts the source dir on {@code target} (made first) and checks that it is mounted. */
    Path bindMount(Path target) throws Exception {
        Files.createDirectories(target);
        Process p = new ProcessBuilder("mount", "--bind", source.toString(), target.toString())
                .redirectErrorStream(true).start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0,
                "mount --bind: " + new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        assertTrue(mounted(target));
        return target;
    }

    static boolean mounted(Path path) {
        return MountTable.readSelf().mounts().stream().anyMatch(m -> m.mountPoint().equals(path.toString()));
    }

    /** The guard's fence marker. */
    Path marker() {
        return state.resolve(FenceGuard.MARKER);
    }

    /**
     * The marker's lines but its last, {@code at <seconds since the epoch>} (the time of the guard's unmounts, checked
     * here to be there and numeric; FenceMarkerTest reads it).
     */
    List<String> markerLines() throws IOException {
        List<String> lines = Files.readAllLines(marker());
        String last = lines.isEmpty() ? "" : lines.get(lines.size() - 1);
        assertTrue(last.matches("at \\d+(\\.\\d+)?"), "the marker ends with the time of the fence: " + lines);
        return lines.subList(0, lines.size() - 1);
    }

    /** The guard's log so far; empty when it has none yet. */
    String log() throws IOException {
        Path log = state.resolve(FenceGuard.LOG_FILE);
        return Files.exists(log) ? Files.readString(log) : "";
    }

    /** Unmounts (lazily, a few rounds for mounts under mounts) everything under the directory, then deletes it. */
    @Override
    public void close() throws IOException, InterruptedException {
        for (int round = 0; round < 5; round++) {
            for (String m : MountTable.readSelf().mountsUnder(dir).stream().map(MountInfo::mountPoint).toList()) {
                new ProcessBuilder("umount", "-l", m).redirectErrorStream(true).start().waitFor(10, TimeUnit.SECONDS);
            }
        }
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
