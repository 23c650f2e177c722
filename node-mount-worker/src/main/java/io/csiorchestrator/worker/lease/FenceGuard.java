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
 * FIFO. Otherwise it starts one, with the argument {@value #PROTOCOL} (the protocol it speaks). {@link #tick} runs on
 * the lease thread after every poll: while the lease is valid it feeds the guard whenever the lease was renewed (its
 * fence moved) or the paths of the fence plan changed; with no valid lease it feeds nothing, so the guard fences at the
 * last deadline it was given. The guard's protocol and fence are described in the script; in short:
 *
 * <ul>
 *   <li>A full feed ({@code feed <epoch> <ms until fence> <id>}, a {@code path} line per path, {@code end}) replaces
 *       the guard's list; a delta ({@code delta <epoch> <ms> <base id> <id>}, {@code del <position> <path>} and
 *       {@code add <position> <path>} lines with paths relative to the root, {@code end}) changes it, and only if the
 *       guard holds the list named {@code <base id>} for that epoch (else it refuses it whole); a delta with no line
 *       is a renewal. Nothing applies before {@code end}. The guard keeps its list by position, which is the fence
 *       order: a full feed puts its n-th path at n * {@link #SPACING}, a delta puts a new path between its neighbours
 *       ({@link #delta}).</li>
 *   <li>A guard whose command line has no protocol argument is an older build's (protocol 1): it is only ever fed
 *       full feeds in the old form, {@code feed <epoch> <ms>} with no id.</li>
 *   <li>A full feed is sent whenever this worker cannot be sure of what the guard holds: the first feed after a start
 *       or a takeover, after a write that failed or was cut short, after the guard was restarted or its pid file names
 *       another process, on a new epoch, while the guard's marker is there (it fenced: it holds nothing), when the
 *       guard asks for one ({@value #RESYNC}: it refused a delta), when the change cannot be written as a delta, and
 *       at least every {@link #FULL_EVERY}. Otherwise a delta is sent.</li>
 * </ul>
 * Each write starts with an empty line, which ends (and so drops) whatever partial feed another write left in the FIFO.
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
    /** Written by the guard when it refused a delta: the next feed is a full one. */
    public static final String RESYNC = "fence-guard.resync";
    /** The guard protocol this worker speaks: its guards are started with it as their third argument. */
    public static final String PROTOCOL = "2";
    /** A full feed at least this often, whatever the worker believes the guard holds. */
    static final java.time.Duration FULL_EVERY = java.time.Duration.ofSeconds(30);

    /** How long a started guard may take to say it is ready. */
    static final java.time.Duration START_TIMEOUT = java.time.Duration.ofSeconds(10);

    /**
     * The wait before starting a guard again after a start failed, doubled after each failure up to
     * {@link #RETRY_MAX}. Why: a start that fails (the FIFO path taken by something else, the lock held, no bash) mostly
     * needs an operator, so trying at every lease tick (one a second at least, more while leases come) would fork bash
     * that often and flood the log;
     * 1 s still restarts a guard that was merely killed at once, and 30 s bounds how long a repair waits to be seen
     * (the full-feed period, {@link #FULL_EVERY}). The first try after the guard is found gone is immediate.
     */
    static final java.time.Duration RETRY_FIRST = java.time.Duration.ofSeconds(1);
    static final java.time.Duration RETRY_MAX = java.time.Duration.ofSeconds(30);

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
    /** The protocol of the guard fed: 1 (an older build's guard: full feeds only) or 2. */
    private int protocol;
    private long fedEpoch;
    private long fedFenceAt;
    private List<String> fedPaths = List.of();
    /** Where the guard holds each of {@code fedPaths} (protocol 2: its list is kept by position). */
    private java.util.Map<String, Long> fedPositions = java.util.Map.of();
    /** The id of the list the guard holds, as far as this worker knows (0: none known, the next feed is full). */
    private long fedId;
    private long nextId = 1 + java.util.concurrent.ThreadLocalRandom.current().nextLong(1_000_000L);
    private boolean needFull = true;
    /** A feed is due even if nothing changed (the guard asked for a full feed, or was replaced). */
    private boolean feedDue;
    private long lastFullNanos;
    private long fullFeeds;
    private long deltaFeeds;
    private volatile Runnable onMarker = () -> { };
    private boolean markerSeen;
    /** Why no guard runs now (the worker is then not ready), null while one runs. */
    private volatile String down;
    private java.time.Duration retryBackoff = RETRY_FIRST;
    private long retryAtNanos;
    private volatile long startFailures;

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

    /** The guard's process id (the last one that ran while {@link #down()}). */
    public long pid() {
        return pid;
    }

    /**
     * Why no guard runs now: it is gone and could not be started again (the reason of the last try, and when the next
     * one is); null while a guard runs. The worker is not ready while this is not null (WorkerReadiness).
     */
    public String down() {
        return down;
    }

    /** Starts of a guard that failed since this supervisor was made (while running; the start at worker start throws). */
    public long startFailures() {
        return startFailures;
    }

    /** The protocol of the guard fed: 1 (an older build's) or 2. */
    public int protocol() {
        return protocol;
    }

    /** How many full feeds and deltas this supervisor wrote (for tests and the log). */
    long fullFeeds() {
        return fullFeeds;
    }

    long deltaFeeds() {
        return deltaFeeds;
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
        // a guard taken over or started holds nothing this worker knows of: the next feed is a full one
        needFull = true;
        fedId = 0;
        fedEpoch = 0;
        fedPaths = List.of();
        fedPositions = java.util.Map.of();
        if (live.isPresent()) {
            pid = live.getAsLong();
            protocol = protocolOf(stateDir, pid);
            LOG.infof("fence guard pid %d taken over (state %s, protocol %d)", pid, stateDir, protocol);
            return;
        }
        Path log = stateDir.resolve(LOG_FILE);
        // setsid: its own session and process group (this JVM's child, not a group leader, so setsid execs in place:
        // no fork; with -f the JDK would close the stdout pipe as soon as the forking parent exits). It says
        // "ready <pid>" on stdout once it reads its FIFO and has written its pid file, then logs to the log file only.
        Process setsid = new ProcessBuilder("setsid", "bash", script.toString(), stateDir.toString(),
                root.toString(), PROTOCOL)
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        String ready = readyLine(setsid);
        live = liveGuard(stateDir);
        if (live.isEmpty()) {
            throw new IOException("the fence guard did not start (" + ready + lastLine(log) + "); see " + log);
        }
        pid = live.getAsLong();
        protocol = protocolOf(stateDir, pid);
        LOG.infof("fence guard pid %d started (state %s, root %s, protocol %d)", pid, stateDir, root, protocol);
    }

    /** ": " and the last line of the guard's log (what it said before it exited), or "" when there is none. */
    private static String lastLine(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            for (int i = lines.size() - 1; i >= 0; i--) {
                if (!lines.get(i).isBlank()) {
                    String line = lines.get(i).strip();
                    return ": " + (line.length() > 300 ? line.substring(0, 300) + "..." : line);
                }
            }
        } catch (IOException e) {
            // no log: nothing to add
        }
        return "";
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
     * The protocol of the guard {@code pid} of {@code stateDir}: the argument after its state dir and root on its
     * command line ({@value #PROTOCOL}), or 1 when there is none (a guard started by an older worker build).
     */
    static int protocolOf(Path stateDir, long pid) {
        try {
            byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
            List<String> args = List.of(new String(raw, StandardCharsets.UTF_8).split("\0"));
            int script = args.indexOf(stateDir.resolve(SCRIPT).toString());
            if (script >= 0 && args.size() > script + 3 && args.get(script + 3).equals(PROTOCOL)) {
                return 2;
            }
        } catch (IOException e) {
            // gone: fed as an old one until it is found again
        }
        return 1;
    }

    /**
     * Feeds the guard if the lease is valid and its fence moved or the paths changed since the last feed, or the
     * guard needs a full feed (called on the lease thread after every poll). A guard that is gone (no reader on the
     * FIFO) is started again and given a full feed.
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
            needFull = true; // it fenced: it holds no list (and ignores the fenced epoch)
            onMarker.run();
        }
        long nanos = nanoTime.getAsLong();
        if (down == null && liveGuard(stateDir).isEmpty()) {
            gone("the fence guard pid " + pid + " is gone", nanos);
        }
        if (down != null && !restart(nanos)) {
            return; // no guard: nothing to feed (the worker is not ready; mounts fenced on a lapse are refused)
        }
        if (lease.isEmpty()) {
            return; // no valid lease: the guard keeps its last deadline and fences at it
        }
        checkGuard();
        LeaseGate.Deadline d = lease.get();
        List<String> now = safePaths();
        boolean fullDue = nanos - lastFullNanos >= FULL_EVERY.toNanos();
        if (!feedDue && !fullDue && d.epoch() == fedEpoch && d.fenceAtNanos() == fedFenceAt && now.equals(fedPaths)) {
            return;
        }
        long ms = (d.fenceAtNanos() - nanos) / 1_000_000L;
        if (ms <= 0) {
            return;
        }
        boolean full = fullDue || needFull || fedId == 0 || protocol < 2 || d.epoch() != fedEpoch;
        int written = feed(d.epoch(), ms, now, full, nanos);
        if (written < 0) {
            gone("the fence guard is gone (no reader on " + stateDir.resolve(FIFO) + ")", nanos);
            if (!restart(nanos)) {
                return;
            }
            written = feed(d.epoch(), ms, now, true, nanos);
        }
        if (written > 0) {
            fedEpoch = d.epoch();
            fedFenceAt = d.fenceAtNanos();
            fedPaths = now;
            feedDue = false;
        }
    }

    /** The guard was found gone: the next {@link #restart} tries at once. */
    private void gone(String why, long nanos) {
        LOG.warnf("%s; starting a new one", why);
        down = why;
        retryAtNanos = nanos;
        retryBackoff = RETRY_FIRST;
    }

    /**
     * Starts (or takes over) a guard if the backoff allows: true when one runs now. A failure is logged, kept as the
     * reason of {@link #down()} and retried after the backoff ({@link #RETRY_FIRST} doubled up to {@link #RETRY_MAX}).
     */
    private boolean restart(long nanos) {
        if (nanos - retryAtNanos < 0) {
            return false;
        }
        try {
            ensureRunning();
        } catch (IOException | RuntimeException e) {
            startFailures++;
            retryAtNanos = nanos + retryBackoff.toNanos();
            down = "cannot start the fence guard: " + e.getMessage() + "; next try in " + retryBackoff.toSeconds()
                    + " s (" + startFailures + " failed start(s))";
            retryBackoff = retryBackoff.multipliedBy(2).compareTo(RETRY_MAX) > 0 ? RETRY_MAX : retryBackoff.multipliedBy(2);
            LOG.errorf("%s; fenced mounts are guarded by the worker alone and it is not ready until a guard runs", down);
            return false;
        }
        LOG.infof("the fence guard runs again (pid %d)", pid);
        down = null;
        retryBackoff = RETRY_FIRST;
        return true;
    }

    /**
     * Writes one feed: full (the old form, without an id, to a protocol 1 guard) or a delta from {@code fedPaths}
     * (full if the change cannot be written as one). 1 when written, 0 when not (the next feed is a full one), -1 when
     * the guard is gone.
     */
    private int feed(long epoch, long ms, List<String> paths, boolean full, long nanos) {
        Delta delta = full ? null : delta(fedPaths, fedPositions, paths, root);
        long id = protocol < 2 ? 0 : nextId++;
        StringBuilder feed = new StringBuilder("\n");
        if (delta == null) {
            feed.append("feed ").append(epoch).append(' ').append(ms);
            if (id != 0) {
                feed.append(' ').append(id);
            }
            feed.append('\n');
            paths.forEach(p -> feed.append("path ").append(p).append('\n'));
        } else {
            feed.append("delta ").append(epoch).append(' ').append(ms).append(' ').append(fedId).append(' ')
                    .append(id).append('\n');
            delta.lines().forEach(l -> feed.append(l).append('\n'));
        }
        feed.append("end\n");
        int written = write(feed.toString().getBytes(StandardCharsets.UTF_8));
        if (written > 0) {
            fedId = id;
            needFull = false;
            if (delta == null) {
                fedPositions = positionsOfFull(paths);
                lastFullNanos = nanos;
                fullFeeds++;
            } else {
                fedPositions = delta.positions();
                deltaFeeds++;
            }
        } else {
            fedId = 0;
            needFull = true; // what it took of it is unknown
        }
        return written;
    }

    /** The position a full feed gives its n-th path (from 1): n times this. */
    static final long SPACING = 1L << 32;

    /** A delta's lines and the positions of the list it gives. */
    record Delta(List<String> lines, java.util.Map<String, Long> positions) {
    }

    /** The positions a full feed of {@code paths} gives them in the guard. */
    static java.util.Map<String, Long> positionsOfFull(List<String> paths) {
        java.util.Map<String, Long> positions = new java.util.HashMap<>();
        for (int i = 0; i < paths.size(); i++) {
            positions.put(paths.get(i), (i + 1) * SPACING);
        }
        return positions;
    }

    /**
     * The delta from {@code from} (whose paths the guard holds at {@code positions}) to {@code to}: a {@code del
     * <position> <path>} line per path gone, an {@code add <position> <path>} line per new one (paths relative to
     * {@code root}), each new path at a position between those of its neighbours in {@code to} (a run of new paths
     * spread evenly over the gap), so that the guard's order (ascending position) is {@code to}'s. Null when it cannot
     * be one: a path twice, the kept paths in another order, or no free position left in a gap.
     */
    static Delta delta(List<String> from, java.util.Map<String, Long> positions, List<String> to, Path root) {
        java.util.Set<String> fromSet = new java.util.HashSet<>(from);
        java.util.Set<String> toSet = new java.util.HashSet<>(to);
        if (fromSet.size() != from.size() || toSet.size() != to.size() || !positions.keySet().equals(fromSet)) {
            return null;
        }
        List<String> lines = new ArrayList<>();
        for (String p : from) {
            if (!toSet.contains(p)) {
                lines.add("del " + positions.get(p) + " " + relative(root, p));
            }
        }
        java.util.Map<String, Long> next = new java.util.HashMap<>();
        long lower = 0;
        int i = 0;
        while (i < to.size()) {
            String p = to.get(i);
            if (fromSet.contains(p)) {
                long at = positions.get(p);
                if (at <= lower) {
                    return null; // the kept paths in another order
                }
                next.put(p, at);
                lower = at;
                i++;
                continue;
            }
            int run = i;
            while (run < to.size() && !fromSet.contains(to.get(run))) {
                run++;
            }
            int count = run - i;
            long upper = run < to.size() ? positions.get(to.get(run)) : lower + (count + 1) * SPACING;
            long step = (upper - lower) / (count + 1);
            if (step < 1 || upper <= lower) {
                return null; // no room: a full feed renumbers
            }
            for (int k = 0; k < count; k++) {
                long at = lower + step * (k + 1);
                next.put(to.get(i + k), at);
                lines.add("add " + at + " " + relative(root, to.get(i + k)));
            }
            lower = lower + step * count;
            i = run;
        }
        return new Delta(lines, next);
    }

    private static String relative(Path root, String path) {
        return root.relativize(Path.of(path)).toString();
    }

    /**
     * Whether this worker still knows what the guard holds: a resync file (the guard refused a delta) or a pid file
     * naming another guard (replaced behind this worker's back) makes the next feed a full one, due now.
     */
    private void checkGuard() {
        Path resync = stateDir.resolve(RESYNC);
        if (Files.exists(resync)) {
            String why;
            try {
                why = Files.readString(resync).trim();
                Files.deleteIfExists(resync);
            } catch (IOException e) {
                why = e.toString();
            }
            LOG.warnf("the fence guard refused a delta (%s): feeding it the whole list", why);
            needFull = true;
            feedDue = true;
        }
        long named;
        try {
            named = Long.parseLong(Files.readString(stateDir.resolve(PID_FILE)).trim());
        } catch (IOException | NumberFormatException e) {
            return; // gone or being replaced: the next write finds out
        }
        if (named != pid) {
            OptionalLong live = liveGuard(stateDir);
            if (live.isPresent()) {
                LOG.warnf("the fence guard pid %d was replaced by pid %d: feeding it the whole list", pid,
                        live.getAsLong());
                pid = live.getAsLong();
                protocol = protocolOf(stateDir, pid);
                needFull = true;
                feedDue = true;
            }
        }
    }

    /**
     * Feeds the guard now, outside the lease thread's rhythm ({@link #tick}), before a mount fenced on a lapse, so that
     * the guard knows its paths before the mount exists; answers whether it holds the {@code required} paths
     * (that volume's part of the plan) under the lease's epoch. Not whether it holds the whole plan: another volume's
     * mount, on another thread, may add its paths to the plan between this feed and the answer, and that mount asks for
     * its own paths itself (the plan's equality failed mounts with FENCE_GUARD_UNFED under concurrent mounts, seen in
     * issue 36 session 20). A path that may never reach the guard ({@link #acceptable}) is left out, as from the plan.
     */
    public synchronized boolean feedNow(java.util.Optional<LeaseGate.Deadline> lease, java.util.Collection<String> required) {
        tick(lease);
        return down == null && lease.isPresent() && fedEpoch == lease.get().epoch()
                && required.stream().filter(this::acceptable).allMatch(fedPaths::contains);
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

    /**
     * One write of the whole feed (atomic below PIPE_BUF): 1 when written, 0 when the guard did not get it all, -1
     * when there is no reader on the FIFO (the guard is gone).
     */
    private int write(byte[] feed) {
        Path fifo = stateDir.resolve(FIFO);
        int fd = posix.open(fifo.toString(), OpenFlags.O_WRONLY.intValue() | OpenFlags.O_NONBLOCK.intValue(), 0);
        if (fd < 0 && posix.errno() == ENXIO) {
            return -1;
        }
        if (fd < 0) {
            LOG.errorf("cannot open %s to feed the fence guard: errno %d", fifo, posix.errno());
            return 0;
        }
        try {
            int n = posix.write(fd, feed, feed.length);
            if (n != feed.length) {
                LOG.errorf("feeding the fence guard wrote %d of %d bytes (errno %d): it is not reading", n,
                        feed.length, posix.errno());
                return 0;
            }
            return 1;
        } finally {
            posix.close(fd);
        }
    }

    @Override
    public String toString() {
        return "FenceGuard[pid " + pid + ", state " + stateDir + "]";
    }

}
