package io.csiorchestrator.csi;

import io.csiorchestrator.csi.v1.VolumeCapability;

import java.util.Objects;

/**
 * Builds the CSI {@link VolumeCapability} of a claim from its access mode, its attachment mode
 * and the mount options of the volume and of the request.
 */
public final class VolumeCapabilities {

    private VolumeCapabilities() {
    }

    /**
     * @param accessMode       the claim's access mode
     * @param attachmentMode   file system or block device
     * @param volumeOptions    the volume's registered fs type and flags ({@link MountOptions#NONE} if none)
     * @param requestedOptions the claim's fs type and flags, replacing the volume's when given
     * @throws InvalidVolumeCapabilityException for mount options on a block volume
     */
    public static VolumeCapability build(CsiAccessMode accessMode, CsiAttachmentMode attachmentMode,
                                         MountOptions volumeOptions, MountOptions requestedOptions) {
        return build(accessMode, true, attachmentMode, volumeOptions, requestedOptions);
    }

    /**
     * Same, for a plugin that does or does not advertise SINGLE_NODE_MULTI_WRITER: without it the CSI 1.5
     * single-node modes are sent as SINGLE_NODE_WRITER ({@link CsiAccessMode#csiModeFor}).
     */
    public static VolumeCapability build(CsiAccessMode accessMode, boolean pluginSupportsSingleNodeMultiWriter,
                                         CsiAttachmentMode attachmentMode, MountOptions volumeOptions,
                                         MountOptions requestedOptions) {
        Objects.requireNonNull(accessMode, "accessMode");
        Objects.requireNonNull(attachmentMode, "attachmentMode");
        MountOptions volume = volumeOptions == null ? MountOptions.NONE : volumeOptions;
        MountOptions requested = requestedOptions == null ? MountOptions.NONE : requestedOptions;
        VolumeCapability.Builder capability = VolumeCapability.newBuilder()
                .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(accessMode.csiModeFor(pluginSupportsSingleNodeMultiWriter)));
        switch (attachmentMode) {
            case BLOCK_DEVICE -> {
                if (!volume.isEmpty() || !requested.isEmpty()) {
                    throw new InvalidVolumeCapabilityException(
                            "block-device volumes take no mount options (fs type or mount flags)");
                }
                capability.setBlock(VolumeCapability.BlockVolume.getDefaultInstance());
            }
            case FILE_SYSTEM -> {
                MountOptions effective = volume.overriddenBy(requested);
                capability.setMount(VolumeCapability.MountVolume.newBuilder()
                        .setFsType(effective.fsType())
                        .addAllMountFlags(effective.mountFlags()));
            }
        }
        return capability.build();
    }

    /** Same, for a request that brings no mount options of its own. */
    public static VolumeCapability build(CsiAccessMode accessMode, CsiAttachmentMode attachmentMode,
                                         MountOptions volumeOptions) {
        return build(accessMode, attachmentMode, volumeOptions, MountOptions.NONE);
    }
}
