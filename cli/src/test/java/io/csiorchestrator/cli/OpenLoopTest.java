package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The open-loop schedule ({@link LoadSchedule}) and its sender ({@link OpenLoop}) on a fake clock: no sleeping. */
class OpenLoopTest {

    private static final long MS = 1_000_000;

    /** A clock that only moves when the loop waits for a due time or a fake send takes time. */
    static final class FakeClock implements OpenLoop.Clock {
        long now;

        @Override
        public long nanoTime() {
            return now;
        }

        @Override
        public void sleepUntil(long nanoTime) {
            now = Math.max(now, nanoTime);
        }
    }

    /** An answer that never comes: waiting on it is the closed loop this bench must not be. */
    static final class NeverAnswered extends CompletableFuture<Object> {
        @Override
        public Object join() {
            throw new AssertionError("the sender waited for an answer");
        }

        @Override
        public Object get() {
            throw new AssertionError("the sender waited for an answer");
        }

        @Override
        public Object get(long timeout, java.util.concurrent.TimeUnit unit) {
            throw new AssertionError("the sender waited for an answer");
        }
    }

    record Sent(LoadSchedule.Op op, long due, long at) {
    }

    /**
     * 10 ops/s over 4 volumes for 2 s: operations 100 ms apart, dealt round robin (operation k on volume k % 4),
     * each volume claim, release, claim...; every claim's release is in the plan, 4 x 100 ms after it, also the
     * releases of the last round of claims, due after the 2 s.
     */
    @Test
    void planDealsOperationsRoundRobinEvenlySpacedAndReleasesEveryClaim() {
        List<LoadSchedule.Op> plan = LoadSchedule.plan(10, 4, 0, 2_000 * MS);
        assertEquals(24, plan.size());
        for (int k = 0; k < plan.size(); k++) {
            LoadSchedule.Op op = plan.get(k);
            assertEquals(k * 100 * MS, op.dueNanos(), "due time of operation " + k);
            assertEquals(k % 4, op.volume(), "volume of operation " + k);
            assertEquals((k / 4) % 2 == 0 ? LoadSchedule.Kind.CLAIM : LoadSchedule.Kind.RELEASE, op.kind(),
                    "kind of operation " + k);
            assertEquals(k / 8, op.cycle(), "cycle of operation " + k);
        }
        for (LoadSchedule.Op claim : plan.stream().filter(o -> o.kind() == LoadSchedule.Kind.CLAIM).toList()) {
            assertTrue(plan.contains(new LoadSchedule.Op(claim.dueNanos() + 400 * MS, LoadSchedule.Kind.RELEASE,
                    claim.volume(), claim.cycle())), "no release of " + claim);
        }
    }

    /**
     * Without a hold, a run uses at most rate x duration / 2 volumes, so every claim is released within the
     * duration: 100 volumes at 2/s for 20 s use 20, each claim released 10 s after it, the last due before 20 s.
     */
    @Test
    void withoutHoldOnlyAsManyVolumesAsReleaseWithinTheDurationTakePart() {
        List<LoadSchedule.Op> plan = LoadSchedule.plan(2, 100, 0, 20_000 * MS);
        assertEquals(20, LoadSchedule.volumesUsed(2, 100, 0, 20_000 * MS));
        assertEquals(40, plan.size());
        assertEquals(19, plan.stream().mapToInt(LoadSchedule.Op::volume).max().orElseThrow());
        assertTrue(plan.stream().allMatch(o -> o.dueNanos() < 20_000 * MS), plan.toString());
        assertEquals(100, LoadSchedule.volumesUsed(2, 100, 1_000 * MS, 20_000 * MS));
    }

    /** With --hold the release is due exactly that long after its claim; a hold of a whole cycle is refused. */
    @Test
    void holdPutsTheReleaseThatLongAfterItsClaimAndMustBeShorterThanACycle() {
        List<LoadSchedule.Op> plan = LoadSchedule.plan(10, 4, 150 * MS, 800 * MS);
        List<LoadSchedule.Op> releases = plan.stream().filter(o -> o.kind() == LoadSchedule.Kind.RELEASE).toList();
        assertEquals(List.of(150 * MS, 250 * MS, 350 * MS, 450 * MS), releases.stream().map(LoadSchedule.Op::dueNanos)
                .toList());
        assertThrows(Args.UsageException.class, () -> LoadSchedule.plan(10, 4, 800 * MS, 800 * MS));
    }

    /**
     * Open loop: answers that never come do not hold back a single send. Every operation goes out at exactly its
     * due time on the fake clock, and the sender never waits on an answer (waiting on one fails the test).
     */
    @Test
    void unansweredRequestsDoNotDelayTheNextSend() throws Exception {
        List<LoadSchedule.Op> plan = LoadSchedule.plan(50, 10, 0, 1_000 * MS);
        FakeClock clock = new FakeClock();
        clock.now = 5_000 * MS;
        List<Sent> sent = new ArrayList<>();
        long worstLate = OpenLoop.run(plan, clock.now, clock, (op, due) -> {
            sent.add(new Sent(op, due, clock.now));
            return new NeverAnswered();
        });
        assertEquals(plan.size(), sent.size());
        for (Sent s : sent) {
            assertEquals(5_000 * MS + s.op().dueNanos(), s.at(), "send time of " + s.op());
        }
        assertEquals(0, worstLate);
    }

    /**
     * A send that stalls the sending thread (250 ms on the fake clock, two and a half intervals) makes the
     * operations due meanwhile go out late, at once, and the rest on their own due times: the schedule does not
     * shift. Each send carries its due time, not the time it went out, so the lateness counts as latency (no
     * coordinated omission).
     */
    @Test
    void aStalledSendMakesTheNextSendsLateButNeverShiftsTheScheduleAndLatencyStartsAtTheDueTime() throws Exception {
        List<LoadSchedule.Op> plan = LoadSchedule.plan(10, 5, 0, 1_000 * MS);
        FakeClock clock = new FakeClock();
        List<Sent> sent = new ArrayList<>();
        long worstLate = OpenLoop.run(plan, 0, clock, (op, due) -> {
            sent.add(new Sent(op, due, clock.now));
            if (sent.size() == 1) {
                clock.now += 250 * MS; // a slow call: the thread is back 250 ms later
            }
            return new NeverAnswered();
        });
        assertEquals(List.of(0L, 250L, 250L, 300L, 400L, 500L), sent.stream().limit(6).map(s -> s.at() / MS).toList());
        for (Sent s : sent) {
            assertEquals(s.op().dueNanos(), s.due(), "the due time handed to the sender of " + s.op());
        }
        assertEquals(150 * MS, worstLate);
    }
}
