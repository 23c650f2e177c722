package io.csiorchestrator.worker.lease;

import static io.csiorchestrator.worker.lease.FenceGuardFixture.mounted;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The supervisor's feeds (protocol 2: full feeds and deltas) with the real guard process and real bind mounts under a
 * temporary worker root: after a takeover the first feed is the whole list, an older build's guard (protocol 1, the
 * script as it was, a test resource) is fed full feeds only, a guard replaced behind the worker's back gets the whole
 * list, and the paths added by deltas are all fenced once the feeding stops (the worker frozen). No timing is
 * asserted: the last feed's deadline is short, and the test waits (bounded) for the marker; a feed the guard did not
 * take leaves it with the earlier 60 s deadline, past the wait.
 */
class FenceGuardDeltaTest {

    private static final Duration AWAIT = Duration.ofSeconds(20);
    private static final long LONG_NANOS = 60_000_000_000L;
    private static final long SHORT_NANOS = 1_500_000_000L;

    private FenceGuardFixture files;
    private Path state;
    private final List<String> paths = new ArrayList<>();
    private final List<Process> started = new ArrayList<>();

    @BeforeEach
    void setUp() throws Exception {
        files = FenceGuardFixture.create("csi-fence-guard-delta");
        state = files.state();
    }

    @AfterEach
    void tearDown() throws Exception {
        FenceGuard.liveGuard(state).ifPresent(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
        for (Process p : started) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
        if (files != null) {
            files.close();
        }
    }

    private FenceGuard supervisor(List<String> plan) throws IOException {
        return FenceGuard.startOrTakeOver(state, state, () -> List.copyOf(plan), System::nanoTime);
    }

    private static Optional<LeaseGate.Deadline> lease(long epoch, long inNanos) {
        return Optional.of(new LeaseGate.Deadline(epoch, System.nanoTime() + inNanos));
    }

    @Test
    void theGuardFencesEveryPathAddedByDeltasOnceTheWorkerFreezes() throws Exception {
        String a = bindMount("per-alloc/a1/default/v1");
        String b = bindMount("per-alloc/a2/default/v2");
        String c = bindMount("per-alloc/a3/default/v3");
        String staging = bindMount("staging/default/v2");
        FenceGuard guard = supervisor(paths);
        assertEquals(2, guard.protocol(), "a guard this worker started speaks its protocol");

        paths.add(a);
        guard.tick(lease(4, LONG_NANOS));
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 4 with 1 path(s)"));
        paths.add(b);
        guard.tick(lease(4, LONG_NANOS));
        paths.add(staging);
        guard.tick(lease(4, LONG_NANOS));
        paths.add(1, c); // a target: before the staging, between the others
        guard.tick(lease(4, SHORT_NANOS)); // the last feed before the freeze
        assertEquals(1, guard.fullFeeds(), "the first feed only");
        assertEquals(3, guard.deltaFeeds(), "then a delta per change");
        // frozen: no more ticks

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 4", "unmounted " + a, "unmounted " + c, "unmounted " + b, "unmounted " + staging),
                files.markerLines(), "every path the deltas added, in the worker's order");
        assertFalse(Files.exists(state.resolve(FenceGuard.RESYNC)), "no delta refused: " + files.log());
    }

    @Test
    void aWorkerTakingOverFeedsTheWholeListAndTheGuardFencesExactlyIt() throws Exception {
        String a = bindMount("per-alloc/a1/default/v1");
        String b = bindMount("per-alloc/a2/default/v2");
        String c = bindMount("per-alloc/a3/default/v3");
        String d = bindMount("per-alloc/a4/default/v4");
        List<String> first = new ArrayList<>(List.of(a, b));
        FenceGuard old = supervisor(first);
        old.tick(lease(6, LONG_NANOS));
        first.add(c);
        old.tick(lease(6, LONG_NANOS));
        assertEquals(1, old.deltaFeeds());
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 6 with 3 path(s)"));

        // a new worker instance (its own view of the mounts) takes the guard over: it cannot know what the guard holds
        FenceGuard taking = supervisor(List.of(b, d));
        assertEquals(old.pid(), taking.pid(), "taken over, not replaced");
        taking.tick(lease(6, SHORT_NANOS));
        assertEquals(1, taking.fullFeeds());
        assertEquals(0, taking.deltaFeeds());

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 6", "unmounted " + b, "unmounted " + d), files.markerLines(), "exactly its list");
        assertTrue(mounted(Path.of(a)) && mounted(Path.of(c)), "no longer in the list");
    }

