package io.csiorchestrator.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * CPU time and resident memory of a local process from {@code /proc}: {@code /proc/<pid>/stat} fields 14-17
 * (utime, stime, cutime, cstime, in clock ticks) and {@code VmRSS} of {@code /proc/<pid>/status}.
 *
 * <p>A process's CPU here is its own time plus the time of its children it has reaped (cutime, cstime: the
 * hostpath plugin's {@code mount} forks, PostgreSQL's exited backends) plus, recursively, that of its live
 * children (PostgreSQL's backends, which live as long as the services' pools). A child that exits between two
 * samples moves from the live sum into its parent's cutime/cstime, so the difference of two samples is the CPU
 * the tree spent between them.
 */
final class ProcStats {

    /** Clock ticks per second of /proc/<pid>/stat ({@code getconf CLK_TCK}; 100 on every Linux we run on). */
    static final long TICKS_PER_SECOND = 100;

    private ProcStats() {
    }

    /** utime, stime, cutime, cstime of one {@code /proc/<pid>/stat} line. */
    record Times(long utime, long stime, long cutime, long cstime) {
        long own() {
            return utime + stime;
        }

        long withReapedChildren() {
            return utime + stime + cutime + cstime;
        }
    }

    /**
     * Parses a {@code /proc/<pid>/stat} line. The command name (field 2) is in parentheses and may hold spaces
     * and parentheses itself, so the fields are counted from its last closing parenthesis.
     */
    static Times parseStat(String stat) {
        int close = stat.lastIndexOf(')');
        if (close < 0) {
            throw new IllegalArgumentException("not a /proc/<pid>/stat line: " + stat);
        }
        // After ") ": field 3 (state) is index 0, so field n is index n - 3.
        String[] f = stat.substring(close + 1).trim().split("\\s+");
        if (f.length < 15) {
            throw new IllegalArgumentException("too few fields in /proc/<pid>/stat: " + stat);
        }
        return new Times(Long.parseLong(f[14 - 3]), Long.parseLong(f[15 - 3]), Long.parseLong(f[16 - 3]),
                Long.parseLong(f[17 - 3]));
    }

    /** {@code VmRSS} of a {@code /proc/<pid>/status} text, in kB; empty if absent (a zombie, a kernel thread). */
    static OptionalLong parseRssKb(String status) {
        for (String line : status.split("\n")) {
            if (line.startsWith("VmRSS:")) {
                String[] parts = line.substring("VmRSS:".length()).trim().split("\\s+");
                return OptionalLong.of(Long.parseLong(parts[0]));
            }
        }
        return OptionalLong.empty();
    }

    /** CPU milliseconds per operation of {@code ticks} clock ticks spent over {@code operations}; -1 if none. */
    static double cpuMsPerOperation(long ticks, long operations) {
        if (operations <= 0) {
            return -1;
        }
        return ticks * 1000.0 / TICKS_PER_SECOND / operations;
    }

    /** One sample of a process tree: CPU ticks (see the class comment) and the RSS summed over the tree (kB). */
    record Sample(long ticks, long rssKb, int processes) {
    }

    /** Samples {@code pid} and its live descendants; empty if the process is gone. */
    static Optional<Sample> sampleTree(long pid) {
        Optional<Times> own = read(pid);
        if (own.isEmpty()) {
            return Optional.empty();
        }
        long ticks = own.get().withReapedChildren();
        long rss = rss(pid);
        int count = 1;
        List<ProcessHandle> children = new ArrayList<>();
        ProcessHandle.of(pid).ifPresent(h -> h.children().forEach(children::add));
        for (ProcessHandle child : children) {
            Optional<Sample> sample = sampleTree(child.pid());
            if (sample.isPresent()) {
                ticks += sample.get().ticks();
                rss += sample.get().rssKb();
                count += sample.get().processes();
            }
        }
        return Optional.of(new Sample(ticks, rss, count));
    }

    /** Samples {@code pid} alone: its own utime + stime (not its children's) and its RSS. */
    static Optional<Sample> sampleOwn(long pid) {
        return read(pid).map(t -> new Sample(t.own(), rss(pid), 1));
    }

    private static Optional<Times> read(long pid) {
        try {
            return Optional.of(parseStat(Files.readString(Path.of("/proc", String.valueOf(pid), "stat"))));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    private static long rss(long pid) {
        try {
            return parseRssKb(Files.readString(Path.of("/proc", String.valueOf(pid), "status"))).orElse(0);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }
}
