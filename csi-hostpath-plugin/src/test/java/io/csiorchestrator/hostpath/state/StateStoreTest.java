package io.csiorchestrator.hostpath.state;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StateStoreTest {

    @TempDir
    Path dir;

    @Test
    void aSavedStateLoadsBackEqual() {
        CapabilityRecord capability = CapabilityRecord.of(VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.of("ext4", "password=hunter2")));
        PluginState state = PluginState.empty()
                .withVolume(new VolumeRecord("hp-1", "data", 1024, Map.of("tier", "fast")))
                .withPublication(new ControllerPublication("hp-1", "n1", false, capability))
                .withStaging(new Staging("hp-1", "/staging/hp-1", capability))
                .withNodePublication(new NodePublication("hp-1", "/target/a", "/staging/hp-1", true, capability));
        StateStore store = new StateStore(dir);

        store.save(state);

        assertEquals(state, new StateStore(dir).load());
        assertFalse(listing(dir).contains(".tmp"), "no temporary file left: " + listing(dir));
    }

    @Test
    void mountFlagsAreKeptOnlyAsADigest() throws Exception {
        CapabilityRecord capability = CapabilityRecord.of(VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.of("ext4", "password=hunter2", "noatime")));
        new StateStore(dir).save(PluginState.empty().withStaging(new Staging("hp-1", "/s", capability)));

        assertFalse(Files.readString(dir.resolve(StateStore.FILE_NAME)).contains("hunter2"));
        CapabilityRecord sameFlagsOtherOrder = CapabilityRecord.of(VolumeCapabilities.build(
                CsiAccessMode.SINGLE_NODE_WRITER, CsiAttachmentMode.FILE_SYSTEM,
                MountOptions.of("ext4", "noatime", "password=hunter2")));
        assertEquals(capability, sameFlagsOtherOrder);
        assertNotEquals(capability, CapabilityRecord.of(VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.of("ext4", "noatime"))));
    }

    @Test
    void noFileMeansEmptyStateAndAtomicWritesReplaceContent() throws Exception {
        assertEquals(PluginState.empty(), new StateStore(dir).load());
        Path file = dir.resolve("f");
        StateStore.writeAtomically(file, "one".getBytes());
        StateStore.writeAtomically(file, "two".getBytes());
        assertEquals("two", Files.readString(file));
        assertTrue(listing(dir).equals("[f]"), listing(dir));
    }

    private static String listing(Path dir) {
        try (var files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList().toString();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
