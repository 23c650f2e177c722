package io.csiorchestrator.localinfra;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A dynamic class-data-sharing archive (JDK 13+, JEP 350) for a JVM we start on the JDK we run on: the classes of a
 * whole start (the JDK's and the application's, parsed and verified) written once at a start's exit and mapped by
 * every later start of the same class path. A start costs about a quarter less CPU with it (claim-service 8.9 ->
 * 6.4 s on C1, Kafka 8.5 -> 6.3, a hostpath plugin 1.2 -> 0.6; README "Tests"); writing one costs a few seconds of
 * CPU and of time at that one exit.
 *
 * <p>One archive per JDK and class path (its jars' paths, sizes and modification times, which the JVM checks too),
 * {@code <dir>/<name>-<hash>.jsa}. A start {@linkplain #plan plans} one of:
 * <ul>
 * <li>{@link Mode#USE}: the archive is there: {@code -XX:SharedArchiveFile}.</li>
 * <li>{@link Mode#WRITE}: none yet and nobody writing one: this start takes the writer's lock
 * ({@code <archive>.lock}, created atomically, naming a file of its own) and writes the archive to that file when it
 * exits normally ({@code -XX:ArchiveClassesAtExit}); a later start checks the file with the JVM itself
 * ({@code java -Xshare:on}: a file cut short by a kill during the write is refused) and renames it into place.</li>
 * <li>{@link Mode#NONE}: another start is writing (a live process's command line names the lock's file), or no
 * dynamic archive on this JDK: no option.</li>
 * </ul>
 * Several processes (the build's test modules run side by side) plan at once: only the lock's holder writes, and the
 * archive appears by an atomic rename, so nobody maps a half-written file. A writer killed before its exit leaves a
 * lock whose file no live process names: the next start removes both and writes anew.
 */
public final class SharedArchive {

    /** What a start does with the archive. */
    public enum Mode {
        /** {@code -XX:SharedArchiveFile}: the archive is there. */
        USE,
        /** {@code -XX:ArchiveClassesAtExit}: this start writes it at its exit. */
        WRITE,
        /** No option: another start writes it, or this JDK has no dynamic archive. */
        NONE
    }

    /**
     * One start's plan.
     *
     * @param mode    use, write or none
     * @param options the JVM options (before {@code -jar} or the main class)
     * @param archive the archive's path
     * @param reason  why, in a few words (for a log line)
     */
    public record Plan(Mode mode, List<String> options, Path archive, String reason) {
        public Plan {
            options = List.copyOf(options);
        }
    }

    /** How long a {@code java -Xshare:on} check of a written file may take. */
    private static final long CHECK_SECONDS = 30;

    private SharedArchive() {
    }

    /**
     * The plan for a start of {@code java} (this JDK's {@code bin/java}) with {@code classpath}, the archive kept in
     * {@code dir} under {@code name}; publishes a finished write first. Never fails the start: a file that cannot be
     * read or written gives {@link Mode#NONE}.
     */
    public static Plan plan(Path java, List<Path> classpath, Path dir, String name) {
        return plan(java, classpath, dir, name, List.of());
    }

    /**
     * As {@link #plan(Path, List, Path, String)} for a JVM started with {@code layoutFlags} too (e.g.
     * {@code -XX:+UseCompactObjectHeaders}: an archive is only mapped by a JVM with the object layout it was written
     * with), which the check of a written file passes as well; give such a JVM a {@code name} of its own.
     */
    public static Plan plan(Path java, List<Path> classpath, Path dir, String name, List<String> layoutFlags) {
        if (Runtime.version().feature() < 13) {
            return new Plan(Mode.NONE, List.of(), null, "JDK " + Runtime.version() + " has no dynamic archive (13+)");
        }
        Path archive;
        try {
            archive = dir.resolve(name + "-" + key(java, classpath) + ".jsa");
        } catch (IOException | UncheckedIOException e) {
            return new Plan(Mode.NONE, List.of(), null, "class path not readable: " + e.getMessage());
        }
        try {
            Files.createDirectories(dir);
            if (Files.isRegularFile(archive)) {
                return use(archive, "made earlier");
            }
            Path lock = lockOf(archive);
            if (Files.exists(lock)) {
                Path written = dir.resolve(Files.readString(lock, StandardCharsets.UTF_8).strip());
                if (writerAlive(written)) {
                    return new Plan(Mode.NONE, List.of(), archive, "another start writes it");
                }
                if (Files.isRegularFile(written) && accepted(java, classpath, written, layoutFlags)) {
                    publish(written, archive);
                    Files.deleteIfExists(lock);
                    return use(archive, "written by an earlier start");
                }
                // the writer died before or while writing: start over
                Files.deleteIfExists(written);
                Files.deleteIfExists(lock);
            }
            Path written = dir.resolve(archive.getFileName() + "." + UUID.randomUUID() + ".part");
            try {
                Files.writeString(lock, written.getFileName().toString(), StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            } catch (FileAlreadyExistsException e) {
                return new Plan(Mode.NONE, List.of(), archive, "another start writes it");
            }
            // -Xlog:cds=off: the write warns once per class it cannot keep (hundreds of "Skipping" lines)
            return new Plan(Mode.WRITE, List.of("-XX:ArchiveClassesAtExit=" + written, "-Xlog:cds=off"), archive,
                    "written at this start's exit");
        } catch (IOException | UncheckedIOException e) {
            return new Plan(Mode.NONE, List.of(), archive, "cannot keep it in " + dir + ": " + e.getMessage());
        }
    }

    private static Plan use(Path archive, String reason) {
        return new Plan(Mode.USE, List.of("-XX:SharedArchiveFile=" + archive), archive, reason);
    }

    /** The writer's lock beside the archive: it holds the name of the file the writer writes. */
    static Path lockOf(Path archive) {
        return archive.resolveSibling(archive.getFileName() + ".lock");
    }

    /** A live process was started to write {@code written} (its command line names it). */
    static boolean writerAlive(Path written) {
        String needle = "-XX:ArchiveClassesAtExit=" + written;
        try (Stream<ProcessHandle> all = ProcessHandle.allProcesses()) {
            return all.anyMatch(p -> p.isAlive() && p.info().commandLine().map(c -> c.contains(needle)).orElse(false));
        }
    }

    /**
     * The JVM (with {@code layoutFlags}) maps {@code written} for {@code classpath} ({@code -Xshare:on} refuses a cut or
     * foreign file).
     */
    static boolean accepted(Path java, List<Path> classpath, Path written, List<String> layoutFlags) {
        try {
            List<String> cmd = new java.util.ArrayList<>(List.of(java.toString(), "-Xshare:on"));
            cmd.addAll(layoutFlags);
            cmd.addAll(List.of("-XX:SharedArchiveFile=" + written, "-cp", classpathString(classpath), "-version"));
            Process check = new ProcessBuilder(cmd)
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!check.waitFor(CHECK_SECONDS, TimeUnit.SECONDS)) {
                check.destroyForcibly();
                return false;
            }
            return check.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static void publish(Path written, Path archive) throws IOException {
        try {
            Files.move(written, archive, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(written, archive);
        }
    }

    static String classpathString(List<Path> classpath) {
        return String.join(":", classpath.stream().map(p -> p.toAbsolutePath().normalize().toString()).toList());
    }

    /** 16 hex digits of SHA-256 over the JDK's path and version and each class path entry's path, size and mtime. */
    static String key(Path java, List<Path> classpath) throws IOException {
        StringBuilder what = new StringBuilder(java.toAbsolutePath().normalize() + "\n" + Runtime.version() + "\n");
        for (Path entry : classpath) {
            Path real = entry.toAbsolutePath().normalize();
            what.append(real).append(' ').append(Files.size(real)).append(' ')
                    .append(Files.getLastModifiedTime(real).toMillis()).append('\n');
        }
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(what.toString().getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
