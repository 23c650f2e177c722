package io.csiorchestrator.worker.state;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The mount table of this process, from {@code /proc/self/mountinfo}. A path is a mount point
 * when an entry's mount point equals it exactly: comparing device numbers of a directory and its
 * parent misses bind mounts of the same file system, which is what CSI plugins usually make.
 */
public final class MountInfo {

    public static final Path SELF = Path.of("/proc/self/mountinfo");

    /** One line of mountinfo (proc(5)). */
    public record Entry(int mountId, int parentId, String majorMinor, String root, String mountPoint,
                        String mountOptions, String fsType, String source, String superOptions) {

        public boolean readOnly() {
            for (String option : mountOptions.split(",")) {
                if (option.equals("ro")) {
                    return true;
                }
            }
            return false;
        }
    }

    private final List<Entry> entries;

    private MountInfo(List<Entry> entries) {
        this.entries = List.copyOf(entries);
    }

    /** Reads the current mount table of this process. */
    public static MountInfo readSelf() {
        return read(SELF);
    }

    public static MountInfo read(Path file) {
        try {
            return parse(Files.readString(file, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    public static MountInfo parse(String text) {
        List<Entry> entries = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            entries.add(parseLine(line));
        }
        return new MountInfo(entries);
    }

    static Entry parseLine(String line) {
        String[] f = line.trim().split(" ");
        int sep = -1;
        for (int i = 6; i < f.length; i++) {
            if (f[i].equals("-")) {
                sep = i;
                break;
            }
        }
        if (f.length < 7 || sep < 0 || sep + 2 >= f.length) {
            throw new IllegalArgumentException("malformed mountinfo line: " + line);
        }
        try {
            return new Entry(Integer.parseInt(f[0]), Integer.parseInt(f[1]), f[2], unescape(f[3]), unescape(f[4]), f[5],
                    f[sep + 1], unescape(f[sep + 2]), sep + 3 < f.length ? f[sep + 3] : "");
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("malformed mountinfo line: " + line, e);
        }
    }

    /** Decodes the kernel's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
    static String unescape(String field) {
        if (field.indexOf('\\') < 0) {
            return field;
        }
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && isOctal(field, i + 1)) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    private static boolean isOctal(String s, int from) {
        if (from + 3 > s.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '7') {
                return false;
            }
        }
        return true;
    }

    public List<Entry> entries() {
        return entries;
    }

    /** Whether something is mounted exactly at {@code path}. */
    public boolean isMountPoint(Path path) {
        return topmost(path).isPresent();
    }

    /** The last (topmost) mount at exactly {@code path}. */
    public Optional<Entry> topmost(Path path) {
        String wanted = path.toAbsolutePath().normalize().toString();
        Entry found = null;
        for (Entry e : entries) {
            if (e.mountPoint().equals(wanted)) {
                found = e;
            }
        }
        return Optional.ofNullable(found);
    }

    /** Every mount point at or under {@code dir}, deepest first (the order to unmount them). */
    public List<String> mountPointsUnder(Path dir) {
        String base = dir.toAbsolutePath().normalize().toString();
        List<String> found = new ArrayList<>();
        for (Entry e : entries) {
            if (e.mountPoint().equals(base) || e.mountPoint().startsWith(base + "/")) {
                found.add(e.mountPoint());
            }
        }
        found.sort((a, b) -> Integer.compare(b.length(), a.length()));
        return found;
    }
}
