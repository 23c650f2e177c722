package io.csiorchestrator.csi;

import io.csiorchestrator.csi.v1.VolumeCapability;
import io.csiorchestrator.csi.v1.VolumeCapability.AccessMode.Mode;
import org.junit.jupiter.api.Test;

import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class VolumeCapabilitiesTest {

    @Test
    void theFiveAccessModesMapToTheirCsiModes() {
        assertEquals(Mode.SINGLE_NODE_READER_ONLY, CsiAccessMode.fromExternalName("single-node-reader-only").csiMode());
        assertEquals(Mode.SINGLE_NODE_WRITER, CsiAccessMode.fromExternalName("single-node-writer").csiMode());
        assertEquals(Mode.MULTI_NODE_READER_ONLY, CsiAccessMode.fromExternalName("multi-node-reader-only").csiMode());
        assertEquals(Mode.MULTI_NODE_SINGLE_WRITER, CsiAccessMode.fromExternalName("multi-node-single-writer").csiMode());
        assertEquals(Mode.MULTI_NODE_MULTI_WRITER, CsiAccessMode.fromExternalName("multi-node-multi-writer").csiMode());
        assertFalse(CsiAccessMode.SINGLE_NODE_READER_ONLY.isWritable());
        assertTrue(CsiAccessMode.MULTI_NODE_SINGLE_WRITER.isMultiNode());
        assertThrows(IllegalArgumentException.class, () -> CsiAccessMode.fromExternalName("single-node-one-writer"));
        assertEquals(CsiAttachmentMode.BLOCK_DEVICE, CsiAttachmentMode.fromExternalName("block-device"));
    }

    @Test
    void theSingleNodeWriterModesOfCsi15GoToAPluginOnlyWhenItAdvertisesThem() {
        for (String name : List.of("single-node-single-writer", "single-node-multi-writer")) {
            CsiAccessMode mode = CsiAccessMode.fromExternalName(name);
            assertTrue(mode.isWritable());
            assertFalse(mode.isMultiNode());
            VolumeCapability to15 = VolumeCapabilities.build(mode, true, CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE,
                    MountOptions.NONE);
            assertEquals(mode.csiMode(), to15.getAccessMode().getMode(), name);
            VolumeCapability toOlder = VolumeCapabilities.build(mode, false, CsiAttachmentMode.FILE_SYSTEM,
                    MountOptions.NONE, MountOptions.NONE);
            assertEquals(Mode.SINGLE_NODE_WRITER, toOlder.getAccessMode().getMode(), name);
        }
        assertEquals(Mode.SINGLE_NODE_SINGLE_WRITER, CsiAccessMode.SINGLE_NODE_SINGLE_WRITER.csiMode());
        assertEquals(Mode.SINGLE_NODE_MULTI_WRITER, CsiAccessMode.SINGLE_NODE_MULTI_WRITER.csiMode());
        // the older modes are sent as they are either way
        for (CsiAccessMode old : List.of(CsiAccessMode.SINGLE_NODE_WRITER, CsiAccessMode.MULTI_NODE_SINGLE_WRITER)) {
            assertEquals(old.csiMode(), old.csiModeFor(false));
            assertEquals(old.csiMode(), old.csiModeFor(true));
        }
    }

    @Test
    void fileSystemCapabilityTakesTheVolumesOptionsWhenTheRequestHasNone() {
        VolumeCapability capability = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.of("ext4", "noatime", "nodev"));

        assertTrue(capability.hasMount());
        assertEquals(Mode.SINGLE_NODE_WRITER, capability.getAccessMode().getMode());
        assertEquals("ext4", capability.getMount().getFsType());
        assertEquals(List.of("noatime", "nodev"), capability.getMount().getMountFlagsList());
    }

    @Test
    void requestedFsTypeAndFlagsReplaceTheVolumesEachOnItsOwn() {
        MountOptions volume = MountOptions.of("ext4", "noatime");

        VolumeCapability flagsOnly = VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_READER_ONLY,
                CsiAttachmentMode.FILE_SYSTEM, volume, MountOptions.of("", "ro", "nosuid"));
        assertEquals("ext4", flagsOnly.getMount().getFsType());
        assertEquals(List.of("ro", "nosuid"), flagsOnly.getMount().getMountFlagsList());

        VolumeCapability fsOnly = VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_READER_ONLY,
                CsiAttachmentMode.FILE_SYSTEM, volume, MountOptions.of("xfs"));
        assertEquals("xfs", fsOnly.getMount().getFsType());
        assertEquals(List.of("noatime"), fsOnly.getMount().getMountFlagsList());
    }

    @Test
    void blockVolumesTakeNoMountOptions() {
        VolumeCapability block = VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                CsiAttachmentMode.BLOCK_DEVICE, MountOptions.NONE);
        assertTrue(block.hasBlock());
        assertFalse(block.hasMount());

        assertThrows(InvalidVolumeCapabilityException.class, () -> VolumeCapabilities.build(
                CsiAccessMode.SINGLE_NODE_WRITER, CsiAttachmentMode.BLOCK_DEVICE, MountOptions.NONE,
                MountOptions.of("", "noatime")));
        assertThrows(InvalidVolumeCapabilityException.class, () -> VolumeCapabilities.build(
                CsiAccessMode.SINGLE_NODE_WRITER, CsiAttachmentMode.BLOCK_DEVICE, MountOptions.of("ext4")));
    }

    @Test
    void flagsAreValidatedWithoutEchoingThem() {
        InvalidVolumeCapabilityException comma = assertThrows(InvalidVolumeCapabilityException.class,
                () -> MountOptions.of("", "ro", "uid=0,password=hunter2"));
        assertEquals("mount flag #2 contains a comma; give each option as its own flag", comma.getMessage());
        assertFalse(comma.getMessage().contains("hunter2"));

        assertThrows(InvalidVolumeCapabilityException.class, () -> MountOptions.of("", ""));
        assertThrows(InvalidVolumeCapabilityException.class, () -> MountOptions.of("", " ro"));
        assertThrows(InvalidVolumeCapabilityException.class, () -> MountOptions.of("", "ro\nrw"));
        assertThrows(InvalidVolumeCapabilityException.class, () -> MountOptions.of("", "ro\u0000"));
        assertThrows(InvalidVolumeCapabilityException.class, () -> MountOptions.of("", "x".repeat(257)));
        assertThrows(InvalidVolumeCapabilityException.class,
                () -> new MountOptions("", Collections.nCopies(65, "ro")));
        assertThrows(InvalidVolumeCapabilityException.class, () -> MountOptions.of("ext4 -o rw"));
        assertThrows(InvalidVolumeCapabilityException.class, () -> MountOptions.of("EXT4"));
        MountOptions.of("fuse.sshfs", "x".repeat(256), "context=system_u:object_r:tmp_t:s0");
    }

    @Test
    void mountOptionsNeverPrintTheirFlags() {
        String text = MountOptions.of("nfs", "password=hunter2").toString();
        assertFalse(text.contains("hunter2"));
        assertTrue(text.contains("nfs"));
    }
}