    @Test
    void anOlderBuildsGuardTakenOverIsFedFullFeedsOnlyAndFencesTheWholeList() throws Exception {
        String a = bindMount("per-alloc/a1/default/v1");
        String b = bindMount("per-alloc/a2/default/v2");
        String staging = bindMount("staging/default/v1");
        long oldPid = startProtocol1Guard();

        FenceGuard guard = supervisor(paths);
        assertEquals(oldPid, guard.pid(), "the running guard is taken over");
        assertEquals(1, guard.protocol(), "no protocol argument: an older build's guard");
        paths.add(a);
        guard.tick(lease(8, LONG_NANOS));
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 8 with 1 path(s)"));
        paths.add(staging);
        guard.tick(lease(8, LONG_NANOS));
        paths.add(1, b);
        guard.tick(lease(8, SHORT_NANOS));
        assertEquals(3, guard.fullFeeds());
        assertEquals(0, guard.deltaFeeds(), "it would not understand one");

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 8", "unmounted " + a, "unmounted " + b, "unmounted " + staging),
                files.markerLines());
        assertFalse(files.log().contains("malformed"), "every feed in its form: " + files.log());
        assertEquals(oldPid, FenceGuard.liveGuard(state).orElseThrow(), "still the old guard");
    }

    /**
     * A guard killed and replaced by another (not this supervisor's doing: its writes never failed) holds nothing:
     * the pid file names another guard, so the next feed is the whole list (a delta would be refused, and the new guard
     * would have no deadline at all).
     */
    @Test
    void aGuardReplacedBehindTheWorkersBackIsFedTheWholeList() throws Exception {
        String a = bindMount("per-alloc/a1/default/v1");
        String b = bindMount("per-alloc/a2/default/v2");
        FenceGuard guard = supervisor(paths);
        paths.add(a);
        guard.tick(lease(9, LONG_NANOS));
        long first = guard.pid();
        ProcessHandle.of(first).orElseThrow().destroyForcibly();
        await().atMost(AWAIT).until(() -> ProcessHandle.of(first).isEmpty());
        Process other = new ProcessBuilder("setsid", "bash", state.resolve(FenceGuard.SCRIPT).toString(),
                state.toString(), state.toString(), FenceGuard.PROTOCOL)
                .redirectError(ProcessBuilder.Redirect.appendTo(state.resolve(FenceGuard.LOG_FILE).toFile())).start();
        started.add(other);
        assertTrue(FenceGuard.readyLine(other).startsWith("ready "));

        paths.add(b);
        guard.tick(lease(9, SHORT_NANOS));
        assertNotEquals(first, guard.pid());
        assertEquals(2, guard.fullFeeds(), "the replacing guard got the whole list");
        assertEquals(0, guard.deltaFeeds());

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 9", "unmounted " + a, "unmounted " + b), files.markerLines());
    }

    /**
     * A delta the guard refused (here: it holds another list, fed by a second writer) makes it ask for a full feed;
     * the supervisor's next tick sends the whole list at once, even with nothing else changed.
     */
    @Test
    void aRefusedDeltaIsFollowedByTheWholeListAtTheNextTick() throws Exception {
        String a = bindMount("per-alloc/a1/default/v1");
        String b = bindMount("per-alloc/a2/default/v2");
        FenceGuard guard = supervisor(paths);
        paths.add(a);
        Optional<LeaseGate.Deadline> lease = lease(10, LONG_NANOS);
        guard.tick(lease);
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 10 with 1 path(s)"));
        // another writer replaces the guard's list (and id) behind this supervisor's back
        Files.writeString(state.resolve(FenceGuard.FIFO), "feed 10 600000 77\nend\n");
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 10 with 0 path(s)"));

        paths.add(b);
        guard.tick(lease); // a delta on the list the guard no longer holds: refused
        assertEquals(1, guard.deltaFeeds());
        await().atMost(AWAIT).until(() -> Files.exists(state.resolve(FenceGuard.RESYNC)));
        Optional<LeaseGate.Deadline> shorter = lease(10, SHORT_NANOS);
        guard.tick(shorter);
        assertEquals(2, guard.fullFeeds(), "the whole list after the guard asked for it");
        assertFalse(Files.exists(state.resolve(FenceGuard.RESYNC)), "taken in");

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 10", "unmounted " + a, "unmounted " + b), files.markerLines());
    }

    @Test
    void aDeltaPutsNewPathsBetweenTheirNeighboursOrIsNone() {
        Path root = Path.of("/r");
        long s = FenceGuard.SPACING;
        List<String> from = List.of("/r/a", "/r/b", "/r/s");
        java.util.Map<String, Long> full = FenceGuard.positionsOfFull(from);
        assertEquals(java.util.Map.of("/r/a", s, "/r/b", 2 * s, "/r/s", 3 * s), full);
        assertEquals(List.of(), FenceGuard.delta(from, full, from, root).lines(), "a renewal");

        FenceGuard.Delta d = FenceGuard.delta(from, full, List.of("/r/c", "/r/x", "/r/s", "/r/d"), root);
        // the dels free their positions first: the run c, x spreads over (0, 3s); d comes after s, one spacing on
        assertEquals(List.of("del " + s + " a", "del " + 2 * s + " b", "add " + s + " c", "add " + 2 * s + " x",
                "add " + 4 * s + " d"), d.lines());
        assertEquals(java.util.Map.of("/r/c", s, "/r/x", 2 * s, "/r/s", 3 * s, "/r/d", 4 * s), d.positions());
        FenceGuard.Delta between = FenceGuard.delta(List.of("/r/a", "/r/s"), java.util.Map.of("/r/a", s, "/r/s", 2 * s),
                List.of("/r/a", "/r/b", "/r/c", "/r/s"), root);
        long third = s / 3;
        assertEquals(List.of("add " + (s + third) + " b", "add " + (s + 2 * third) + " c"), between.lines());

        assertNull(FenceGuard.delta(from, full, List.of("/r/b", "/r/a"), root), "a reorder");
        assertNull(FenceGuard.delta(List.of("/r/a"), FenceGuard.positionsOfFull(List.of("/r/a")),
                List.of("/r/a", "/r/a"), root), "a path twice");
        assertNull(FenceGuard.delta(List.of("/r/a", "/r/b"), java.util.Map.of("/r/a", 1L, "/r/b", 2L),
                List.of("/r/a", "/r/n", "/r/b"), root), "no position left between 1 and 2");
    }

    /** Starts the script as an older worker build did (its text of then, two arguments); waits for its ready line. */
    private long startProtocol1Guard() throws Exception {
        Path script = state.resolve(FenceGuard.SCRIPT);
        try (InputStream in = getClass().getResourceAsStream("csi-fence-guard-protocol-1")) {
            Files.write(script, in.readAllBytes());
        }
        Process p = new ProcessBuilder("setsid", "bash", script.toString(), state.toString(), state.toString())
                .redirectError(ProcessBuilder.Redirect.appendTo(state.resolve(FenceGuard.LOG_FILE).toFile())).start();
        started.add(p);
        String ready = FenceGuard.readyLine(p);
        assertTrue(ready.startsWith("ready "), ready);
        assertFalse(Files.readString(script).contains("protocol"), "the old text");
        return FenceGuard.liveGuard(state).orElseThrow();
    }

    /** A bind mount on {@code under} the state dir; its path. */
    private String bindMount(String under) throws Exception {
        return files.bindMount(state.resolve(under)).toString();
    }
}
