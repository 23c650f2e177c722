package io.csiorchestrator.csi.mount;

import java.util.ArrayList;
import java.util.List;

/**
 * One line of {@code /proc/self/mountinfo} (proc(5)), and the parser of such text. {@link MountTable} reads
 * the file and answers questions about paths.
 *
 * @param mountId      unique id of the mount
 * @param parentId     id of the parent mount
 * @param majorMinor   {@code major:minor} of the file system's device
 * @param root         the directory of the file system that is mounted (for a bind mount, the bound
 *                     directory within its file system), unescaped
 * @param mountPoint   where it is mounted, unescaped
 * @param mountOptions per-mount options, e.g. {@code rw,relatime} or {@code ro,relatime}
 * @param fsType       the file system type, unescaped
 * @param source       the mount source, unescaped
 * @param superOptions per-superblock options (empty when the line has none)
 */
public record MountInfo(int mountId, int parentId, String majorMinor, String root, String mountPoint,
                        String mountOptions, String fsType, String source, String superOptions) {

    /** Whether the mount itself is read-only ({@code ro} among the per-mount options). */
    public boolean readOnly() {
        for (String option : mountOptions.split(",")) {
            if (option.equals("ro")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Parses mountinfo text: {@code id parent major:minor root mountpoint options [optional fields...] -
     * fstype source superoptions} per line, with space, tab, newline and backslash escaped as octal
     * ({@code \040}, {@code \011}, {@code \012}, {@code \134}). Blank lines are skipped.
     *
     * @throws IllegalArgumentException for a malformed line: a table that cannot be read completely is not
     *                                  answered from (a mount missed would look like a plain directory)
     */
    public static List<MountInfo> parse(String text) {
        List<MountInfo> mounts = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isBlank()) {
                mounts.add(parseLine(line));
            }
        }
        return mounts;
    }

    /** One line; the optional fields (e.g. {@code shared:1 master:2}) up to the {@code -} are skipped. */
    public static MountInfo parseLine(String line) {
        String[] f = line.trim().split(" ");
        int separator = -1;
        for (int i = 6; i < f.length; i++) {
            if (f[i].equals("-")) {
                separator = i;
                break;
            }
        }
        if (separator < 0 || separator + 2 >= f.length) {
            throw new IllegalArgumentException("malformed mountinfo line: " + line);
        }
        try {
            return new MountInfo(Integer.parseInt(f[0]), Integer.parseInt(f[1]), f[2], unescape(f[3]), unescape(f[4]),
                    f[5], unescape(f[separator + 1]), unescape(f[separator + 2]),
                    separator + 3 < f.length ? f[separator + 3] : "");
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("malformed mountinfo line: " + line, e);
        }
    }

    /** Decodes the kernel's octal escapes ({@code \040} space, {@code \011} tab, {@code \012} newline, {@code \134} backslash). */
    public static String unescape(String field) {
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
