package io.csiorchestrator.worker.kafka;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The event spool on a plain directory: order, headers, deletion, corrupt files, sequence numbers. */
class EventSpoolTest {

    @TempDir
    Path temp;

    private WorkerPaths paths() {
        return new WorkerPaths(temp.resolve("root"), new PosixDirs());
    }

    private static ProducerRecord<String, byte[]> record(int n) {
        RecordHeaders headers = new RecordHeaders();
        headers.add("ce_id", ("id-" + n).getBytes(StandardCharsets.UTF_8));
        headers.add("ce_type", "io.csiorchestrator.node-event".getBytes(StandardCharsets.UTF_8));
        headers.add("traceparent", ("00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333" + n + "-01")
                .getBytes(StandardCharsets.UTF_8));
        headers.add("tracestate", "csi=spool".getBytes(StandardCharsets.UTF_8));
        headers.add("binary", new byte[] {0, (byte) 0xff, (byte) n});
        headers.add("empty", null);
        return new ProducerRecord<>("node-events", null, null, n == 2 ? null : "node-" + n,
                ("{\"n\":" + n + "}").getBytes(StandardCharsets.UTF_8), headers);
    }

    private static List<String> headerDump(ProducerRecord<String, byte[]> record) {
        List<String> dump = new ArrayList<>();
        for (Header h : record.headers()) {
            dump.add(h.key() + "=" + (h.value() == null ? "null" : java.util.Arrays.toString(h.value())));
        }
        return dump;
    }

    private static List<String> names(Path dir) throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(f -> f.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void recordsAreReadBackInSequenceOrderWithAllTheirHeaders() throws Exception {
        WorkerPaths paths = paths();
        EventSpool spool = EventSpool.open(paths);
        assertEquals(paths.eventsDir(), spool.directory());
        assertEquals(PosixDirs.OWNER_ONLY, new PosixDirs().mode(paths.eventsDir()), "events/ is owner-only like records/");
        List<Long> sequences = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            sequences.add(spool.write(record(i)));
        }
        assertEquals("00000000000000000001.json", spool.fileOf(sequences.get(0)).getFileName().toString());

        List<EventSpool.Spooled> loaded = EventSpool.open(paths).loadAll();
        assertEquals(12, loaded.size());
        for (int i = 0; i < 12; i++) {
            EventSpool.Spooled s = loaded.get(i);
            ProducerRecord<String, byte[]> expected = record(i);
            assertEquals(sequences.get(i), s.sequence(), "sequence order (also past 10: not a string sort of numbers)");
            assertEquals("node-events", s.record().topic());
            assertEquals(expected.key(), s.record().key());
            assertArrayEquals(expected.value(), s.record().value());
            assertEquals(headerDump(expected), headerDump(s.record()), "every header, in order, with its bytes");
            assertNull(s.record().partition());
        }
    }

    @Test
    void aDeletedRecordIsGone() throws Exception {
        EventSpool spool = EventSpool.open(paths());
        long first = spool.write(record(0));
        long second = spool.write(record(1));
        spool.delete(first);
        assertFalse(Files.exists(spool.fileOf(first)));
        List<EventSpool.Spooled> loaded = spool.loadAll();
        assertEquals(List.of(second), loaded.stream().map(EventSpool.Spooled::sequence).toList());
        spool.delete(first); // already gone: no error
        spool.delete(second);
        assertEquals(List.of(), names(spool.directory()));
    }

    @Test
    void aCorruptFileIsSetAsideAndTheOthersStillLoad() throws Exception {
        EventSpool spool = EventSpool.open(paths());
        long a = spool.write(record(0));
        long b = spool.write(record(1));
        long c = spool.write(record(2));
        long d = spool.write(record(3));
        Files.writeString(spool.fileOf(b), "{\"spool\":1,\"topic\":\"node-ev");
        Files.writeString(spool.fileOf(c), "{\"spool\":1,\"key\":\"k\",\"headers\":[],\"value\":null}");
        Path leftover = spool.directory().resolve(spool.fileOf(d).getFileName() + ".tmp-123");
        Files.writeString(leftover, "{\"spool\"");

        List<EventSpool.Spooled> loaded = EventSpool.open(paths()).loadAll();
        assertEquals(List.of(a, d), loaded.stream().map(EventSpool.Spooled::sequence).toList());
        assertEquals("node-3", loaded.get(1).record().key());
        assertTrue(Files.exists(spool.fileOf(b).resolveSibling(spool.fileOf(b).getFileName() + ".corrupt")));
        assertTrue(Files.exists(spool.fileOf(c).resolveSibling(spool.fileOf(c).getFileName() + ".corrupt")));
        assertFalse(Files.exists(leftover), "a leftover temporary file is removed");
        assertEquals(List.of("00000000000000000001.json", "00000000000000000002.json.corrupt",
                "00000000000000000003.json.corrupt", "00000000000000000004.json"), names(spool.directory()));
        // set aside once: the next load sees the same two records and nothing new
        assertEquals(List.of(a, d), spool.loadAll().stream().map(EventSpool.Spooled::sequence).toList());
    }

    @Test
    void theSequenceContinuesAfterTheHighestExistingFile() throws Exception {
        EventSpool spool = EventSpool.open(paths());
        spool.write(record(0));
        spool.write(record(1));
        long third = spool.write(record(2));
        spool.delete(third);
        assertEquals(3, EventSpool.open(paths()).write(record(3)), "continues after 2 (3 was deleted, so is free)");
        Files.writeString(spool.directory().resolve("00000000000000000041.json.corrupt"), "x");
        EventSpool reopened = EventSpool.open(paths());
        assertEquals(42, reopened.write(record(4)), "never reuses the number of a file set aside");
        assertEquals(43, reopened.write(record(5)));
        assertEquals(List.of(1L, 2L, 3L, 42L, 43L),
                reopened.loadAll().stream().map(EventSpool.Spooled::sequence).toList());
    }
}
