package io.csiorchestrator.hostpath.mount;

import java.util.ArrayList;
import java.util.List;

/**
 * One line of {@code /proc/self/mountinfo}, and the parser of the whole file.
 *
 * @param mountId    unique id of the mount
 * @param parentId   id of the parent mount
 * @param root       the directory of the source file system that is mounted (for a bind mount,
 *                   the bound directory within its file system)
 * @param mountPoint where it is mounted, unescaped
 * @param options    per-mount options, e.g. {@code rw,relatime} or {@code ro,relatime}
 * @param fsType     the file system type
 * @param source     the mount source
 */
public record MountInfo(int mountId, int parentId, String root, String mountPoint, String options,
                        String fsType, String source) {

    public boolean readOnly() {
        for (String option : options.split(",")) {
            if (option.equals("ro")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Parses mountinfo text (see proc(5)): {@code id parent major:minor root mountpoint options
     * [optional fields...] - fstype source superoptions}, with space, tab, newline and backslash
     * escaped as octal. Malformed lines are skipped.
     */
    public static List<MountInfo> parse(String text) {
        List<MountInfo> mounts = new ArrayList<>();
        for (String line : text.split("\n")) {
            MountInfo mount = parseLine(line);
            if (mount != null) {
                mounts.add(mount);
            }
        }
        return mounts;
    }

    static MountInfo parseLine(String line) {
        String[] fields = line.trim().split(" ");
        int separator = -1;
        for (int i = 6; i < fields.length; i++) {
            if (fields[i].equals("-")) {
                separator = i;
                break;
            }
        }
        if (fields.length < 10 || separator < 0 || separator + 2 >= fields.length) {
            return null;
        }
        try {
            return new MountInfo(Integer.parseInt(fields[0]), Integer.parseInt(fields[1]), unescape(fields[3]),
                    unescape(fields[4]), fields[5], unescape(fields[separator + 1]), unescape(fields[separator + 2]));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Undoes the kernel's octal escapes ({@code \040} for a space, and so on). */
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

    private static boolean isOctal(String text, int from) {
        if (from + 3 > text.length()) {
            return false;
        }
        for (int i = from; i < from + 3; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '7') {
                return false;
            }
        }
        return true;
    }
}
