package io.csiorchestrator.worker.state;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.SealedSecrets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MountRecordStoreTest {

    @TempDir
    Path temp;

    private static MountDone done(String commandId) {
        return new MountDone(commandId, "node-1", NodeCommandKind.MOUNT, "ns", "v1", "a1", true, null, null, Map.of(),
                "/t", "/s", Instant.parse("2026-01-01T00:00:00Z"));
    }

    private static VolumeRecord sample(WorkerPaths paths) {
        Usage usage = new Usage("a1", paths.targetPath("a1", "ns", "v1").toString(), true,
                AccessMode.values()[0], AttachmentMode.values()[0], "ext4", Map.of("k", "v"), Map.of("dev", "/dev/x"),
                new SealedSecrets("k1", SealedSecrets.ALGORITHM, "node:n1", "ZXBr", "bm9uY2U=", "Y2lwaGVy"), PublishState.PUBLISHED, "cmd-1");
        return VolumeRecord.empty(new VolumeKey("ns", "v1"), "hostpath", "ext-v1", paths.stagingPath("ns", "v1").toString())
                .withStage(StageState.STAGED)
                .withUsage(usage)
                .withControllerPublication("ext-node-1", Map.of("attached", "yes"))
                .withResult(done("c1"));
    }

    @Test
    void roundTripsEveryField() throws Exception {
        WorkerPaths paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
        MountRecordStore store = new MountRecordStore(paths);
        VolumeRecord record = sample(paths);
        store.save(record);
        MountRecordStore.Loaded loaded = new MountRecordStore(paths).loadAll();
        assertTrue(loaded.problems().isEmpty());
        VolumeRecord back = loaded.records().get(new VolumeKey("ns", "v1"));
        assertEquals(record, back);
        assertTrue(back.usage("a1").orElseThrow().readOnly());
        assertEquals("c1", back.resultFor("c1").orElseThrow().commandId());
        assertEquals(0700, new PosixDirs().mode(paths.recordsDir()));
    }

    /** fenceOnLapse of a publication survives a save and load; a record written before it was kept reads as false. */
    @Test
    void fenceOnLapseRoundTripsAndIsFalseInOlderRecords() throws Exception {
        WorkerPaths paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
        MountRecordStore store = new MountRecordStore(paths);
        Usage plain = sample(paths).usage("a1").orElseThrow();
        Usage fenced = new Usage("a2", paths.targetPath("a2", "ns", "v1").toString(), false, plain.accessMode(),
                plain.attachmentMode(), null, null, null, null, PublishState.PUBLISHED, "cmd-2", true);
        store.save(sample(paths).withUsage(fenced));
        VolumeRecord back = store.load(new VolumeKey("ns", "v1")).orElseThrow();
        assertTrue(back.usage("a2").orElseThrow().fencesOnLapse());
        assertFalse(back.usage("a1").orElseThrow().fencesOnLapse());
        assertTrue(back.usage("a2").orElseThrow().withState(PublishState.UNPUBLISHING).fencesOnLapse(),
                "a state change keeps the flag");
        String json = Files.readString(paths.recordFile("ns", "v1"));
        assertEquals(1, json.split("\"fenceOnLapse\"", -1).length - 1, "written for the fenced publication only");

        // a record as written before the flag existed: no fenceOnLapse anywhere
        Files.writeString(paths.recordFile("ns", "v1"), json.replaceAll(",\\s*\"fenceOnLapse\"\\s*:\\s*true", ""));
        VolumeRecord old = store.load(new VolumeKey("ns", "v1")).orElseThrow();
        assertFalse(old.usage("a2").orElseThrow().fencesOnLapse());
    }

    /**
     * A record's results are serialized once each, at the save that adds them, and the file still reads as Jackson
     * writes the record (the same JSON tree, results written last) and loads back equal, across saves that change its
     * states, add results beyond the bound, and drop them all.
     */
    @Test
    void eachResultIsSerializedOnceAndTheFileStaysTheRecordsJson() throws Exception {
        WorkerPaths paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
        MountRecordStore store = new MountRecordStore(paths);
        com.fasterxml.jackson.databind.ObjectMapper json = io.csiorchestrator.events.EventCodec.mapper();
        VolumeRecord record = sample(paths);
        for (int i = 0; i < VolumeRecord.MAX_RESULTS + 5; i++) {
            record = record.withResult(done("x" + i));
        }
        store.save(record);
        assertEquals(VolumeRecord.MAX_RESULTS, store.resultsSerialized(), "the results the record keeps, once each");
        assertWritten(store, paths, json, record);

        VolumeRecord staged = record.withStage(StageState.UNSTAGING);
        store.save(staged);
        assertEquals(VolumeRecord.MAX_RESULTS, store.resultsSerialized(), "a change of state serializes no result");
        assertWritten(store, paths, json, staged);

        VolumeRecord more = staged.withResult(done("y"));
        store.save(more);
        assertEquals(VolumeRecord.MAX_RESULTS + 1, store.resultsSerialized(), "one new result, one serialization");
        assertWritten(store, paths, json, more);

        VolumeRecord none = VolumeRecord.empty(new VolumeKey("ns", "v1"), "hostpath", "ext-v1", "/s");
        store.save(none);
        assertWritten(store, paths, json, none);
        // after a restart the results read back are serialized at the next save that writes them
        VolumeRecord loaded = new MountRecordStore(paths).load(new VolumeKey("ns", "v1")).orElseThrow().withResult(done("z"));
        MountRecordStore restarted = new MountRecordStore(paths);
        restarted.save(loaded);
        assertEquals(1, restarted.resultsSerialized());
        assertWritten(restarted, paths, json, loaded);
    }

    private static void assertWritten(MountRecordStore store, WorkerPaths paths, com.fasterxml.jackson.databind.ObjectMapper json,
                                      VolumeRecord record) throws Exception {
        byte[] file = Files.readAllBytes(paths.recordFile(record.namespace(), record.volumeId()));
        assertEquals(json.valueToTree(record), json.readTree(file), "the file is the record's JSON");
        assertEquals(record, store.load(record.key()).orElseThrow());
    }

    @Test
    void aTornTemporaryFileIsIgnoredOnLoad() throws Exception {
        WorkerPaths paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
        MountRecordStore store = new MountRecordStore(paths);
        VolumeRecord record = sample(paths);
        store.save(record);
        // a crash in the middle of the next save: a half-written temp file next to the record
        Path torn = paths.recordFile("ns", "v1").resolveSibling("v1.json" + AtomicFiles.TEMP_MARKER + "123");
        Files.writeString(torn, "{\"namespace\":\"ns\",\"volu");
        MountRecordStore.Loaded loaded = store.loadAll();
        assertEquals(record, loaded.records().get(new VolumeKey("ns", "v1")));
        assertTrue(loaded.problems().isEmpty());
        assertFalse(Files.exists(torn), "left-over temp files are removed");
        try (Stream<Path> files = Files.list(paths.recordFile("ns", "v1").getParent())) {
            assertEquals(1, files.count());
        }
    }

    @Test
    void anUnreadableRecordIsSetAsideAndReported() throws Exception {
        WorkerPaths paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
        MountRecordStore store = new MountRecordStore(paths);
        store.save(sample(paths));
        Files.createDirectories(paths.recordFile("ns2", "bad").getParent());
        Files.writeString(paths.recordFile("ns2", "bad"), "not json");
        MountRecordStore.Loaded loaded = store.loadAll();
        assertEquals(1, loaded.records().size());
        assertEquals(1, loaded.problems().size());
        assertTrue(Files.exists(paths.recordFile("ns2", "bad").resolveSibling("bad.json.unreadable")));
    }

    @Test
    void keepsABoundedNumberOfResults() {
        WorkerPaths paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
        VolumeRecord record = sample(paths);
        for (int i = 0; i < VolumeRecord.MAX_RESULTS + 10; i++) {
            record = record.withResult(done("x" + i));
        }
        assertEquals(VolumeRecord.MAX_RESULTS, record.results().size());
        assertTrue(record.resultFor("c1").isEmpty());
        assertTrue(record.resultFor("x" + (VolumeRecord.MAX_RESULTS + 9)).isPresent());
    }

    @Test
    void referenceCountingDecisions() {
        WorkerPaths paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
        VolumeRecord r = VolumeRecord.empty(new VolumeKey("ns", "v"), "p", "e", "/s");
        assertTrue(r.stageNeeded(true));
        assertFalse(r.stageNeeded(false));
        Usage a1 = sample(paths).usage("a1").orElseThrow();
        Usage a2 = new Usage("a2", "/t2", false, a1.accessMode(), a1.attachmentMode(), null, null, null, null,
                PublishState.PUBLISHED, "cmd-a2");
        r = r.withUsage(a1).withStage(StageState.STAGED).withUsage(a2);
        assertFalse(r.stageNeeded(true), "a second user reuses the staging");
        assertFalse(r.isLastUser("a1"));
        r = r.withoutUsage("a1");
        assertFalse(r.unstageAllowed(), "a2 still uses it");
        assertTrue(r.isLastUser("a2"));
        r = r.withoutUsage("a2");
        assertTrue(r.unstageAllowed());
        assertFalse(r.withStage(StageState.UNSTAGED).unstageAllowed());
    }
}
