package io.csiorchestrator.hostpath.faults;

import io.csiorchestrator.hostpath.state.StateStore;
import io.grpc.Status;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Logger;

/**
 * Applies the {@link FaultRules} of a faults file, re-read on every call, so a test changes the
 * plugin's behaviour by rewriting the file. A consumed failure is written back (count decreased,
 * or the line removed), so the file always shows the faults still to come.
 *
 * <p>Write the file with {@link #writeRules(Path, String...)} (atomically) between calls; the
 * plugin rewrites it while it consumes a rule.
 */
public final class FaultInjector {

    private static final Logger LOG = Logger.getLogger(FaultInjector.class.getName());

    private final Path file;
    private final Set<String> reportedProblems = new HashSet<>();

    public FaultInjector(Path file) {
        this.file = file;
    }

    public Path file() {
        return file;
    }

    /** Whether the faults file exists (a stat): without it every call is answered as asked, without delay. */
    public boolean present() {
        return Files.exists(file);
    }

    /**
     * The failure to answer this call of {@code method} (with {@code request}) with, consuming one
     * count of its rule.
     */
    public synchronized Optional<Status> takeFailure(String method, Object request) {
        FaultRules rules = read();
        Optional<FaultRules.Failure> failure = rules.failureFor(method);
        failure.ifPresent(rule -> {
            try {
                StateStore.writeAtomically(file, rules.consume(rule).getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot update the faults file " + file, e);
            }
        });
        return failure.map(rule -> rule.status(request));
    }

    public Duration latencyFor(String method) {
        return read().latencyFor(method);
    }

    public boolean probeNotReady() {
        return read().probeNotReady();
    }

    /** Replaces the rules in a faults file, atomically. */
    public static void writeRules(Path file, String... lines) {
        try {
            StateStore.writeAtomically(file, (String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the faults file " + file, e);
        }
    }

    /** Adds rules to a faults file, atomically. */
    public static synchronized void appendRules(Path file, Iterable<String> lines) {
        try {
            String existing = Files.exists(file) ? Files.readString(file) : "";
            StringBuilder text = new StringBuilder(existing);
            if (!existing.isEmpty() && !existing.endsWith("\n")) {
                text.append('\n');
            }
            lines.forEach(line -> text.append(line).append('\n'));
            StateStore.writeAtomically(file, text.toString().getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the faults file " + file, e);
        }
    }

    private synchronized FaultRules read() {
        // asked first, because most plugins run without the file: a missing file costs a system call, not an exception
        if (!present()) {
            return FaultRules.NONE;
        }
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            return FaultRules.NONE;
        } catch (IOException e) {
            LOG.warning("cannot read the faults file " + file + ": " + e.getMessage());
            return FaultRules.NONE;
        }
        FaultRules rules = FaultRules.parse(text);
        for (String problem : rules.problems()) {
            if (reportedProblems.add(problem)) {
                LOG.warning("faults file " + file + ", " + problem);
            }
        }
        return rules;
    }
}
