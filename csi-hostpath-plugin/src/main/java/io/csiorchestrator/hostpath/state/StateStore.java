package io.csiorchestrator.hostpath.state;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Keeps the plugin's state in one JSON file in the state dir, written atomically: a temporary
 * file is written and fsynced, renamed over the old one, and the directory fsynced, so a crash
 * leaves either the old or the new state, never a torn one.
 */
public final class StateStore {

    public static final String FILE_NAME = "plugin-state.json";

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private final Path file;

    public StateStore(Path stateDir) {
        this.file = stateDir.resolve(FILE_NAME);
    }

    public Path file() {
        return file;
    }

    /** The saved state, or the empty state when none was saved yet. */
    public PluginState load() {
        if (!Files.exists(file)) {
            return PluginState.empty();
        }
        try {
            return JSON.readValue(file.toFile(), PluginState.class);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the plugin state " + file, e);
        }
    }

    public void save(PluginState state) {
        try {
            writeAtomically(file, JSON.writeValueAsBytes(state));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the plugin state " + file, e);
        }
    }

    /** Writes a file so that readers see the old or the new content, also across a crash. */
    public static void writeAtomically(Path target, byte[] content) throws IOException {
        Path directory = target.toAbsolutePath().getParent();
        Path temporary = directory.resolve("." + target.getFileName() + ".tmp");
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(content);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            channel.force(true);
        }
        try {
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING);
        }
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            dir.force(true);
        }
    }
}
