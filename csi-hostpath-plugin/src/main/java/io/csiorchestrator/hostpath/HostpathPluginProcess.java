package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.mount.MountInfo;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.hostpath.faults.FaultInjector;
import io.csiorchestrator.hostpath.mount.Mounter;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The hostpath plugin as a separate process, for tests in this and other modules: starts it,
 * waits for its "listening" line, injects faults, counts calls, and stops it.
 *
 * <p>It runs {@code java -jar} on the runnable jar named by the system property
 * {@value #JAR_PROPERTY}, or else on {@code target/csi-hostpath-plugin.jar} next to this class's
 * own jar or classes directory; when neither exists it runs the plugin's main class on this JVM's
 * class path (which holds the plugin whenever a module depends on this one).
 */
public final class HostpathPluginProcess implements AutoCloseable {

    public static final String JAR_PROPERTY = "csi.hostpath.plugin.jar";
    public static final String RUNNABLE_JAR_NAME = "csi-hostpath-plugin.jar";

    private static final String READY_MARKER = " listening on unix://";
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(20);

    /** Plugins started by this JVM; killed when it exits, so none outlives a crashed test run. */
    private static final Set<Process> STARTED = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> STARTED.forEach(Process::destroy),
                "hostpath-plugin-reaper"));
    }

    private final Process process;
    private final Path socketPath;
    private final Path stateDir;
    private final Path faultsFile;
    private final Path logFile;
    private final List<String> command;

    private HostpathPluginProcess(Process process, Path socketPath, Path stateDir, Path faultsFile, Path logFile,
                                  List<String> command) {
        this.process = process;
        this.socketPath = socketPath;
        this.stateDir = stateDir;
        this.faultsFile = faultsFile;
        this.logFile = logFile;
        this.command = List.copyOf(command);
    }

    public static Builder builder(Path socketPath, String nodeId, Path stateDir) {
        return new Builder(socketPath, nodeId, stateDir);
    }

    /** Options of a plugin process; each maps to a command-line flag (see {@link PluginOptions}). */
    public static final class Builder {
        private final Path socketPath;
        private final String nodeId;
        private final Path stateDir;
        private final List<String> extraArgs = new ArrayList<>();
        private final List<String> jvmOptions = new ArrayList<>();
        private Path logFile;
        private Path jar;
        private Duration startTimeout = Duration.ofSeconds(60);

        private Builder(Path socketPath, String nodeId, Path stateDir) {
            this.socketPath = socketPath.toAbsolutePath();
            this.nodeId = nodeId;
            this.stateDir = stateDir.toAbsolutePath();
        }

        public Builder stageUnstage(boolean advertise) {
            extraArgs.add("--stage-unstage=" + advertise);
            return this;
        }

        public Builder controllerPublish(boolean advertise) {
            extraArgs.add("--controller-publish=" + advertise);
            return this;
        }

        public Builder maxVolumesPerNode(long max) {
            extraArgs.add("--max-volumes-per-node=" + max);
            return this;
        }

        public Builder unmountStagingOnExit() {
            extraArgs.add("--unmount-staging-on-exit");
            return this;
        }

        /** Any further flags, e.g. {@code --fault "NodeStageVolume INTERNAL 1"} as two arguments. */
        public Builder args(String... args) {
            extraArgs.addAll(List.of(args));
            return this;
        }

        /** JVM options after the defaults (so they win), e.g. {@code -XX:StartFlightRecording=filename=p.jfr}. */
        public Builder jvmOptions(String... options) {
            jvmOptions.addAll(List.of(options));
            return this;
        }

        /** Where the plugin's output goes; default {@code <state-dir>/../<node-id>-plugin.log}. */
        public Builder logFile(Path file) {
            this.logFile = file;
            return this;
        }

        /** The runnable jar to use instead of the one found by {@link #runnableJar()}. */
        public Builder jar(Path runnableJar) {
            this.jar = runnableJar;
            return this;
        }

        public Builder startTimeout(Duration timeout) {
            this.startTimeout = timeout;
            return this;
        }

        /** Starts the plugin and returns once it listens; fails with its output if it does not. */
        public HostpathPluginProcess start() throws IOException {
            Files.createDirectories(stateDir);
            Path log = logFile != null ? logFile : stateDir.resolveSibling(nodeId + "-plugin.log");
            List<String> command = new ArrayList<>();
            command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            command.addAll(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"));
            command.addAll(jvmOptions);
            Optional<Path> runnable = jar != null ? Optional.of(jar) : runnableJar();
            if (runnable.isPresent()) {
                command.addAll(List.of("-jar", runnable.get().toString()));
            } else {
                command.addAll(List.of("-cp", System.getProperty("java.class.path"), HostpathPluginMain.class.getName()));
            }
            command.addAll(List.of("--endpoint", "unix://" + socketPath, "--node-id", nodeId,
                    "--state-dir", stateDir.toString()));
            command.addAll(extraArgs);
            Path faults = faultsFileOf(extraArgs).orElse(stateDir.resolve(PluginOptions.FAULTS_FILE_NAME));

            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            STARTED.add(process);
            process.onExit().thenRun(() -> STARTED.remove(process));
            CompletableFuture<Void> ready = new CompletableFuture<>();
            Thread copier = new Thread(() -> copyOutput(process, log, ready), "hostpath-plugin-output-" + nodeId);
            copier.setDaemon(true);
            copier.start();
            HostpathPluginProcess plugin = new HostpathPluginProcess(process, socketPath, stateDir, faults, log, command);
            try {
                ready.get(startTimeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                plugin.kill();
                throw new IOException("the hostpath plugin did not start within " + startTimeout + " ("
                        + String.join(" ", command) + "); its output:\n" + plugin.output(), e);
            } catch (InterruptedException e) {
                plugin.kill();
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while starting the hostpath plugin", e);
            }
            return plugin;
        }
    }

    /** The runnable jar, if one can be found (see the class comment). */
    public static Optional<Path> runnableJar() {
        String property = System.getProperty(JAR_PROPERTY);
        if (property != null && !property.isBlank()) {
            Path jar = Path.of(property);
            if (!Files.isRegularFile(jar)) {
                throw new IllegalStateException(JAR_PROPERTY + " names " + jar + ", which does not exist;"
                        + " run the package phase of csi-hostpath-plugin first");
            }
            return Optional.of(jar);
        }
        try {
            Path codeSource = Path.of(HostpathPluginProcess.class.getProtectionDomain().getCodeSource()
                    .getLocation().toURI());
            Path target = codeSource.getParent(); // target/ for target/classes and for target/<artifact>.jar
            Path jar = target == null ? null : target.resolve(RUNNABLE_JAR_NAME);
            return jar != null && Files.isRegularFile(jar) ? Optional.of(jar) : Optional.empty();
        } catch (URISyntaxException | RuntimeException e) {
            return Optional.empty();
        }
    }

    public Path socketPath() {
        return socketPath;
    }

    public String endpoint() {
        return "unix://" + socketPath;
    }

    public Path stateDir() {
        return stateDir;
    }

    /** The directory of a volume the plugin created. */
    public Path volumeDirectory(String volumeId) {
        return stateDir.resolve("volumes").resolve(volumeId);
    }

    public Path faultsFile() {
        return faultsFile;
    }

    public Path logFile() {
        return logFile;
    }

    public List<String> command() {
        return command;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** Replaces the fault rules (see {@link io.csiorchestrator.hostpath.faults.FaultRules} for the format). */
    public void injectFaults(String... rules) {
        FaultInjector.writeRules(faultsFile, rules);
    }

    public void clearFaults() {
        FaultInjector.writeRules(faultsFile);
    }

    /** The calls the plugin answered so far, oldest first. */
    public List<CallLog.Call> calls() {
        return CallLog.read(stateDir);
    }

    /** How many calls of a CSI method (csi.proto name, e.g. NodeStageVolume) the plugin answered so far. */
    public long callCount(String method) {
        return CallLog.count(stateDir, method);
    }

    /** How many calls of a CSI method reached the plugin so far, answered or not (yet). */
    public long startedCallCount(String method) {
        return CallLog.startedCount(stateDir, method);
    }

    /** Everything the plugin printed so far. */
    public String output() {
        try {
            return Files.exists(logFile) ? Files.readString(logFile) : "";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** SIGTERM, and waits for the plugin to exit (SIGKILL after 20 s). */
    public void stop() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                kill();
            }
        } catch (InterruptedException e) {
            kill();
            Thread.currentThread().interrupt();
        }
    }

    /** SIGKILL: the plugin gets no chance to clean up, as in a crash. */
    public void kill() {
        process.destroyForcibly();
        try {
            process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        stop();
    }

    /**
     * Unmounts every mount at or below a directory, deepest first: test teardown, so that deleting
     * a temporary directory never reaches through a bind mount into a volume.
     */
    public static List<String> unmountAllUnder(Path directory) throws IOException {
        MountTable table = MountTable.readSelf();
        Mounter mounter = new Mounter(MountTable::readSelf);
        List<String> unmounted = new ArrayList<>();
        for (MountInfo mount : table.mountsUnder(directory)) {
            mounter.unmountAll(Path.of(mount.mountPoint()));
            unmounted.add(mount.mountPoint());
        }
        return unmounted;
    }

    private static Optional<Path> faultsFileOf(List<String> args) {
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if (arg.startsWith("--faults-file=")) {
                return Optional.of(Path.of(arg.substring("--faults-file=".length())));
            }
            if (arg.equals("--faults-file") && i + 1 < args.size()) {
                return Optional.of(Path.of(args.get(i + 1)));
            }
        }
        return Optional.empty();
    }

    private static void copyOutput(Process process, Path log, CompletableFuture<Void> ready) {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8));
             Writer out = Files.newBufferedWriter(log, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                     StandardOpenOption.APPEND)) {
            String line;
            while ((line = reader.readLine()) != null) {
                out.write(line);
                out.write('\n');
                out.flush();
                if (line.contains(READY_MARKER)) {
                    ready.complete(null);
                }
            }
        } catch (IOException e) {
            ready.completeExceptionally(e);
        }
        ready.completeExceptionally(new IOException("the hostpath plugin exited"
                + (process.isAlive() ? "" : " with code " + waitForExit(process))));
    }

    private static int waitForExit(Process process) {
        try {
            return process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }
}
