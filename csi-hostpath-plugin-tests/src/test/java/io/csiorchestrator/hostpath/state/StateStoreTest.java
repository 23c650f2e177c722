package io.csiorchestrator.hostpath.state;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
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

    /**
     * Two processes on one shared dir (two stores here, taking the lock in turn): under the lock, each reads the
     * controller half again only after the other wrote it, never after its own write or when nothing changed, and
     * keeps its own node half from memory.
     */
    @Test
    void theSharedHalfIsReadAgainOnlyAfterAnotherProcessWroteIt() throws Exception {
        Path shared = sharedDir();
        StateStore n1 = new StateStore(dir.resolve("n1"), shared);
        StateStore n2 = new StateStore(dir.resolve("n2"), shared);
        PluginState n1State = changed(n1, PluginState.empty(), current -> current
                .withVolume(new VolumeRecord("hp-1", "one", 1024, Map.of()))
                .withStaging(new Staging("hp-1", "/staging/hp-1", WRITER)));
        assertSame(n1State, underLock(n1, n1State, current -> current), "its own write is not read back");

        PluginState n2State = underLock(n2, PluginState.empty(), current -> current);
        assertEquals(n1State.volumes(), n2State.volumes(), "n2 reads what n1 wrote");
        assertEquals(Map.of(), n2State.stagings(), "n1's node half is n1's");
        assertSame(n2State, underLock(n2, n2State, current -> current), "nothing changed: not read again");

        PluginState n2Next = changed(n2, n2State, current -> current
                .withPublication(new ControllerPublication("hp-1", "n2", false, WRITER)));
        PluginState n1Seen = underLock(n1, n1State, current -> current);
        assertNotSame(n1State, n1Seen);
        assertEquals(n2Next.controllerPublications(), n1Seen.controllerPublications(), "n1 reads what n2 wrote");
        assertEquals(n1State.stagings(), n1Seen.stagings(), "n1 keeps its node half");
        assertEquals(n1Seen, new StateStore(dir.resolve("n1"), shared).load(), "as saved");
    }

    /**
     * A controller call changes only the publications: it writes their file alone, and the other process reads that
     * file again but keeps its volumes (issue 36 item 6: the list of every volume is neither written nor read by a
     * claim's controller calls).
     */
    @Test
    void aControllerCallWritesAndReadsOnlyThePublications() throws Exception {
        Path shared = sharedDir();
        StateStore n1 = new StateStore(dir.resolve("n1"), shared);
        StateStore n2 = new StateStore(dir.resolve("n2"), shared);
        PluginState n1State = changed(n1, PluginState.empty(), current -> current
                .withVolume(new VolumeRecord("hp-1", "one", 1024, Map.of()))
                .withVolume(new VolumeRecord("hp-2", "two", 2048, Map.of())));
        Path volumesFile = shared.resolve(StateStore.SHARED_FILE_NAME);
        Path publicationsFile = shared.resolve(StateStore.SHARED_PUBLICATIONS_FILE_NAME);
        String volumesSaved = Files.readString(volumesFile);
        Object volumesInode = Files.readAttributes(volumesFile, BasicFileAttributes.class).fileKey();
        assertFalse(volumesSaved.contains("\"nodeId\""), volumesSaved);

        PluginState n2State = underLock(n2, PluginState.empty(), current -> current);
        PluginState n2Next = changed(n2, n2State, current -> current
                .withPublication(new ControllerPublication("hp-1", "n2", false, WRITER)));
        assertEquals(volumesInode, Files.readAttributes(volumesFile, BasicFileAttributes.class).fileKey(),
                "the volumes file is not written again");
        assertEquals(volumesSaved, Files.readString(volumesFile));
        assertTrue(Files.readString(publicationsFile).contains("\"nodeId\":\"n2\""), Files.readString(publicationsFile));

        // n1 does not read the volumes file again (its counter did not move): it answers though the file is unreadable now
        Files.writeString(volumesFile, "not json");
        PluginState n1Seen = underLock(n1, n1State, current -> current);
        assertEquals(n2Next.controllerPublications(), n1Seen.controllerPublications(), "n1 reads what n2 published");
        assertEquals(n1State.volumes(), n1Seen.volumes(), "n1 keeps its volumes");
        Files.writeString(volumesFile, volumesSaved);
        assertEquals(n1Seen, new StateStore(dir.resolve("n1"), shared).load(), "as saved");
    }

    /**
     * A shared dir written before the split keeps the publications in the volumes file: they are read from there
     * until the first write, which writes their own file before it rewrites the volumes file without them.
     */
    @Test
    void aSharedDirFromBeforeTheSplitKeepsItsPublications() throws Exception {
        Path shared = sharedDir();
        PluginState before = PluginState.empty().withVolume(new VolumeRecord("hp-1", "one", 1024, Map.of()))
                .withPublication(new ControllerPublication("hp-1", "n2", false, WRITER));
        Files.write(shared.resolve(StateStore.SHARED_FILE_NAME),
                new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsBytes(before));
        Files.write(shared.resolve(StateStore.SHARED_LOCK_NAME), java.nio.ByteBuffer.allocate(8).putLong(7).array());

        StateStore n1 = new StateStore(dir.resolve("n1"), shared);
        assertEquals(before.controllerPublications(), n1.load().controllerPublications(), "loaded from the volumes file");
        PluginState seen = underLock(n1, PluginState.empty(), current -> current);
        assertEquals(before, seen, "read under the lock the same way");

        changed(n1, seen, current -> current.withVolume(new VolumeRecord("hp-2", "two", 2048, Map.of())));
        assertTrue(Files.exists(shared.resolve(StateStore.SHARED_PUBLICATIONS_FILE_NAME)), "written first");
        assertFalse(Files.readString(shared.resolve(StateStore.SHARED_FILE_NAME)).contains("\"nodeId\""));
        PluginState reloaded = new StateStore(dir.resolve("n1"), shared).load();
        assertEquals(before.controllerPublications(), reloaded.controllerPublications(), "kept");
        assertEquals(2, reloaded.volumes().size());
    }

    private static final CapabilityRecord WRITER = CapabilityRecord.of(VolumeCapabilities.build(
            CsiAccessMode.SINGLE_NODE_WRITER, CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE));

    /** A shared dir and the state dirs of two processes using it, n1 and n2. */
    private Path sharedDir() throws java.io.IOException {
        Files.createDirectories(dir.resolve("n1"));
        Files.createDirectories(dir.resolve("n2"));
        return Files.createDirectories(dir.resolve("shared"));
    }

    /** {@code change} of the state {@code store}'s process holds, made under the lock and saved. */
    private static PluginState changed(StateStore store, PluginState held, java.util.function.UnaryOperator<PluginState> change) {
        return underLock(store, held, current -> {
            PluginState next = change.apply(current);
            store.save(current, next);
            return next;
        });
    }

    private static PluginState underLock(StateStore store, PluginState held,
                                         java.util.function.UnaryOperator<PluginState> operation) {
        java.nio.channels.FileLock lock = store.lockShared();
        try {
            return operation.apply(store.refresh(held));
        } finally {
            store.unlock(lock);
        }
    }

    /**
     * The state file is replaced by a rename on every write, but its inodes take turns with the spare's: no inode is
     * allocated or freed per write, the file itself is never the spare (never truncated), and what a crash between
     * the steps leaves (a keep linked to the file; a spare that is the file, which the method never makes) is
     * handled by the next write.
     */
    @Test
    void writesTakeTurnsBetweenTwoInodesAndNeverTruncateTheFile() throws Exception {
        Path file = dir.resolve("state.json");
        Path spare = dir.resolve(".state.json.spare");
        Path keep = dir.resolve(".state.json.keep");
        List<Object> inodes = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            StateStore.writeAtomicallyReusingInodes(file, ("v" + i).getBytes());
            assertEquals("v" + i, Files.readString(file));
            inodes.add(Files.readAttributes(file, BasicFileAttributes.class).fileKey());
            if (i > 1) {
                assertFalse(Files.isSameFile(file, spare), "the spare is never the file");
            }
        }
        assertEquals(inodes.get(0), inodes.get(2));
        assertEquals(inodes.get(1), inodes.get(3));
        assertNotEquals(inodes.get(0), inodes.get(1));
        assertEquals("[.state.json.spare, state.json]", listing(dir));

        Files.createLink(keep, file); // a crash after linking the keep, before the rename
        StateStore.writeAtomicallyReusingInodes(file, "v5".getBytes());
        assertEquals("v5", Files.readString(file));
        Files.delete(spare);
        Files.createLink(spare, file); // a spare that is the file itself
        StateStore.writeAtomicallyReusingInodes(file, "v6".getBytes());
        assertEquals("v6", Files.readString(file));
        assertFalse(Files.isSameFile(file, spare));
        assertEquals("[.state.json.spare, state.json]", listing(dir));
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
