package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.regex.Pattern;

/**
 * File-system type and mount flags. Flags may carry credentials, so {@link #toString()} never
 * shows them, validation never echoes them, and on node-commands they travel only inside
 * {@link SealedSecrets}.
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record MountOptions(String fsType, List<String> mountFlags) {

    public static final int MAX_FLAGS = 64;
    public static final int MAX_FLAG_LENGTH = 256;
    private static final Pattern FS_TYPE = Pattern.compile("[a-z0-9][a-z0-9._-]{0,31}");

    public static final MountOptions NONE = new MountOptions(null, List.of());

    public MountOptions {
        mountFlags = Copies.list(mountFlags);
    }

    @com.fasterxml.jackson.annotation.JsonIgnore
    public boolean isEmpty() {
        return (fsType == null || fsType.isEmpty()) && mountFlags.isEmpty();
    }

    /** These options with the flags removed: what may travel or be shown in plain text. */
    public MountOptions withoutFlags() {
        return new MountOptions(fsType, List.of());
    }

    /**
     * The options a request asks for: the request's fs type and flags replace the volume's
     * when given (Nomad's rule).
     */
    public MountOptions overriddenBy(MountOptions request) {
        if (request == null) {
            return this;
        }
        String fs = request.fsType != null && !request.fsType.isEmpty() ? request.fsType : fsType;
        List<String> flags = request.mountFlags.isEmpty() ? mountFlags : request.mountFlags;
        return new MountOptions(fs, flags);
    }

    void checkFields(String field, Violations violations) {
        if (fsType != null && !FS_TYPE.matcher(fsType).matches()) {
            violations.add(field + ".fsType", fsType, "must be 1-32 characters of a-z, 0-9, '.', '_' or '-'");
        }
        checkFlags(field + ".mountFlags", mountFlags, violations);
    }

    /** Checks flags without ever echoing one: a flag may be a credential. */
    public static void checkFlags(String field, List<String> flags, Violations violations) {
        if (flags.size() > MAX_FLAGS) {
            violations.addRedacted(field, "must have at most " + MAX_FLAGS + " flags (has " + flags.size() + ")");
        }
        for (int i = 0; i < flags.size(); i++) {
            String flag = flags.get(i);
            String at = field + "[" + i + "]";
            if (flag == null || flag.isBlank()) {
                violations.addRedacted(at, "must not be blank");
            } else if (flag.length() > MAX_FLAG_LENGTH) {
                violations.addRedacted(at, "must be at most " + MAX_FLAG_LENGTH + " characters");
            } else if (flag.chars().anyMatch(c -> c < 0x20 || c == 0x7f || c == ',')) {
                violations.addRedacted(at, "must not contain a comma or control characters (one flag per entry)");
            }
        }
    }

    @Override
    public String toString() {
        return "MountOptions[fsType=" + fsType + ", mountFlags=" + (mountFlags.isEmpty() ? "[]" : "[redacted x" + mountFlags.size() + "]") + "]";
    }
}
