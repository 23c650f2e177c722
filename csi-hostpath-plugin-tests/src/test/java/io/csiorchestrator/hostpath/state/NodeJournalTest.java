package io.csiorchestrator.hostpath.state;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The node half's journal (issue 36 item 6): its one change per call, replayed after the snapshot at start. */
class NodeJournalTest {

    private static final CapabilityRecord WRITER = CapabilityRecord.of(VolumeCapabilities.build(
            CsiAccessMode.SINGLE_NODE_WRITER, CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE));

    @TempDir
    Path dir;

    /**
     * With a shared dir a node call appends its one change and leaves the node half's snapshot as it was; a new
     * process (a restart) loads the snapshot with the journal applied.
     */
    @Test
    void aNodeCallAppendsItsChangeAndARestartSeesIt() throws Exception {
        StateStore store = new StateStore(dir.resolve("n1"), sharedDir());
        PluginState first = PluginState.empty().withVolume(new VolumeRecord("hp-1", "one", 1024, Map.of()))
                .withStaging(new Staging("hp-9", "/staging/hp-9", WRITER));
        locked(store, () -> store.save(first));
        Path snapshot = dir.resolve("n1").resolve(StateStore.FILE_NAME);
        String snapshotBefore = Files.readString(snapshot);

        PluginState staged = first.withStaging(new Staging("hp-1", "/staging/hp-1", WRITER));
        locked(store, () -> store.save(first, staged));
        PluginState published = staged.withNodePublication(
                new NodePublication("hp-1", "/target/a", "/staging/hp-1", false, WRITER));
        locked(store, () -> store.save(staged, published));
        PluginState unstaged9 = published.withoutStaging("hp-9");
        locked(store, () -> store.save(published, unstaged9));

        assertEquals(snapshotBefore, Files.readString(snapshot), "the snapshot is not written again");
        String journal = Files.readString(dir.resolve("n1").resolve(NodeJournal.FILE_NAME));
        assertEquals(3, journal.lines().count(), "one line per change: " + journal);
        assertFalse(journal.contains("hp-9\",\"staging\""), "a removal carries no value: " + journal);
        assertEquals(unstaged9, new StateStore(dir.resolve("n1"), dir.resolve("shared")).load());
    }

    /**
     * A crash in the middle of an append leaves a line without its newline: that call never answered, so the line
     * is dropped and cut off the file, and the next change is appended after the last whole line.
     */
    @Test
    void aTornLastLineIsDroppedAndCutOff() throws Exception {
        StateStore store = new StateStore(dir.resolve("n1"), sharedDir());
        PluginState first = PluginState.empty();
        locked(store, () -> store.save(first));
        PluginState staged = first.withStaging(new Staging("hp-1", "/staging/hp-1", WRITER));
        locked(store, () -> store.save(first, staged));
        Path journal = dir.resolve("n1").resolve(NodeJournal.FILE_NAME);
        String whole = Files.readString(journal);
        Files.writeString(journal, "{\"staged\":\"hp-2\",\"staging\":{\"volumeId\":\"hp", StandardOpenOption.APPEND);

        StateStore restarted = new StateStore(dir.resolve("n1"), dir.resolve("shared"));
        PluginState loaded = restarted.load();
        assertEquals(staged, loaded, "the torn change is not in the state");
        assertEquals(whole, Files.readString(journal), "cut back to the last whole line");

        PluginState next = loaded.withStaging(new Staging("hp-3", "/staging/hp-3", WRITER));
        locked(restarted, () -> restarted.save(loaded, next));
        assertEquals(next, new StateStore(dir.resolve("n1"), dir.resolve("shared")).load());
    }

