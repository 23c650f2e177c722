package io.csiorchestrator.hostpath.state;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Keeps the plugin's state in one JSON file in the state dir, written atomically: a temporary
 * file is written and fsynced, renamed over the old one, and the directory fsynced, so a crash
 * leaves either the old or the new state, never a torn one.
 *
 * <p>With a shared dir, the controller half (volumes, controller publications) lives in
 * {@code <shared-dir>/controller-state.json}, shared by the plugin's processes on every node, and
 * only the node half (stagings, node publications) in the state dir; each half is written only
 * when it changed. Processes sharing the dir serialize their operations with {@link #lockShared()}.
 */
public final class StateStore {

    public static final String FILE_NAME = "plugin-state.json";
    public static final String SHARED_FILE_NAME = "controller-state.json";
    public static final String SHARED_LOCK_NAME = "controller-state.lock";

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private final Path file;
    private final Path sharedFile;
    private final Path sharedLock;

    public StateStore(Path stateDir) {
        this(stateDir, null);
    }

    /** {@code sharedDir} may be null: then everything is in the state dir. */
    public StateStore(Path stateDir, Path sharedDir) {
        this.file = stateDir.resolve(FILE_NAME);
        this.sharedFile = sharedDir == null ? null : sharedDir.resolve(SHARED_FILE_NAME);
        this.sharedLock = sharedDir == null ? null : sharedDir.resolve(SHARED_LOCK_NAME);
    }

    public boolean shared() {
        return sharedFile != null;
    }

    /**
     * Takes the lock every process sharing the dir holds while it reads and changes the state (a
     * POSIX record lock: released by the kernel when the process dies); null without a shared dir.
     */
    public FileLock lockShared() {
        if (sharedLock == null) {
            return null;
        }
        try {
            FileChannel channel = FileChannel.open(sharedLock, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            try {
                return channel.lock();
            } catch (IOException | RuntimeException e) {
                channel.close();
                throw e;
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot lock the shared plugin state " + sharedLock, e);
        }
    }

    /** Releases a lock from {@link #lockShared()} and closes its file. */
    public static void unlock(FileLock lock) {
        if (lock == null) {
            return;
        }
        try (FileChannel channel = lock.channel()) {
            lock.release();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unlock the shared plugin state", e);
        }
    }

    public Path file() {
        return file;
    }

    /** The saved state, or the empty state when none was saved yet. */
    public PluginState load() {
        PluginState local = read(file);
        if (sharedFile == null) {
            return local;
        }
        PluginState shared = read(sharedFile);
        return new PluginState(shared.volumes(), shared.controllerPublications(), local.stagings(),
                local.nodePublications());
    }

    public void save(PluginState state) {
        save(null, state);
    }

    /** Saves {@code next}; with a shared dir, only the halves that differ from {@code previous}. */
    public void save(PluginState previous, PluginState next) {
        if (sharedFile == null) {
            write(file, next);
            return;
        }
        if (previous == null || !previous.volumes().equals(next.volumes())
                || !previous.controllerPublications().equals(next.controllerPublications())) {
            write(sharedFile, new PluginState(next.volumes(), next.controllerPublications(), null, null));
        }
        if (previous == null || !previous.stagings().equals(next.stagings())
                || !previous.nodePublications().equals(next.nodePublications())) {
            write(file, new PluginState(null, null, next.stagings(), next.nodePublications()));
        }
    }

    private static PluginState read(Path path) {
        if (!Files.exists(path)) {
            return PluginState.empty();
        }
        try {
            return JSON.readValue(path.toFile(), PluginState.class);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the plugin state " + path, e);
        }
    }

    private static void write(Path path, PluginState state) {
        try {
            writeAtomically(path, JSON.writeValueAsBytes(state));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the plugin state " + path, e);
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
