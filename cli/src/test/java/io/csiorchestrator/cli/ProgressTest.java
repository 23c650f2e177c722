package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The progress lines of a long chaos step (issue 35 item 4), on a clock the test sets. */
class ProgressTest {

    @Test
    void aLineSaysTheStepTheTimeElapsedAndWhatItWaitsFor() {
        assertEquals("csi chaos:   postgres-outage: 40 s, waiting for PostgreSQL kept away (130 s, then restarted)",
                Progress.line("postgres-outage", 40, "PostgreSQL kept away (130 s, then restarted)"));
    }

    /** Lines come on the timer with the clock's elapsed time and the newest "waiting for". */
    @Test
    void linesFollowTheClockAndTheNewestWait() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        AtomicLong nanos = new AtomicLong(0);
        List<String> lines;
        // lines come every 20 ms; the 30 s deadlines below only end a broken run, nothing is timed
        try (Progress progress = Progress.start(out, "partition-node-1", "node-2's claim", Duration.ofMillis(20),
                nanos::get)) {
            nanos.set(Duration.ofSeconds(10).toNanos());
            Wait.until("a line at 10 s", Duration.ofSeconds(30), null, () -> text(bytes).contains(": 10 s, waiting for node-2's claim")
                    ? java.util.Optional.of(true) : java.util.Optional.empty());
            progress.waitingFor("the heal");
            nanos.set(Duration.ofSeconds(20).toNanos());
            Wait.until("a line at 20 s", Duration.ofSeconds(30), null, () -> text(bytes).contains(": 20 s, waiting for the heal")
                    ? java.util.Optional.of(true) : java.util.Optional.empty());
        }
        lines = text(bytes).lines().toList();
        assertTrue(lines.stream().allMatch(l -> l.startsWith("csi chaos:   partition-node-1: ")), lines.toString());
    }

    private static String text(ByteArrayOutputStream bytes) {
        synchronized (bytes) {
            return bytes.toString(StandardCharsets.UTF_8);
        }
    }
}
