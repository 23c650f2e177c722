package io.csiorchestrator.worker.lease;

import io.csiorchestrator.worker.state.AtomicFiles;
import io.csiorchestrator.worker.state.PosixDirs;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import jnr.constants.platform.Errno;
import jnr.constants.platform.OpenFlags;
import jnr.posix.POSIX;
import jnr.posix.POSIXFactory;
import jnr.posix.util.DefaultPOSIXHandler;
import org.jboss.logging.Logger;

/**
 * The supervisor of the guard process (issue 19): a software watchdog beside the worker that unmounts the fenced
 * paths when the worker stops feeding it (frozen, dead, or without a valid lease). The guard is the bash script
 * {@code csi-fence-guard} (a resource of this module; bash and util-linux only), written to
 * {@code <state dir>/csi-fence-guard} (0700) and started with {@code setsid}, so it is in its own session and
 * process group and outlives the JVM (a kill -9 of the worker does not end it; it is reparented).
 *
 * <p>{@link #startOrTakeOver}: if {@code <state dir>/fence-guard.pid} names a live guard of this state dir (its
 * {@code /proc/<pid>/cmdline} runs this script on this state dir), this worker takes it over: it simply feeds the same
 * FIFO. Otherwise it starts one. {@link #tick} runs on the lease thread after every poll: while the lease is valid it
 * feeds {@code feed <epoch> <ms until fence>}, the paths of the fence plan and {@code end} whenever the lease was
 * renewed (its fence moved) or the paths changed; with no valid lease it feeds nothing, so the guard fences at the last
 * deadline it was given. The guard's own protocol and fence are described in the script.
 */
public final class FenceGuard {

    private static final Logger LOG = Logger.getLogger(FenceGuard.class);

    /** The script's resource name (beside this class) and its file name in the state dir. */
    public static final String SCRIPT = "csi-fence-guard";
    public static final String FIFO = "fence-guard.fifo";
    public static final String PID_FILE = "fence-guard.pid";
    public static final String LOG_FILE = "fence-guard.log";
    /** Written by the guard when it fenced: {@code epoch <E>}, then {@code unmounted|lazy|failed <path>} lines. */
    public static final String MARKER = "fence-guard.marker";

    /** How long a started guard may take to say it is ready. */
    static final java.time.Duration START_TIMEOUT = java.time.Duration.ofSeconds(10);

    private static final int ENXIO = Errno.ENXIO.intValue();

    private final Path stateDir;
    private final Path root;
    private final Supplier<List<String>> paths;
    private final LongSupplier nanoTime;
    private final POSIX posix = POSIXFactory.getNativePOSIX(new DefaultPOSIXHandler() {
        @Override
        public void error(Errno error, String extraData) {
        }

        @Override
        public void error(Errno error, String methodName, String extraData) {
        }
    });
    private long pid;
    private long fedEpoch;
    private long fedFenceAt;
    private List<String> fedPaths = List.of();
    private volatile Runnable onMarker = () -> { };
    private boolean markerSeen;

    private FenceGuard(Path stateDir, Path root, Supplier<List<String>> paths, LongSupplier nanoTime) {
        this.stateDir = stateDir;
        this.root = root;
        this.paths = paths;
        this.nanoTime = nanoTime;
    }

    /**
     * Takes over the live guard of {@code stateDir} or starts a new one.
     *
     * @param stateDir where the script, FIFO, pid file, log and marker live (the worker's root)
     * @param root     the only tree the guard may unmount in (the worker's root)
     * @param paths    the paths a fence must unmount now (targets first, then stagings)
     */
    public static FenceGuard startOrTakeOver(Path stateDir, Path root, Supplier<List<String>> paths,
                                             LongSupplier nanoTime) throws IOException {
        FenceGuard guard = new FenceGuard(stateDir, root.normalize(), paths, nanoTime);
        guard.ensureRunning();
        return guard;
    }

