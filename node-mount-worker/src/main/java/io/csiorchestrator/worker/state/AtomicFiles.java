package io.csiorchestrator.worker.state;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.UUID;

/**
 * Crash-safe file writes shared by the worker's on-disk state (mount records, the event spool):
 * a temporary file in the same directory ({@code <name>.tmp-<uuid>}), fsync, atomic rename over
 * the target, fsync of the directory. A kill -9 at any instant leaves the old file or the new
 * one, never a torn one; a leftover temporary file (a crash before the rename) is recognised by
 * {@link #isTemporary} and removed by the reader.
 */
public final class AtomicFiles {

    static final String TEMP_MARKER = ".tmp-";

    private AtomicFiles() {
    }

    /** Whether {@code fileName} is a temporary file left by an interrupted {@link #write}. */
    public static boolean isTemporary(String fileName) {
        return fileName.contains(TEMP_MARKER);
    }

    /** Writes {@code bytes} to {@code file} atomically and durably (its directory must exist). */
    public static void write(Path file, byte[] bytes) throws IOException {
        Path dir = file.getParent();
        Path temp = dir.resolve(file.getFileName() + TEMP_MARKER + UUID.randomUUID());
        try {
            try (FileChannel ch = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer buffer = ByteBuffer.wrap(bytes);
                while (buffer.hasRemaining()) {
                    ch.write(buffer);
                }
                ch.force(true);
            }
            try {
                Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("the directory " + dir + " does not support atomic rename", e);
            }
        } finally {
            Files.deleteIfExists(temp);
        }
        fsyncDirectory(dir);
    }

    /** Deletes {@code file} durably (fsync of its directory); false when it did not exist. */
    public static boolean delete(Path file) throws IOException {
        if (Files.deleteIfExists(file)) {
            fsyncDirectory(file.getParent());
            return true;
        }
        return false;
    }

    /** Makes the directory's entries (creations, renames, deletions) durable. */
    public static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }
}
