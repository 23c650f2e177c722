package io.csiorchestrator.worker.state;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountDone;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The crash-safe local record of every volume on this node: one JSON file per volume under
 * {@code <root>/records/<namespace>/<volume>.json}. Each save ({@link AtomicFiles#write}) writes a
 * temporary file in the same directory, fsyncs it, renames it over the record (atomic on one file
 * system) and fsyncs the directory, so a kill -9 at any instant leaves either the old or the new record, never a torn
 * one. Leftover temporary files (a crash before the rename) are ignored and removed on load.
 */
public class MountRecordStore { // not final: tests count its writes and make one fail (VolumeOperationsTest)

    static final String SUFFIX = ".json";

    private static final byte[] RESULTS_FIELD = ",\"results\":[".getBytes(StandardCharsets.US_ASCII);

    private final WorkerPaths paths;
    private final ObjectMapper json = EventCodec.mapper();
    /**
     * Per volume, the JSON of each command result its last save wrote, by identity (results are immutable and a record's
     * changes keep the same instances): a result is serialized once, at the save that adds it, not again at every later
     * save of the volume. A record carries up to {@value VolumeRecord#MAX_RESULTS} results, about 97 % of its bytes, and
     * serializing them at every step was about a sixth of the worker's CPU under load (issue 36). Bounded like the
     * records in memory: the results of each volume's last save.
     */
    private final Map<VolumeKey, Map<MountDone, byte[]>> writtenResults = new ConcurrentHashMap<>();
    private final AtomicLong resultsSerialized = new AtomicLong();

    public MountRecordStore(WorkerPaths paths) {
        this.paths = paths;
    }

    /** The result of {@link #loadAll()}: the records, and the files that could not be read (kept aside). */
    public record Loaded(Map<VolumeKey, VolumeRecord> records, List<String> problems) {
    }

    public Loaded loadAll() throws IOException {
        Map<VolumeKey, VolumeRecord> records = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        Path dir = paths.recordsDir();
        if (!Files.isDirectory(dir)) {
            return new Loaded(records, problems);
        }
        try (DirectoryStream<Path> namespaces = Files.newDirectoryStream(dir)) {
            for (Path ns : namespaces) {
                if (!Files.isDirectory(ns)) {
                    continue;
                }
                try (DirectoryStream<Path> files = Files.newDirectoryStream(ns)) {
                    for (Path file : files) {
                        String name = file.getFileName().toString();
                        if (AtomicFiles.isTemporary(name)) {
                            Files.deleteIfExists(file);
                            continue;
                        }
                        if (!name.endsWith(SUFFIX)) {
                            continue;
                        }
                        try {
                            VolumeRecord record = json.readValue(Files.readAllBytes(file), VolumeRecord.class);
                            records.put(record.key(), record);
                        } catch (IOException | RuntimeException e) {
                            Path aside = file.resolveSibling(name + ".unreadable");
                            Files.move(file, aside, StandardCopyOption.REPLACE_EXISTING);
                            problems.add("record " + file + " could not be read (" + e.getClass().getSimpleName()
                                    + "); kept as " + aside);
                        }
                    }
                }
            }
        }
        return new Loaded(records, problems);
    }

    public Optional<VolumeRecord> load(VolumeKey key) throws IOException {
        Path file = paths.recordFile(key.namespace(), key.volumeId());
        if (!Files.exists(file)) {
            return Optional.empty();
        }
        return Optional.of(json.readValue(Files.readAllBytes(file), VolumeRecord.class));
    }

    /**
     * Writes the record atomically and durably (temp file, fsync, rename, fsync of the directory). Compact JSON: a
     * record carries its last {@value VolumeRecord#MAX_RESULTS} command results and is written at every step, and
     * the pretty printer made it about 16 KB and a sixth of the worker's CPU under load (issue 36); {@code jq .} reads
     * it for a person. Each result is serialized once ({@link #serialize}).
     */
    public void save(VolumeRecord record) throws IOException {
        Path file = paths.recordFile(record.namespace(), record.volumeId());
        paths.ensureDirectory(file.getParent());
        AtomicFiles.write(file, serialize(record));
    }

    /**
     * The record's JSON: the rest of it as Jackson writes it, then {@code "results"} last, from each result's bytes as
     * written before ({@link #writtenResults}) or serialized now. Jackson reads the fields in any order.
     */
    byte[] serialize(VolumeRecord record) throws IOException {
        VolumeKey key = record.key();
        if (record.results().isEmpty()) {
            writtenResults.remove(key);
            return json.writeValueAsBytes(record);
        }
        byte[] rest = json.writeValueAsBytes(record.withoutResults()); // {"namespace":..}: never empty
        Map<MountDone, byte[]> before = writtenResults.getOrDefault(key, Map.of());
        Map<MountDone, byte[]> now = new IdentityHashMap<>();
        ByteArrayOutputStream out = new ByteArrayOutputStream(rest.length + 512 * record.results().size());
        out.write(rest, 0, rest.length - 1);
        out.write(RESULTS_FIELD);
        for (MountDone result : record.results()) {
            byte[] bytes = before.get(result);
            if (bytes == null) {
                bytes = json.writeValueAsBytes(result);
                resultsSerialized.incrementAndGet();
            }
            if (!now.isEmpty()) {
                out.write(',');
            }
            now.put(result, bytes);
            out.write(bytes);
        }
        out.write(']');
        out.write('}');
        writtenResults.put(key, now);
        return out.toByteArray();
    }

    /** How many command results this store has serialized (each once, at the save that added it). */
    long resultsSerialized() {
        return resultsSerialized.get();
    }

    public void delete(VolumeKey key) throws IOException {
        writtenResults.remove(key);
        AtomicFiles.delete(paths.recordFile(key.namespace(), key.volumeId()));
    }
}
