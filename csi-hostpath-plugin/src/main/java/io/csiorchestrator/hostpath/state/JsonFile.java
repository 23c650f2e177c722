package io.csiorchestrator.hostpath.state;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * One JSON value in one file, written atomically ({@link StateStore#writeAtomically}); read and
 * changed only under the plugin's state lock, which with a shared dir is the shared file lock.
 */
public final class JsonFile<T> {

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private final Path file;
    private final Class<T> type;
    private final Supplier<T> empty;

    public JsonFile(Path file, Class<T> type, Supplier<T> empty) {
        this.file = file;
        this.type = type;
        this.empty = empty;
    }

    public T load() {
        try {
            return JSON.readValue(Files.readAllBytes(file), type);
        } catch (NoSuchFileException e) {
            return empty.get();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
    }

    public void save(T value) {
        try {
            StateStore.writeAtomically(file, JSON.writeValueAsBytes(value));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
    }
}
