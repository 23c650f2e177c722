package io.csiorchestrator.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/** Runs named steps in order, printing each with its timing; remembers the first failure. */
public final class Steps {

    /** A step's body. */
    public interface Body {
        String run() throws Exception;
    }

    public record Result(String name, boolean ok, long millis, String detail) {
    }

    private final PrintStream out;
    private final int total;
    private final List<Result> results = new ArrayList<>();
    private final long begin = System.nanoTime();
    private int next = 1;
    private volatile long stepStart = System.nanoTime();

    public Steps(PrintStream out, int total) {
        this.out = out;
        this.total = total;
    }

    /** Runs the step; true when it succeeded. The body's returned text is shown after the timing. */
    public boolean run(String name, Body body) {
        int number = next++;
        String label = String.format("[%2d/%d] %s", number, total, name);
        out.print(label + " ... ");
        out.flush();
        long start = System.nanoTime();
        stepStart = start;
        try {
            String detail = body.run();
            long ms = (System.nanoTime() - start) / 1_000_000;
            results.add(new Result(name, true, ms, detail));
            out.println("ok " + seconds(ms) + (detail == null || detail.isBlank() ? "" : "  " + detail));
            return true;
        } catch (Exception | AssertionError e) {
            long ms = (System.nanoTime() - start) / 1_000_000;
            String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            results.add(new Result(name, false, ms, message));
            out.println("FAILED " + seconds(ms));
            out.println("         " + message);
            return false;
        }
    }

    /** Numbers the next step {@code number} (the last step runs even after a failure). */
    public void skipTo(int number) {
        next = Math.max(next, number);
    }

    /** Progress inside a long step, on the step's line, with the time since the step began. */
    public void progress(String text) {
        out.print(text + " " + seconds((System.nanoTime() - stepStart) / 1_000_000) + " ... ");
        out.flush();
    }

    public List<Result> results() {
        return List.copyOf(results);
    }

    public boolean allOk() {
        return results.stream().allMatch(Result::ok);
    }

    public Result firstFailure() {
        return results.stream().filter(r -> !r.ok()).findFirst().orElse(null);
    }

    public long elapsedMillis() {
        return (System.nanoTime() - begin) / 1_000_000;
    }

    static String seconds(long ms) {
        return String.format("(%.1f s)", ms / 1000.0);
    }
}
