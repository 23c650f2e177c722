package io.csiorchestrator.worker.state;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.events.EventCodec;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The crash-safe local record of every volume on this node: one JSON file per volume under
 * {@code <root>/records/<namespace>/<volume>.json}. Each save ({@link AtomicFiles#write}) writes a
 * temporary file in the same directory, fsyncs it, renames it over the record (atomic on one file
 * system) and fsyncs the directory, so a kill -9 at any instant leaves either the old or the new record, never a torn
 * one. Leftover temporary files (a crash before the rename) are ignored and removed on load.
 */
public class MountRecordStore { // not final: tests count its writes and make one fail (VolumeOperationsTest)

    static final String SUFFIX = ".json";

    private final WorkerPaths paths;
    private final ObjectMapper json = EventCodec.mapper();

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
     * it for a person.
     */
    public void save(VolumeRecord record) throws IOException {
        Path file = paths.recordFile(record.namespace(), record.volumeId());
        paths.ensureDirectory(file.getParent());
        AtomicFiles.write(file, json.writeValueAsBytes(record));
    }

    public void delete(VolumeKey key) throws IOException {
        AtomicFiles.delete(paths.recordFile(key.namespace(), key.volumeId()));
    }
}
