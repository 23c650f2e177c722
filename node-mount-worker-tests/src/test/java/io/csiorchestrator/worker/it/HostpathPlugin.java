package io.csiorchestrator.worker.it;

import static org.awaitility.Awaitility.await;

import io.csiorchestrator.localinfra.SharedArchive;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * The reference hostpath plugin as a separate process ({@code java -jar csi-hostpath-plugin.jar}),
 * serving {@code <plugins-dir>/<id>/csi.sock}. The jar path comes from the system property
 * {@code csi.hostpath.plugin.jar} (set by surefire). Calls are counted from the plugin's
 * {@code calls.log} ("Method CODE" per answered or cancelled call) and {@code calls-started.log}
 * ("Method" per call received).
 */
final class HostpathPlugin {

    private static final List<Process> STARTED = new CopyOnWriteArrayList<>();

    final String id;
    final Path socket;
    final Path stateDir;
    final Path log;
    private final List<String> extraArgs;
    private Process process;

    HostpathPlugin(String id, Path pluginsDir, Path stateDir, String... extraArgs) {
        this.id = id;
        this.socket = pluginsDir.resolve(id).resolve("csi.sock");
        this.stateDir = stateDir;
        this.log = stateDir.resolveSibling(stateDir.getFileName() + ".log");
        this.extraArgs = List.of(extraArgs);
    }

    static Path jar() {
        String jar = System.getProperty("csi.hostpath.plugin.jar");
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException("the hostpath plugin jar was not found at '" + jar
                    + "' (system property csi.hostpath.plugin.jar; build csi-hostpath-plugin first)");
        }
        return Path.of(jar);
    }

    HostpathPlugin start() throws IOException {
        Files.createDirectories(socket.getParent());
        Files.createDirectories(stateDir);
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path jar = jar().toAbsolutePath().normalize();
        List<String> cmd = new ArrayList<>(List.of(java.toString(), "-Xmx128m", "-XX:TieredStopAtLevel=1"));
        // the class-data archive `up` and the system ITs use for this jar: a plugin start costs half the CPU
        cmd.addAll(SharedArchive.plan(java, List.of(jar), jar.getParent().resolve("cds"), "csi-hostpath-plugin").options());
        cmd.addAll(List.of("-jar", jar.toString(),
                "--endpoint", "unix://" + socket, "--node-id", "test-node", "--state-dir", stateDir.toString()));
        cmd.addAll(extraArgs);
        process = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        STARTED.add(process);
        await().atMost(Duration.ofSeconds(30)).until(() -> Files.exists(socket) || !process.isAlive());
        if (!process.isAlive()) {
            throw new IllegalStateException("the hostpath plugin exited: " + Files.readString(log));
        }
        return this;
    }

    /** SIGTERM: a graceful stop (with --unmount-staging-on-exit its stagings are unmounted). */
    void stop() throws InterruptedException {
        process.destroy();
        process.waitFor(20, TimeUnit.SECONDS);
    }

    /** SIGKILL. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(20, TimeUnit.SECONDS);
    }

    boolean alive() {
        return process != null && process.isAlive();
    }

    void faults(String rules) throws IOException {
        Files.writeString(stateDir.resolve("faults"), rules);
    }

    long calls(String method) {
        try {
            return Files.readAllLines(stateDir.resolve("calls.log"), StandardCharsets.UTF_8).stream()
                    .filter(line -> line.startsWith(method + " ")).count();
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Calls of {@code method} the plugin received, answered or not. */
    long startedCalls(String method) {
        try {
            return Files.readAllLines(stateDir.resolve("calls-started.log"), StandardCharsets.UTF_8).stream()
                    .filter(method::equals).count();
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    long successfulCalls(String method) {
        try {
            return Files.readAllLines(stateDir.resolve("calls.log"), StandardCharsets.UTF_8).stream()
                    .filter(line -> line.equals(method + " OK")).count();
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The answered calls of {@code methods} ("Method CODE", the call log's lines), in the order answered. */
    List<String> answered(String... methods) {
        List<String> wanted = List.of(methods);
        try {
            return Files.readAllLines(stateDir.resolve("calls.log"), StandardCharsets.UTF_8).stream()
                    .filter(line -> wanted.contains(line.split(" ")[0])).toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static void killAll() {
        for (Process p : STARTED) {
            p.destroyForcibly();
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        STARTED.clear();
    }
}
