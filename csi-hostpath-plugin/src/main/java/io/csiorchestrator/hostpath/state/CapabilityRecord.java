package io.csiorchestrator.hostpath.state;

import io.csiorchestrator.csi.v1.VolumeCapability;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.TreeSet;

/**
 * A volume capability as the plugin remembers it, to tell a repeated call from an incompatible
 * one. Mount flags may hold credentials, so only a digest of them is kept.
 *
 * @param accessMode       CSI access mode name, e.g. SINGLE_NODE_WRITER
 * @param accessType       "mount" or "block"
 * @param fsType           the requested fs type, may be empty
 * @param mountFlagsDigest SHA-256 of the sorted mount flags
 */
public record CapabilityRecord(String accessMode, String accessType, String fsType, String mountFlagsDigest) {

    public static CapabilityRecord of(VolumeCapability capability) {
        String accessType = capability.hasBlock() ? "block" : "mount";
        return new CapabilityRecord(capability.getAccessMode().getMode().name(), accessType,
                capability.getMount().getFsType(), digest(capability.getMount().getMountFlagsList()));
    }

    public boolean readerOnly() {
        return accessMode.endsWith("READER_ONLY");
    }

    public boolean singleNode() {
        return accessMode.startsWith("SINGLE_NODE");
    }

    /** The digest of no flags, the usual case, computed once. */
    private static final String NO_FLAGS_DIGEST = digestOf(List.of());

    private static String digest(List<String> flags) {
        return flags.isEmpty() ? NO_FLAGS_DIGEST : digestOf(flags);
    }

    private static String digestOf(List<String> flags) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            for (String flag : new TreeSet<>(flags)) {
                sha.update(flag.getBytes(StandardCharsets.UTF_8));
                sha.update((byte) 0);
            }
            return HexFormat.of().formatHex(sha.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 missing from the JDK", e);
        }
    }
}
