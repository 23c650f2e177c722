package io.csiorchestrator.hostpath.fence;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.csiorchestrator.hostpath.state.StateStore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * {@code fences.json} beside the controller state ({@code <shared-dir>} with a shared dir, else the
 * state dir), so every process of the plugin on this machine sees the same fences. Written atomically
 * ({@link StateStore#writeAtomically}); changed only under the plugin's state lock, read without it.
 */
public final class FenceStore {

    public static final String FILE_NAME = "fences.json";

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private final Path file;

    public FenceStore(Path directory) {
        this.file = directory.resolve(FILE_NAME);
    }

    public Path file() {
        return file;
    }

    public FenceBook load() {
        try {
            return JSON.readValue(Files.readAllBytes(file), FenceBook.class);
        } catch (NoSuchFileException e) {
            return FenceBook.empty();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the fences " + file, e);
        }
    }

    public void save(FenceBook book) {
        try {
            StateStore.writeAtomically(file, JSON.writeValueAsBytes(book));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the fences " + file, e);
        }
    }
}