    /** A broken line with whole lines after it is not a crash's cut: the journal is refused, naming file and line. */
    @Test
    void aBrokenLineBeforeTheLastIsRefused() throws Exception {
        sharedDir();
        Path journal = dir.resolve("n1").resolve(NodeJournal.FILE_NAME);
        Files.writeString(journal, "{\"staged\":\"hp-1\"}\nnot a change\n{\"staged\":\"hp-2\"}\n", StandardCharsets.UTF_8);

        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> new StateStore(dir.resolve("n1"), dir.resolve("shared")).load());
        assertTrue(refused.getMessage().contains(journal.toString()) && refused.getMessage().contains("line 2"),
                refused.getMessage());
    }

    /**
     * After its limit of lines the journal's changes go into the snapshot and the journal is emptied; lines replayed
     * over a snapshot that already holds them (a crash between the snapshot's write and the journal's emptying) give
     * the same state.
     */
    @Test
    void aFullJournalIsCompactedAndReplayingItOverItsSnapshotChangesNothing() throws Exception {
        sharedDir();
        NodeJournal journal = new NodeJournal(dir.resolve("n1"), 3);
        PluginState state = PluginState.empty();
        PluginState one = state.withStaging(new Staging("hp-1", "/staging/hp-1", WRITER));
        assertFalse(journal.append(state, one));
        PluginState two = one.withStaging(new Staging("hp-2", "/staging/hp-2", WRITER));
        assertFalse(journal.append(one, two));
        PluginState three = two.withoutStaging("hp-1");
        assertTrue(journal.append(two, three), "the third line makes it due");

        assertEquals(three, journal.replay(three), "the lines over a snapshot that holds them");
        assertEquals(three, journal.replay(state), "the lines over the snapshot before them");
        journal.clear();
        assertEquals(0, Files.size(journal.file()));
        assertEquals(one, new NodeJournal(dir.resolve("n1"), 3).replay(one));

        StateStore store = new StateStore(dir.resolve("n2"), dir.resolve("shared"));
        PluginState held = PluginState.empty();
        locked(store, () -> store.save(PluginState.empty()));
        for (int i = 0; i < NodeJournal.COMPACT_AFTER; i++) {
            PluginState previous = held;
            PluginState next = held.withStaging(new Staging("hp-" + (i % 7), "/staging/" + i, WRITER));
            locked(store, () -> store.save(previous, next));
            held = next;
        }
        assertEquals(0, Files.size(dir.resolve("n2").resolve(NodeJournal.FILE_NAME)), "compacted at the limit");
        assertEquals(held.stagings(), new StateStore(dir.resolve("n2"), dir.resolve("shared")).load().stagings(),
                "the snapshot holds every change");
    }

    /** The plugin's stop closes the journal's file; a change after it (a call still finishing) opens it again. */
    @Test
    void closingReleasesTheJournalsFileAndALaterChangeIsStillKept() throws Exception {
        StateStore store = new StateStore(dir.resolve("n1"), sharedDir());
        PluginState first = PluginState.empty().withVolume(new VolumeRecord("hp-1", "one", 1024, Map.of()));
        locked(store, () -> store.save(first));
        PluginState staged = first.withStaging(new Staging("hp-1", "/staging/hp-1", WRITER));
        locked(store, () -> store.save(first, staged));
        Path journal = dir.resolve("n1").resolve(NodeJournal.FILE_NAME).toRealPath();
        assertEquals(1, openDescriptorsOf(journal), "open between changes");

        store.close();
        assertEquals(0, openDescriptorsOf(journal), "closed");

        PluginState published = staged.withNodePublication(
                new NodePublication("hp-1", "/target/a", "/staging/hp-1", false, WRITER));
        locked(store, () -> store.save(staged, published));
        assertEquals(2, Files.readString(journal).lines().count());
        assertEquals(published, new StateStore(dir.resolve("n1"), dir.resolve("shared")).load());
        store.close();
    }

    /** How many of this process's file descriptors are open on {@code file} (Linux: /proc/self/fd). */
    private static long openDescriptorsOf(Path file) throws java.io.IOException {
        try (var fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).equals(file);
                } catch (java.io.IOException gone) {
                    return false; // the listing's own descriptor, closed meanwhile
                }
            }).count();
        }
    }

    /** A save as the plugin makes it: under the shared dir's lock. */
    private static void locked(StateStore store, Runnable save) {
        java.nio.channels.FileLock lock = store.lockShared();
        try {
            save.run();
        } finally {
            store.unlock(lock);
        }
    }

    private Path sharedDir() throws java.io.IOException {
        Files.createDirectories(dir.resolve("n1"));
        Files.createDirectories(dir.resolve("n2"));
        return Files.createDirectories(dir.resolve("shared"));
    }
}
