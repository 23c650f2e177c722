package io.csiorchestrator.worker.lease;

import java.util.ArrayList;
import java.util.List;

/**
 * The fence guard's marker (issue 19): the file {@value #FILE_NAME} in the worker's root that the guard process writes
 * (atomically) after it fenced on its own because the worker stopped feeding it. Text lines: {@code epoch <E>}
 * first, then one line per path, {@code unmounted <path>}, {@code lazy <path>} or {@code failed <path>}, and (last,
 * optional) {@code at <seconds since the epoch, with a fraction>}: when the guard's unmounts were done (bash's
 * EPOCHREALTIME; the FENCED report carries it, not the time the worker took the marker in after its freeze). The worker
 * reads it at start and whenever its lease thread finds the lease no longer valid (after a freeze), records it as the
 * fence of epoch E, drops those publications from its records, reports FENCED by "guard" and removes the file. Pure
 * parser, no I/O.
 */
public record FenceMarker(long epoch, List<String> unmounted, List<String> lazy, List<String> failed,
                          java.time.Instant fencedAt) {

    /** The marker's file name in the worker's root (the guard's state dir). */
    public static final String FILE_NAME = "fence-guard.marker";

    public FenceMarker {
        unmounted = List.copyOf(unmounted);
        lazy = List.copyOf(lazy);
        failed = List.copyOf(failed);
    }

    /**
     * Parses the marker's text; blank lines are skipped.
     *
     * @throws IllegalArgumentException naming the line when the text is not a marker (no {@code epoch} line first, an
     *                                  epoch that is not a positive number, an unknown word, a line without path)
     */
    public static FenceMarker parse(String text) {
        List<String> unmounted = new ArrayList<>();
        List<String> lazy = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        long epoch = 0;
        java.time.Instant at = null;
        int number = 0;
        for (String raw : text.split("\n", -1)) {
            number++;
            String line = raw.strip();
            if (line.isEmpty()) {
                continue;
            }
            int space = line.indexOf(' ');
            String word = space < 0 ? line : line.substring(0, space);
            String rest = space < 0 ? "" : line.substring(space + 1).strip();
            if (epoch == 0) {
                if (!word.equals("epoch")) {
                    throw new IllegalArgumentException("fence marker line " + number + ": expected 'epoch <E>' first, got '"
                            + line + "'");
                }
                try {
                    epoch = Long.parseLong(rest);
                } catch (NumberFormatException e) {
                    epoch = 0;
                }
                if (epoch < 1) {
                    throw new IllegalArgumentException("fence marker line " + number + ": epoch '" + rest
                            + "' is not a positive number");
                }
                continue;
            }
            if (rest.isEmpty()) {
                throw new IllegalArgumentException("fence marker line " + number + ": '" + word + "' without a path");
            }
            switch (word) {
                case "unmounted" -> unmounted.add(rest);
                case "lazy" -> lazy.add(rest);
                case "failed" -> failed.add(rest);
                case "at" -> at = instant(rest, number);
                default -> throw new IllegalArgumentException("fence marker line " + number + ": unknown '" + word
                        + "' (unmounted, lazy, failed or at)");
            }
        }
        if (epoch == 0) {
            throw new IllegalArgumentException("fence marker: empty (no 'epoch <E>' line)");
        }
        return new FenceMarker(epoch, unmounted, lazy, failed, at);
    }

    /** {@code 1764033147.123456} (or with a comma, as a locale may print EPOCHREALTIME) as an Instant. */
    private static java.time.Instant instant(String text, int number) {
        try {
            java.math.BigDecimal seconds = new java.math.BigDecimal(text.replace(',', '.'));
            if (seconds.signum() <= 0) {
                throw new NumberFormatException("not positive");
            }
            return java.time.Instant.ofEpochSecond(seconds.longValue(),
                    seconds.remainder(java.math.BigDecimal.ONE).movePointRight(9).longValue());
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("fence marker line " + number + ": 'at " + text
                    + "' is not a time (seconds since the epoch)");
        }
    }
}
