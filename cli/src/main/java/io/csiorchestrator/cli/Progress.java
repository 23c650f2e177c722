package io.csiorchestrator.cli;

import java.io.PrintStream;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * A line every {@link #PERIOD} while a long step of {@code csi chaos} runs (issue 35 item 4: the 130 s PostgreSQL
 * outage, a fencing fault's lease wait): the step, the time elapsed and what it waits for now. A step shorter than
 * the period prints nothing.
 */
final class Progress implements AutoCloseable {

    /** Often enough that a waiting operator sees the run is alive; rare enough not to bury the faults' own lines. */
    static final Duration PERIOD = Duration.ofSeconds(10);

    private final PrintStream out;
    private final String step;
    private final LongSupplier nanos;
    private final long started;
    private final ScheduledExecutorService timer;
    private volatile String waitingFor;

    private Progress(PrintStream out, String step, String waitingFor, Duration period, LongSupplier nanos) {
        this.out = out;
        this.step = step;
        this.waitingFor = waitingFor;
        this.nanos = nanos;
        this.started = nanos.getAsLong();
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "csi-progress");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(this::print, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Starts printing {@code step}'s progress every {@link #PERIOD}, saying it waits for {@code waitingFor}. */
    static Progress start(PrintStream out, String step, String waitingFor) {
        return new Progress(out, step, waitingFor, PERIOD, System::nanoTime);
    }

    /** The same every {@code period} on the clock {@code nanos} (tests). */
    static Progress start(PrintStream out, String step, String waitingFor, Duration period, LongSupplier nanos) {
        return new Progress(out, step, waitingFor, period, nanos);
    }

    /** What the step waits for from now on (the next line says it). */
    void waitingFor(String what) {
        waitingFor = what;
    }

    /** The line printed after {@code elapsedSeconds}. */
    static String line(String step, long elapsedSeconds, String waitingFor) {
        return String.format("csi chaos:   %s: %d s, waiting for %s", step, elapsedSeconds, waitingFor);
    }

    private void print() {
        out.println(line(step, TimeUnit.NANOSECONDS.toSeconds(nanos.getAsLong() - started), waitingFor));
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
