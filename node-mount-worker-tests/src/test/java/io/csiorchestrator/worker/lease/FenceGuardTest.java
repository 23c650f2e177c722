package io.csiorchestrator.worker.lease;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The guard's supervisor with the real script process (no mounts: the paths are plain directories, so a fence finds
 * nothing mounted): it starts the guard in its own session, a second supervisor on the same state dir takes the live
 * guard over, a tick feeds with a valid lease and feeds again when the paths change, paths outside the root never
 * reach the FIFO, a guard killed with -9 is started again at the next feed, and one that cannot be started again is
 * down (with the reason) and retried after a backoff.
 */
class FenceGuardTest {

    private static final Duration AWAIT = Duration.ofSeconds(20);
    private Path state;
    private final List<String> paths = new ArrayList<>();
    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    @BeforeEach
    void setUp() throws IOException {
        state = Files.createTempDirectory("csi-fence-guard-sup").toRealPath();
    }

    @AfterEach
    void tearDown() throws IOException {
        FenceGuard.liveGuard(state).ifPresent(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
        try (Stream<Path> files = Files.walk(state)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private FenceGuard guard() throws IOException {
        return FenceGuard.startOrTakeOver(state, state, () -> List.copyOf(paths), now::get);
    }

    private String log() throws IOException {
        return Files.readString(state.resolve(FenceGuard.LOG_FILE));
    }

    private static long countOf(String text, String part) {
        return text.lines().filter(l -> l.contains(part)).count();
    }

    @Test
    void startsInItsOwnSessionAndASecondSupervisorTakesTheLiveGuardOver() throws Exception {
        FenceGuard first = guard();
        long pid = first.pid();
        assertEquals(pid, FenceGuard.liveGuard(state).orElseThrow());
        assertEquals(0700, Files.getPosixFilePermissions(state.resolve(FenceGuard.SCRIPT)).stream()
                .mapToInt(p -> 1 << (8 - p.ordinal())).sum(), "script mode 0700");
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        assertEquals(Long.toString(pid), fields[3], "session leader of its own session (setsid)");

        FenceGuard second = guard();
        assertEquals(pid, second.pid(), "the live guard is taken over, not replaced");
        assertEquals(1, countOf(log(), "started for root"), "one guard started");
    }

    @Test
    void feedsWithAValidLeaseAndAgainWhenThePathsChangeButNeverAPathOutsideTheRoot() throws Exception {
        FenceGuard guard = guard();
        Path target = Files.createDirectories(state.resolve("per-alloc/a1/default/v1"));
        paths.add(target.toString());
        paths.add("/etc"); // outside the root: never fed

        guard.tick(Optional.empty()); // no valid lease: nothing
        long fenceAt = now.get() + 60_000_000_000L;
        guard.tick(Optional.of(new LeaseGate.Deadline(7, fenceAt)));
        await().atMost(AWAIT).until(() -> log().contains("armed for epoch 7 with 1 path(s)"));
        paths.remove(target.toString()); // the paths changed: fed (the guard logs a changed list)
        guard.tick(Optional.of(new LeaseGate.Deadline(7, fenceAt)));
        await().atMost(AWAIT).until(() -> log().contains("armed for epoch 7 with 0 path(s)"));

        String log = log();
        assertEquals(2, countOf(log, "armed for epoch"), log);
        assertFalse(log.contains("/etc"), "a path outside the root is not fed (the guard would log refusing it)");
        assertFalse(Files.exists(state.resolve(FenceGuard.MARKER)), "fed 60 s ahead: no fence");
    }

    /**
     * {@code feedNow} (called before a fenced mount): with a valid lease it hands the guard the current paths at once,
     * outside the lease poll's rhythm, and says so; without a valid lease it feeds nothing and answers false.
     */
    @Test
    void feedNowHandsTheGuardANewPathAtOnceAndAnswersWhetherItHasIt() throws Exception {
        FenceGuard guard = guard();
        long fenceAt = now.get() + 60_000_000_000L;
        assertTrue(guard.feedNow(Optional.of(new LeaseGate.Deadline(4, fenceAt)), List.of()), "an empty plan is fed too");
        Path target = Files.createDirectories(state.resolve("per-alloc/a2/default/v2"));
        paths.add(target.toString());
        assertFalse(guard.feedNow(Optional.empty(), List.of(target.toString())), "no valid lease: not fed");
        assertTrue(guard.feedNow(Optional.of(new LeaseGate.Deadline(4, fenceAt)), List.of(target.toString())));
        await().atMost(AWAIT).until(() -> log().contains("armed for epoch 4 with 1 path(s)"));
    }

    /**
     * Two mounts on two threads: the plan gains the other volume's path right after this mount's feed read it. The
     * guard holds this mount's paths, so this mount goes on (the other asks for its own); only a path it was not fed
     * is refused. (The check was the whole plan's equality, which refused this mount: FENCE_GUARD_UNFED under load.)
     */
    @Test
    void feedNowForOneMountAnswersForItsPathsWhileAnotherMountChangesThePlan() throws Exception {
        String mine = Files.createDirectories(state.resolve("per-alloc/a3/default/v3")).toString();
        String other = Files.createDirectories(state.resolve("per-alloc/a4/default/v4")).toString();
        List<String> plan = new ArrayList<>(List.of(mine));
        FenceGuard guard = FenceGuard.startOrTakeOver(state, state, () -> {
            List<String> read = List.copyOf(plan);
            if (!plan.contains(other)) {
                plan.add(other); // the other thread saves its usage right after this read
            }
            return read;
        }, now::get);
        LeaseGate.Deadline lease = new LeaseGate.Deadline(5, now.get() + 60_000_000_000L);
        assertTrue(guard.feedNow(Optional.of(lease), List.of(mine)), "fed with this mount's path");
        await().atMost(AWAIT).until(() -> log().contains("armed for epoch 5 with 1 path(s)"));
        assertTrue(guard.feedNow(Optional.of(lease), List.of(mine, other)), "the next feed has the other one's too");
        assertFalse(guard.feedNow(Optional.empty(), List.of(mine)), "no valid lease: not fed");
        assertFalse(guard.feedNow(Optional.of(new LeaseGate.Deadline(6, lease.fenceAtNanos())),
                List.of(state.resolve("per-alloc/a5/default/v5").toString())), "a path not in the plan is not held");
    }

    @Test
    void aGuardKilledWithMinusNineIsStartedAgainAtTheNextFeed() throws Exception {
        FenceGuard guard = guard();
        long first = guard.pid();
        ProcessHandle.of(first).orElseThrow().destroyForcibly();
        await().atMost(AWAIT).until(() -> ProcessHandle.of(first).isEmpty());

        guard.tick(Optional.of(new LeaseGate.Deadline(3, now.get() + 60_000_000_000L)));
        assertNotEquals(first, guard.pid());
        assertEquals(guard.pid(), FenceGuard.liveGuard(state).orElseThrow());
        await().atMost(AWAIT).until(() -> log().contains("armed for epoch 3 with 0 path(s)"));
        assertTrue(log().contains("csi-fence-guard[" + guard.pid() + "] armed"), log());
    }

    /**
     * A guard that is gone and cannot be started again (here: its FIFO path taken by a directory, which the script
     * refuses): the supervisor is down with the guard's own reason, tries again only after its backoff (1 s, then 2 s,
     * on the supervisor's clock), says a fenced mount cannot be fed, and runs a new guard, fed, once the path is repaired.
     */
    @Test
    void aGuardThatCannotBeStartedAgainIsDownWithItsReasonRetriedAfterABackoffAndFedOnceRepaired() throws Exception {
        FenceGuard guard = guard();
        long first = guard.pid();
        assertEquals(null, guard.down());
        ProcessHandle.of(first).orElseThrow().destroyForcibly();
        await().atMost(AWAIT).until(() -> ProcessHandle.of(first).isEmpty());
        Path fifo = state.resolve(FenceGuard.FIFO);
        Files.delete(fifo);
        Files.createDirectory(fifo);
        Optional<LeaseGate.Deadline> lease = Optional.of(new LeaseGate.Deadline(5, now.get() + 60_000_000_000L));

        guard.tick(lease);
        String down = guard.down();
        assertTrue(down != null && down.contains(fifo + " exists and is not a FIFO") && down.contains("next try in 1 s"),
                "down with the guard's reason: " + down);
        assertEquals(1, guard.startFailures());
        guard.tick(lease);
        assertEquals(1, guard.startFailures(), "no new try before the backoff: " + guard.down());
        assertFalse(guard.feedNow(lease, List.of()), "no guard: a fenced mount cannot be fed");
        now.addAndGet(1_000_000_000L);
        guard.tick(lease);
        assertEquals(2, guard.startFailures(), "tried again after 1 s: " + guard.down());
        assertTrue(guard.down().contains("next try in 2 s"), guard.down());

        Files.delete(fifo); // repaired
        now.addAndGet(1_000_000_000L);
        guard.tick(lease);
        assertEquals(2, guard.startFailures(), "the backoff is 2 s now");
        now.addAndGet(1_000_000_000L);
        guard.tick(lease);
        assertEquals(null, guard.down(), "running again");
        assertNotEquals(first, guard.pid());
        assertEquals(guard.pid(), FenceGuard.liveGuard(state).orElseThrow());
        assertTrue(guard.feedNow(lease, List.of()));
        await().atMost(AWAIT).until(() -> log().contains("csi-fence-guard[" + guard.pid() + "] armed for epoch 5"));
    }

    @Test
    void aTickThatFindsTheGuardsMarkerHandsItToTheWorker() throws Exception {
        FenceGuard guard = guard();
        AtomicLong handled = new AtomicLong();
        guard.onMarker(handled::incrementAndGet);
        guard.tick(Optional.empty());
        assertEquals(0, handled.get(), "no marker, nothing to handle");
        Files.writeString(state.resolve(FenceGuard.MARKER), "epoch 2\n");
        guard.tick(Optional.empty());
        assertEquals(1, handled.get(), "a tick without a valid lease hands it over too");
    }
}
