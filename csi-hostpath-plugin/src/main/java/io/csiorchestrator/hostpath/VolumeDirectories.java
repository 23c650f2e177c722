package io.csiorchestrator.hostpath;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;

/** The volumes' directories: {@code <state-dir>/volumes/<volume-id>}. */
final class VolumeDirectories {

    private final Path root;

    VolumeDirectories(Path stateDir) {
        this.root = stateDir.resolve("volumes");
    }

    Path root() {
        return root;
    }

    Path of(String volumeId) {
        return root.resolve(volumeId);
    }

    Path create(String volumeId) throws IOException {
        return Files.createDirectories(of(volumeId));
    }

    /** Deletes a volume's directory and everything in it, without following symbolic links. */
    void delete(String volumeId) throws IOException {
        Path directory = of(volumeId);
        if (!Files.exists(directory)) {
            return;
        }
        Files.walkFileTree(directory, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException failure) throws IOException {
                if (failure != null) {
                    throw failure;
                }
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
