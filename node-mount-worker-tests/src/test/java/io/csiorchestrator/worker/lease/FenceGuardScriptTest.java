package io.csiorchestrator.worker.lease;

import static io.csiorchestrator.worker.lease.FenceGuardFixture.mounted;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The guard script ({@code csi-fence-guard}, the module's resource) alone, as a bash process, with real bind mounts
 * under a temporary worker root, fed by writing its protocol into its FIFO (by this test, or by a separate feeding
 * process that is killed with -9). No timing is asserted: feeding keeps the mounts past several deadlines, and after
 * the feeding stops the test waits (bounded) for the marker.
 */
class FenceGuardScriptTest {

    private static final Duration AWAIT = Duration.ofSeconds(20);
    /** Each feed's deadline: generous against a loaded machine, feeds come every {@link #FEED_EVERY_MS}. */
    private static final long DEADLINE_MS = 1_500;
    private static final long FEED_EVERY_MS = 250;
    /** Feeds that span well over two deadlines. */
    private static final int FEEDS = 16;

    private FenceGuardFixture files;
    private Path dir;
    private Path state;
    private Path root;
    private Process guard;
    private final List<Process> feeders = new ArrayList<>();
    private ScheduledExecutorService feeding;

    @BeforeEach
    void setUp() throws Exception {
        files = FenceGuardFixture.create("csi-fence-guard");
        dir = files.dir();
        state = files.state();
        root = state; // as in the worker: the state dir is the worker's root
        Path script = FenceGuard.writeScript(state);
        guard = new ProcessBuilder("bash", script.toString(), state.toString(), root.toString())
                .redirectError(ProcessBuilder.Redirect.appendTo(state.resolve(FenceGuard.LOG_FILE).toFile()))
                .start();
        assertEquals("ready " + guard.pid(), FenceGuard.readyLine(guard),
                "the guard says it is ready (it reads its FIFO), with its pid; log: " + files.log());
        assertEquals(Long.toString(guard.pid()), Files.readString(state.resolve(FenceGuard.PID_FILE)).trim());
        assertEquals(guard.pid(), FenceGuard.liveGuard(state).orElseThrow(), "found from its pid file and cmdline");
    }

    @AfterEach
    void tearDown() throws Exception {
        if (feeding != null) {
            feeding.shutdownNow();
        }
        for (Process p : feeders) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
        if (guard != null) {
            guard.destroyForcibly();
            guard.waitFor(10, TimeUnit.SECONDS);
        }
        if (files != null) {
            files.close();
        }
    }

    @Test
    void aFedGuardKeepsTheMountsAndAStarvedOneUnmountsThemBusyOneLazilyAndWritesTheMarker() throws Exception {
        Path idle = files.bindMount(root.resolve("per-alloc/a1/default/v1"));
        Path busy = files.bindMount(root.resolve("per-alloc/a2/default/v2"));
        try (FileChannel open = FileChannel.open(busy.resolve("data"), StandardOpenOption.READ)) {
            feedRepeatedly(1, idle, busy);
            assertTrue(mounted(idle) && mounted(busy), "fed over " + FEEDS + " feeds (several deadlines): mounted");
            assertFalse(Files.exists(files.marker()), "no fence while fed");

            feeding.shutdownNow(); // starved from now on
            await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
            assertEquals(List.of("epoch 1", "unmounted " + idle, "lazy " + busy), files.markerLines(),
                    "the busy mount (a file open in it) is detached lazily");
            assertFalse(mounted(idle), "unmounted");
            assertFalse(mounted(busy), "lazily detached: gone from the mount table while the file is still open");
            assertTrue(open.isOpen());
        }
    }

    @Test
    void aSecondFeederTakesOverFromAKilledOneThenStarvedItFences() throws Exception {
        Path target = files.bindMount(root.resolve("per-alloc/a1/default/v1"));
        Process first = feederProcess(feed(2, DEADLINE_MS, target));
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 2 with 1 path(s)"));
        first.destroyForcibly(); // kill -9 of the feeding process, its FIFO end closed
        first.waitFor(10, TimeUnit.SECONDS);

        feedRepeatedly(2, target); // this test is the second feeder: past the first one's deadline
        assertTrue(mounted(target), "the second feeder's feeds keep it mounted past the first one's deadline");
        assertFalse(Files.exists(files.marker()));

        feeding.shutdownNow();
        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 2", "unmounted " + target), files.markerLines());
        assertFalse(mounted(target));
        assertTrue(guard.isAlive(), "the guard waits for the next feed");
    }

    @Test
    void aKilledFeederIsNoEndOfFileTheGuardStillFencesAtItsDeadline() throws Exception {
        Path target = files.bindMount(root.resolve("staging/default/v1"));
        Process feeder = feederProcess(feed(3, DEADLINE_MS, target));
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 3 with 1 path(s)"));
        feeder.destroyForcibly();
        feeder.waitFor(10, TimeUnit.SECONDS);

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 3", "unmounted " + target), files.markerLines());
        assertFalse(mounted(target));
    }

    @Test
    void pathsOutsideTheRootAreRefusedAndAnEmptyFeedDisarmsNothing() throws Exception {
        Path inside = files.bindMount(root.resolve("per-alloc/a1/default/v1"));
        Path outside = files.bindMount(dir.resolve("outside"));
        // a long deadline with paths, then a short one with the outside paths only: the last feed counts, its
        // refused paths are dropped, and a feed with no (accepted) path still fences at its deadline
        write(feed(4, 600_000, inside));
        write("feed 4 500\npath " + outside + "\npath " + root + "/../outside\npath " + root + "\npath relative\nend\n");

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 4"), files.markerLines(), "a fence of nothing");
        assertTrue(mounted(outside), "a path outside the root is never unmounted");
        assertTrue(mounted(inside), "the last feed no longer named it");
        String log = files.log();
        assertTrue(log.contains("refusing path " + outside + ": not under the worker root " + root), log);
        assertTrue(log.contains("refusing path " + root + "/../outside"), log);
        assertTrue(log.contains("refusing path " + root + ":"), log);
    }

    /** Where a full feed puts its first path (the n-th at n times this). */
    private static final long SPACING = 4_294_967_296L;

    /**
     * A delta (protocol 2) adds a path at a position between two others and a later one removes another: the guard
     * fences exactly the list the two give, in the order of their positions, at the last delta's deadline.
     */
    @Test
    void aDeltaAddsAndRemovesPathsAtItsEnd() throws Exception {
        Path a = files.bindMount(root.resolve("per-alloc/a1/default/v1"));
        Path b = files.bindMount(root.resolve("per-alloc/a2/default/v2"));
        Path staging = files.bindMount(root.resolve("staging/default/v2"));
        write("feed 5 600000 10\npath " + a + "\npath " + staging + "\nend\n");
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 5 with 2 path(s)"));
        // between the target (at SPACING) and the staging (at 2 * SPACING)
        write("delta 5 600000 10 11\nadd " + (SPACING + SPACING / 2) + " " + root.relativize(b) + "\nend\n");
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 5 with 3 path(s)"));
        write("delta 5 " + DEADLINE_MS + " 11 12\ndel " + SPACING + " " + root.relativize(a) + "\n");
        write("end\n"); // the same delta, its end in a second write

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 5", "unmounted " + b, "unmounted " + staging), files.markerLines(),
                "the list the deltas give, in their order");
        assertTrue(mounted(a), "removed by the second delta");
        assertFalse(mounted(b) || mounted(staging));
    }

    /**
     * A delta without its {@code end} is dropped whole: the next delta, on the same base as if the cut one had never
     * been written, is applied (were anything of the cut one applied, its add or its id, the guard would hold another
     * list and refuse it, and no fence would come before the first feed's 600 s).
     */
    @Test
    void aDeltaWithoutItsEndIsNeverApplied() throws Exception {
        Path a = files.bindMount(root.resolve("per-alloc/a1/default/v1"));
        Path b = files.bindMount(root.resolve("per-alloc/a2/default/v2"));
        write("feed 6 600000 20\npath " + a + "\nend\n");
        await().atMost(AWAIT).until(() -> files.log().contains("armed for epoch 6 with 1 path(s)"));
        write("delta 6 600000 20 21\nadd " + 2 * SPACING + " " + root.relativize(b) + "\n"); // cut short: no end
        write("delta 6 " + DEADLINE_MS + " 20 22\nend\n");

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 6", "unmounted " + a), files.markerLines());
        assertTrue(mounted(b), "the cut delta's path was never the guard's");
        assertFalse(Files.exists(state.resolve(FenceGuard.RESYNC)), "nothing refused: " + files.log());
    }

    /**
     * A delta the guard cannot apply (its base is not the list the guard holds, or its del names a path the guard
     * does not hold at that index) is refused whole, its deadline too, and the guard asks for a full feed: had the
     * first one (a 1 ms deadline) been applied, the guard would fence at once and ignore the second one (no second
     * resync); had anything of either been applied, the renewal on the full feed's id would be refused (no fence).
     */
    @Test
    void aDeltaOnAnotherListIsRefusedWholeAndTheGuardAsksForAFullFeed() throws Exception {
        Path a = files.bindMount(root.resolve("per-alloc/a1/default/v1"));
        Path b = files.bindMount(root.resolve("per-alloc/a2/default/v2"));
        Path resync = state.resolve(FenceGuard.RESYNC);
        write("feed 7 600000 30\npath " + a + "\nend\n");
        write("delta 7 1 29 31\nadd " + 2 * SPACING + " " + root.relativize(b) + "\nend\n"); // another base
        await().atMost(AWAIT).until(() -> Files.exists(resync));
        Files.delete(resync);
        // the right base, but not a path it holds (nothing is at position 1)
        write("delta 7 600000 30 31\ndel 1 " + root.relativize(b) + "\nend\n");
        await().atMost(AWAIT).until(() -> Files.exists(resync));
        assertFalse(Files.exists(files.marker()), "no fence: the refused deltas moved no deadline");
        write("delta 7 " + DEADLINE_MS + " 30 32\nend\n");

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 7", "unmounted " + a), files.markerLines(), "the full feed's list");
        assertTrue(mounted(b));
        String log = files.log();
        assertTrue(log.contains("refusing a delta of epoch 7 (base 29, id 31): it holds list 30"), log);
        assertTrue(log.contains("refusing a delta of epoch 7 (base 30, id 31): del of a path it does not hold at 1"),
                log);
    }

    /**
     * Nothing read from the FIFO is evaluated: command substitutions, array subscripts and arithmetic in every field
     * of every line form stay text (a malformed line is ignored, a path is a path), and the file they would create
     * never appears.
     */
    @Test
    void nothingReadFromTheFifoIsEvaluated() throws Exception {
        Path touched = dir.resolve("touched");
        String cmd = "$(touch " + touched + ")";
        String odd = "per-alloc/" + cmd + "/`touch " + touched + "`/x";
        write("feed [" + cmd + "]=1 600000\nend\n"
                + "feed 8 600000 a[" + cmd + "]\nend\n"
                + "feed 8 600000 40\npath " + root + "/" + odd + "\nend\n"
                + "delta 8 600000 40 " + cmd + "\nend\n"
                + "delta 8 600000 40 41\nadd x[" + cmd + "] a\nadd 9 " + odd + "y\ndel " + cmd + " a\nend\n"
                + "delta 8 600000 41 42\ndel 9[" + cmd + "] a\nend\n"
                + "delta 8 " + DEADLINE_MS + " 40 43\nend\n"); // on the only list it took

        await().atMost(AWAIT).until(() -> Files.exists(files.marker()));
        assertEquals(List.of("epoch 8", "unmounted " + root + "/" + odd), files.markerLines(),
                "the one path fed, as text; every malformed line ignored: " + files.log());
        assertFalse(Files.exists(touched), "nothing evaluated");
        assertTrue(files.log().contains("ignoring a malformed"), files.log());
    }

    private static String feed(long epoch, long ms, Path... paths) {
        StringBuilder feed = new StringBuilder("feed " + epoch + " " + ms + "\n");
        for (Path p : paths) {
            feed.append("path ").append(p).append('\n');
        }
        return feed.append("end\n").toString();
    }

    /** One write into the FIFO (the guard holds it open for reading, so this does not block). */
    private void write(String text) throws IOException {
        try (FileOutputStream out = new FileOutputStream(state.resolve(FenceGuard.FIFO).toFile())) {
            out.write(text.getBytes(StandardCharsets.UTF_8));
        }
    }

    /** Feeds {@code epoch} with the paths every {@link #FEED_EVERY_MS} and returns after {@link #FEEDS} feeds. */
    private void feedRepeatedly(long epoch, Path... paths) {
        AtomicInteger fed = new AtomicInteger();
        feeding = Executors.newSingleThreadScheduledExecutor();
        feeding.scheduleAtFixedRate(() -> {
            try {
                write(feed(epoch, DEADLINE_MS, paths));
                fed.incrementAndGet();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }, 0, FEED_EVERY_MS, TimeUnit.MILLISECONDS);
        await().atMost(AWAIT).until(() -> fed.get() >= FEEDS);
    }

    /** A separate process that writes {@code text} into the FIFO and then keeps its end open until killed. */
    private Process feederProcess(String text) throws IOException {
        Process p = new ProcessBuilder("bash", "-c", "exec 4>\"$1\"; printf '%s' \"$2\" >&4; exec sleep 600",
                "feeder", state.resolve(FenceGuard.FIFO).toString(), text).start();
        feeders.add(p);
        return p;
    }
}
