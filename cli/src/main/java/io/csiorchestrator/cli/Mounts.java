package io.csiorchestrator.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The mount table of this process' mount namespace ({@code /proc/self/mountinfo}). */
public final class Mounts {

    static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

    private Mounts() {
    }

    /** Mount points (field 5 of each line, octal escapes decoded), in table order. */
    public static List<String> parseMountPoints(List<String> mountinfoLines) {
        List<String> points = new ArrayList<>();
        for (String line : mountinfoLines) {
            String[] fields = line.split(" ");
            if (fields.length > 4) {
                points.add(unescape(fields[4]));
            }
        }
        return points;
    }

    /** Whether the mount at {@code point} is read-only (mount options, field 6, contain "ro"). */
    public static boolean readOnly(List<String> mountinfoLines, String point) {
        boolean ro = false;
        for (String line : mountinfoLines) {
            String[] fields = line.split(" ");
            if (fields.length > 5 && unescape(fields[4]).equals(point)) {
                ro = List.of(fields[5].split(",")).contains("ro"); // the last (topmost) mount wins
            }
        }
        return ro;
    }

    static String unescape(String field) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < field.length(); i++) {
            char ch = field.charAt(i);
            if (ch == '\\' && isOctal(field, i + 1)) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(ch);
            }
        }
        return out.toString();
    }

    private static boolean isOctal(String s, int from) {
        if (from + 3 > s.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '7') {
                return false;
            }
        }
        return true;
    }

    public static List<String> table() {
        try {
            return Files.readAllLines(MOUNTINFO);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + MOUNTINFO + ": " + e.getMessage(), e);
        }
    }

    /** Mount points at or below {@code dir}, deepest first. */
    public static List<String> under(Path dir) {
        return under(table(), dir);
    }

    static List<String> under(List<String> table, Path dir) {
        String root = dir.toAbsolutePath().normalize().toString();
        List<String> found = new ArrayList<>();
        for (String point : parseMountPoints(table)) {
            if ((point.equals(root) || point.startsWith(root + "/")) && !found.contains(point)) {
                found.add(point);
            }
        }
        found.sort(Comparator.comparingInt(String::length).reversed());
        return found;
    }

    public static boolean isMountPoint(String path) {
        return parseMountPoints(table()).contains(Path.of(path).toAbsolutePath().normalize().toString());
    }

    /** Unmounts everything at or below {@code dir} (lazily if busy); returns what was mounted. */
    public static List<String> unmountAllUnder(Path dir) {
        List<String> mounted = under(dir);
        for (String point : mounted) {
            while (isMountPoint(point)) {
                if (!run("umount", point) && !run("umount", "-l", point)) {
                    break;
                }
            }
        }
        return mounted;
    }

    private static boolean run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