    /**
     * Runs {@code handler} on the lease thread when a tick finds the guard's marker (the guard fenced): the worker
     * reads it, records the fence and removes it (fence-worker's part). Until the marker is removed the guard ignores
     * feeds of the fenced epoch, so a worker that kept that epoch would be unguarded; without a handler this is logged.
     */
    public void onMarker(Runnable handler) {
        this.onMarker = handler;
    }

    /** The guard's process id. */
    public long pid() {
        return pid;
    }

    /** Writes the script (atomically, a new file: a running guard keeps reading its own copy) with mode 0700. */
    public static Path writeScript(Path stateDir) throws IOException {
        byte[] script;
        try (InputStream in = FenceGuard.class.getResourceAsStream(SCRIPT)) {
            if (in == null) {
                throw new IOException("resource " + SCRIPT + " is missing from the worker");
            }
            script = in.readAllBytes();
        }
        Path file = stateDir.resolve(SCRIPT);
        AtomicFiles.write(file, script);
        new PosixDirs().chmod(file, 0700);
        return file;
    }

    private synchronized void ensureRunning() throws IOException {
        Path script = writeScript(stateDir);
        OptionalLong live = liveGuard(stateDir);
        if (live.isPresent()) {
            pid = live.getAsLong();
            LOG.infof("fence guard pid %d taken over (state %s)", pid, stateDir);
            return;
        }
        Path log = stateDir.resolve(LOG_FILE);
        // setsid: its own session and process group (this JVM's child, not a group leader, so setsid execs in place:
        // no fork; with -f the JDK would close the stdout pipe as soon as the forking parent exits). It says
        // "ready <pid>" on stdout once it reads its FIFO and has written its pid file, then logs to the log file only.
        Process setsid = new ProcessBuilder("setsid", "bash", script.toString(), stateDir.toString(),
                root.toString())
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        String ready = readyLine(setsid);
        live = liveGuard(stateDir);
        if (live.isEmpty()) {
            throw new IOException("the fence guard did not start (" + ready + "); see " + log);
        }
        pid = live.getAsLong();
        fedEpoch = 0;
        LOG.infof("fence guard pid %d started (state %s, root %s)", pid, stateDir, root);
    }

