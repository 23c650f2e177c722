package io.csiorchestrator.csi;

import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * A file-system type and mount flags, as a volume registers them or a claim requests them.
 * Validated on construction: the fs type is a plain word; each flag is one non-empty mount option
 * without commas (which would smuggle in further options), line breaks or control characters.
 * Flags may carry credentials, so error messages name a flag by position, never by value.
 */
public record MountOptions(String fsType, List<String> mountFlags) {

    public static final MountOptions NONE = new MountOptions("", List.of());

    public static final int MAX_FLAGS = 64;
    public static final int MAX_FLAG_LENGTH = 256;
    private static final Pattern FS_TYPE = Pattern.compile("[a-z0-9][a-z0-9._+-]{0,31}");

    public MountOptions {
        fsType = fsType == null ? "" : fsType;
        mountFlags = List.copyOf(Objects.requireNonNullElse(mountFlags, List.of()));
        if (!fsType.isEmpty() && !FS_TYPE.matcher(fsType).matches()) {
            throw new InvalidVolumeCapabilityException("fs type must be 1-32 lower-case letters, digits or ._+-");
        }
        if (mountFlags.size() > MAX_FLAGS) {
            throw new InvalidVolumeCapabilityException("at most " + MAX_FLAGS + " mount flags, got " + mountFlags.size());
        }
        for (int i = 0; i < mountFlags.size(); i++) {
            String problem = problemOf(mountFlags.get(i));
            if (problem != null) {
                throw new InvalidVolumeCapabilityException("mount flag #" + (i + 1) + " " + problem);
            }
        }
    }

    public static MountOptions of(String fsType, String... flags) {
        return new MountOptions(fsType, List.of(flags));
    }

    public boolean isEmpty() {
        return fsType.isEmpty() && mountFlags.isEmpty();
    }

    /**
     * These options with the requested ones laid over them: the request's fs type replaces ours
     * when it names one, and the request's flags replace ours when it has any.
     */
    public MountOptions overriddenBy(MountOptions requested) {
        if (requested == null) {
            return this;
        }
        return new MountOptions(
                requested.fsType.isEmpty() ? fsType : requested.fsType,
                requested.mountFlags.isEmpty() ? mountFlags : requested.mountFlags);
    }

    /** Never prints flag values: they may be credentials. */
    @Override
    public String toString() {
        return "MountOptions[fsType=" + fsType + ", mountFlags=" + mountFlags.size() + " redacted]";
    }

    private static String problemOf(String flag) {
        if (flag == null || flag.isBlank()) {
            return "is empty";
        }
        if (flag.length() > MAX_FLAG_LENGTH) {
            return "is longer than " + MAX_FLAG_LENGTH + " characters";
        }
        if (!flag.strip().equals(flag)) {
            return "has leading or trailing blanks";
        }
        for (int i = 0; i < flag.length(); i++) {
            char c = flag.charAt(i);
            if (c == ',') {
                return "contains a comma; give each option as its own flag";
            }
            if (c == '\n' || c == '\r') {
                return "contains a line break";
            }
            if (Character.isISOControl(c)) {
                return "contains a control character";
            }
        }
        return null;
    }
}
