package io.csiorchestrator.worker.state;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.events.EventCodec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;

/**
 * The node's last fence ({@link FenceRecord}) in {@code <root>/fence.json}, replaced atomically and durably
 * ({@link AtomicFiles}). An unreadable file is set aside as {@code fence.json.unreadable} and the load fails with the
 * reason (the caller reports it).
 */
public final class FenceRecordStore {

    public static final String FILE_NAME = "fence.json";

    private final Path file;
    private final ObjectMapper json = EventCodec.mapper();

    public FenceRecordStore(WorkerPaths paths) {
        this.file = paths.root().resolve(FILE_NAME);
    }

    public Path file() {
        return file;
    }

    public synchronized Optional<FenceRecord> load() throws IOException {
        if (!Files.exists(file)) {
            return Optional.empty();
        }
        try {
            return Optional.of(json.readValue(Files.readAllBytes(file), FenceRecord.class));
        } catch (IOException | RuntimeException e) {
            Path aside = file.resolveSibling(FILE_NAME + ".unreadable");
            Files.move(file, aside, StandardCopyOption.REPLACE_EXISTING);
            throw new IOException("fence record " + file + " could not be read (" + e.getClass().getSimpleName()
                    + "); kept as " + aside, e);
        }
    }

    public synchronized void save(FenceRecord record) throws IOException {
        AtomicFiles.write(file, json.writerWithDefaultPrettyPrinter().writeValueAsBytes(record));
    }
}
