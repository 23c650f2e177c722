package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.v1.VolumeCapability;
import io.csiorchestrator.csi.v1.VolumeCapability.AccessMode.Mode;

import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Checks of request fields; each failing check throws INVALID_ARGUMENT. Ids become directory
 * names, so they may hold no {@code /}, no {@code ..} and no control characters, and are bounded.
 */
final class RequestChecks {

    static final int MAX_ID_LENGTH = 128;
    static final int MAX_PATH_LENGTH = 4096;

    private static final Set<Mode> SUPPORTED_MODES = EnumSet.of(Mode.SINGLE_NODE_WRITER,
            Mode.SINGLE_NODE_READER_ONLY, Mode.MULTI_NODE_READER_ONLY, Mode.MULTI_NODE_SINGLE_WRITER,
            Mode.MULTI_NODE_MULTI_WRITER, Mode.SINGLE_NODE_SINGLE_WRITER, Mode.SINGLE_NODE_MULTI_WRITER);

    private RequestChecks() {
    }

    /** A required id (volume_id, node_id, name). */
    static String requireId(String field, String value) {
        if (value == null || value.isEmpty()) {
            throw CsiStatus.invalidArgument(field + " is required");
        }
        Optional<String> problem = idProblem(value);
        if (problem.isPresent()) {
            throw CsiStatus.invalidArgument(field + " " + problem.get());
        }
        return value;
    }

    /**
     * A required CreateVolume name. Names never become paths (volume ids are derived from them),
     * so only length and control characters are checked.
     */
    static String requireName(String value) {
        if (value == null || value.isEmpty()) {
            throw CsiStatus.invalidArgument("name is required");
        }
        if (value.length() > MAX_ID_LENGTH || value.chars().anyMatch(Character::isISOControl)) {
            throw CsiStatus.invalidArgument("name must have at most " + MAX_ID_LENGTH
                    + " characters and no control characters");
        }
        return value;
    }

    /** Why a string cannot be an id, if it cannot. */
    static Optional<String> idProblem(String value) {
        if (value.length() > MAX_ID_LENGTH) {
            return Optional.of("is longer than " + MAX_ID_LENGTH + " characters");
        }
        if (value.contains("/")) {
            return Optional.of("may not contain '/'");
        }
        if (value.contains("..") || value.equals(".")) {
            return Optional.of("may not be '.' or contain '..'");
        }
        if (value.chars().anyMatch(Character::isISOControl)) {
            return Optional.of("may not contain control characters");
        }
        return Optional.empty();
    }

    /** A required absolute path without {@code ..} segments. */
    static Path requirePath(String field, String value) {
        if (value == null || value.isEmpty()) {
            throw CsiStatus.invalidArgument(field + " is required");
        }
        if (value.length() > MAX_PATH_LENGTH || value.chars().anyMatch(Character::isISOControl)) {
            throw CsiStatus.invalidArgument(field + " is too long or contains control characters");
        }
        Path path = Path.of(value);
        if (!path.isAbsolute()) {
            throw CsiStatus.invalidArgument(field + " must be an absolute path");
        }
        for (Path segment : path) {
            if (segment.toString().equals("..")) {
                throw CsiStatus.invalidArgument(field + " may not contain '..'");
            }
        }
        return path.normalize();
    }

    /**
     * {@code value} as a normalized absolute path, if it is one {@link #requirePath} would accept;
     * empty for a relative path, one with {@code ..} segments, control characters or too long.
     */
    static Optional<Path> usablePath(String value) {
        try {
            return Optional.of(requirePath("path", value));
        } catch (io.grpc.StatusRuntimeException | java.nio.file.InvalidPathException e) {
            return Optional.empty();
        }
    }

    /** A required capability this plugin can serve. */
    static VolumeCapability requireCapability(String field, VolumeCapability capability, boolean present) {
        if (!present) {
            throw CsiStatus.invalidArgument(field + " is required");
        }
        unsupportedBecause(capability).ifPresent(reason -> {
            throw CsiStatus.invalidArgument(field + ": " + reason);
        });
        return capability;
    }

    /**
     * Refuses the CSI 1.5 modes SINGLE_NODE_SINGLE_WRITER and SINGLE_NODE_MULTI_WRITER when the plugin runs with
     * {@code --single-node-multi-writer=false} (it does not advertise them then, and a CO must send SINGLE_NODE_WRITER).
     */
    static VolumeCapability requireAdvertisedMode(String field, VolumeCapability capability, boolean singleNodeMultiWriter) {
        Mode mode = capability.getAccessMode().getMode();
        if (!singleNodeMultiWriter && (mode == Mode.SINGLE_NODE_SINGLE_WRITER || mode == Mode.SINGLE_NODE_MULTI_WRITER)) {
            throw CsiStatus.invalidArgument(field + ": access mode " + mode + " is not supported (this plugin does not"
                    + " advertise SINGLE_NODE_MULTI_WRITER; send SINGLE_NODE_WRITER)");
        }
        return capability;
    }

    /** Required, non-empty capabilities, every one of which this plugin can serve. */
    static List<VolumeCapability> requireCapabilities(String field, List<VolumeCapability> capabilities) {
        if (capabilities.isEmpty()) {
            throw CsiStatus.invalidArgument(field + " is required");
        }
        for (VolumeCapability capability : capabilities) {
            requireCapability(field, capability, true);
        }
        return capabilities;
    }

    /** Why this plugin cannot serve a capability, if it cannot. */
    static Optional<String> unsupportedBecause(VolumeCapability capability) {
        if (!capability.hasAccessMode() || !SUPPORTED_MODES.contains(capability.getAccessMode().getMode())) {
            return Optional.of("access mode " + capability.getAccessMode().getMode() + " is not supported");
        }
        if (capability.hasBlock()) {
            return Optional.of("block access is not supported by the hostpath plugin");
        }
        if (!capability.hasMount()) {
            return Optional.of("an access type (mount) is required");
        }
        return Optional.empty();
    }
}
