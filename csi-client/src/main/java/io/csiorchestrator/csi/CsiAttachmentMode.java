package io.csiorchestrator.csi;

import java.util.Arrays;

/** How a volume is attached: a mounted file system or a raw block device. */
public enum CsiAttachmentMode {
    FILE_SYSTEM("file-system"),
    BLOCK_DEVICE("block-device");

    private final String externalName;

    CsiAttachmentMode(String externalName) {
        this.externalName = externalName;
    }

    public String externalName() {
        return externalName;
    }

    public static CsiAttachmentMode fromExternalName(String name) {
        return Arrays.stream(values())
                .filter(mode -> mode.externalName.equals(name))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown attachment mode '" + name
                        + "'; expected file-system or block-device"));
    }

    @Override
    public String toString() {
        return externalName;
    }
}
