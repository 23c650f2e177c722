package io.csiorchestrator.cli;

import java.util.List;

/**
 * Sends a {@link LoadSchedule} plan open loop: each operation goes out at its due time whatever happened to the
 * ones before (a sender must not wait for an answer), and the latency of its answer is counted from that due
 * time, not from when it was sent, so a late send (a stalled client) shows as latency instead of hiding it
 * (no coordinated omission). One thread sends; answers come on others.
 */
final class OpenLoop {

    /** Monotonic time in nanoseconds, and a wait until a given time (the real one sleeps, a test's advances). */
    interface Clock {
        long nanoTime();

        void sleepUntil(long nanoTime) throws InterruptedException;
    }

    /**
     * Sends one operation; {@code dueNanoTime} is the clock's time it was due at. Returns its answer, which
     * completes whenever the system answers: the loop never waits for it.
     */
    interface Sender {
        java.util.concurrent.CompletionStage<?> send(LoadSchedule.Op op, long dueNanoTime);
    }

    static final Clock SYSTEM = new Clock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void sleepUntil(long nanoTime) throws InterruptedException {
            long left;
            while ((left = nanoTime - System.nanoTime()) > 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(left);
                if (Thread.interrupted()) {
                    throw new InterruptedException();
                }
            }
        }
    };

    private OpenLoop() {
    }

    /**
     * Sends every operation of {@code plan} at {@code start + op.dueNanos()}; returns the largest lateness of a
     * send (ns: how far behind its due time the sending thread got), which the report prints.
     */
    static long run(List<LoadSchedule.Op> plan, long start, Clock clock, Sender sender) throws InterruptedException {
        long worstLate = 0;
        for (LoadSchedule.Op op : plan) {
            long due = start + op.dueNanos();
            clock.sleepUntil(due);
            worstLate = Math.max(worstLate, clock.nanoTime() - due);
            sender.send(op, due);
        }
        return worstLate;
    }
}