    /**
     * The guard's first line on stdout ({@code ready <pid>}), or why there is none: it exited (see its log), or it
     * did not say it within {@link #START_TIMEOUT} (a guard stuck before reading its FIFO).
     */
    static String readyLine(Process started) throws IOException {
        java.util.concurrent.CompletableFuture<String> line = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try (java.io.BufferedReader out = new java.io.BufferedReader(
                    new java.io.InputStreamReader(started.getInputStream(), StandardCharsets.UTF_8))) {
                String first = out.readLine();
                return first == null ? "it exited" : first;
            } catch (IOException e) {
                return e.toString();
            }
        });
        try {
            return line.get(START_TIMEOUT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            started.destroyForcibly();
            return "no ready line within " + START_TIMEOUT.toSeconds() + " s";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting the fence guard", e);
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause().toString();
        }
    }

    /**
     * The pid of the live guard of {@code stateDir}: the pid file's process exists and its command line runs the
     * script of this state dir on this state dir.
     */
    public static OptionalLong liveGuard(Path stateDir) {
        long pid;
        try {
            pid = Long.parseLong(Files.readString(stateDir.resolve(PID_FILE)).trim());
        } catch (NoSuchFileException | NumberFormatException e) {
            return OptionalLong.empty();
        } catch (IOException e) {
            LOG.warnf("cannot read %s: %s", stateDir.resolve(PID_FILE), e.toString());
            return OptionalLong.empty();
        }
        try {
            byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
            List<String> args = List.of(new String(raw, StandardCharsets.UTF_8).split("\0"));
            if (args.contains(stateDir.resolve(SCRIPT).toString()) && args.contains(stateDir.toString())) {
                return OptionalLong.of(pid);
            }
        } catch (IOException e) {
            // no such process
        }
        return OptionalLong.empty();
    }

    /**
     * Feeds the guard if the lease is valid and its fence moved or the paths changed since the last feed (called on
     * the lease thread after every poll). A guard that is gone (no reader on the FIFO) is started again.
     *
     * @param lease the lease now: its epoch and fence time, empty while it is not valid
     */
    public synchronized void tick(java.util.Optional<LeaseGate.Deadline> lease) {
        boolean marker = Files.exists(stateDir.resolve(MARKER));
        if (marker && !markerSeen) {
            LOG.warnf("the fence guard fenced (marker %s): it ignores feeds of the fenced epoch until a newer one",
                    stateDir.resolve(MARKER));
        }
        markerSeen = marker;
        if (marker) {
            onMarker.run();
        }
        if (lease.isEmpty()) {
            return; // no valid lease: the guard keeps its last deadline and fences at it
        }
        LeaseGate.Deadline d = lease.get();
        List<String> now = safePaths();
        if (d.epoch() == fedEpoch && d.fenceAtNanos() == fedFenceAt && now.equals(fedPaths)) {
            return;
        }
        long ms = (d.fenceAtNanos() - nanoTime.getAsLong()) / 1_000_000L;
        if (ms <= 0) {
            return;
        }
        StringBuilder feed = new StringBuilder("feed ").append(d.epoch()).append(' ').append(ms).append('\n');
        now.forEach(p -> feed.append("path ").append(p).append('\n'));
        feed.append("end\n");
        if (write(feed.toString().getBytes(StandardCharsets.UTF_8))) {
            fedEpoch = d.epoch();
            fedFenceAt = d.fenceAtNanos();
            fedPaths = now;
        }
    }

    /**
     * Feeds the guard now, outside the lease thread's rhythm ({@link #tick}), and answers whether it holds the current
     * plan's paths under the lease's epoch: called before a mount fenced on a lapse, so that the guard knows the path
     * before the mount exists. False without a valid lease, or when the guard did not take the feed.
     */
    public synchronized boolean feedNow(java.util.Optional<LeaseGate.Deadline> lease) {
        tick(lease);
        return lease.isPresent() && fedEpoch == lease.get().epoch() && safePaths().equals(fedPaths);
    }

    /** The plan's paths that may reach the guard: under the root, normal, no control character (else logged). */
    private List<String> safePaths() {
        List<String> safe = new ArrayList<>();
        for (String p : paths.get()) {
            if (acceptable(p)) {
                safe.add(p);
            } else {
                LOG.errorf("not feeding path %s to the fence guard: not a normal path under %s", p, root);
            }
        }
        return List.copyOf(safe);
    }

    boolean acceptable(String p) {
        if (p == null || p.chars().anyMatch(Character::isISOControl)) {
            return false;
        }
        Path path = Path.of(p);
        return path.isAbsolute() && path.normalize().toString().equals(p) && path.startsWith(root)
                && !path.equals(root);
    }

    /** One write of the whole feed (atomic below PIPE_BUF); false if the guard did not get it. */
    private boolean write(byte[] feed) {
        Path fifo = stateDir.resolve(FIFO);
        int fd = posix.open(fifo.toString(), OpenFlags.O_WRONLY.intValue() | OpenFlags.O_NONBLOCK.intValue(), 0);
        if (fd < 0 && posix.errno() == ENXIO) {
            LOG.warnf("the fence guard is gone (no reader on %s); starting a new one", fifo);
            try {
                ensureRunning();
            } catch (IOException e) {
                LOG.errorf("cannot start the fence guard: %s", e.getMessage());
                return false;
            }
            fd = posix.open(fifo.toString(), OpenFlags.O_WRONLY.intValue() | OpenFlags.O_NONBLOCK.intValue(), 0);
        }
        if (fd < 0) {
            LOG.errorf("cannot open %s to feed the fence guard: errno %d", fifo, posix.errno());
            return false;
        }
        try {
            int n = posix.write(fd, feed, feed.length);
            if (n != feed.length) {
                LOG.errorf("feeding the fence guard wrote %d of %d bytes (errno %d): it is not reading", n,
                        feed.length, posix.errno());
                return false;
            }
            return true;
        } finally {
            posix.close(fd);
        }
    }

    @Override
    public String toString() {
        return "FenceGuard[pid " + pid + ", state " + stateDir + "]";
    }

}
