package io.csiorchestrator.hostpath;

import io.csiorchestrator.csi.v1.VolumeCondition;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;

/** The volumes' directories: {@code <state-dir>/volumes/<volume-id>}. */
final class VolumeDirectories {

    /** A file whose presence in a volume's directory makes its condition abnormal (tests write it). */
    static final String ABNORMAL_MARKER = ".csi-condition-abnormal";

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

    /**
     * The volume's condition, as NodeGetVolumeStats reports it (VOLUME_CONDITION): abnormal while
     * the file {@link #ABNORMAL_MARKER} exists in the volume's directory, with its first line
     * (at most 256 characters) as the message; normal otherwise.
     */
    VolumeCondition condition(String volumeId) {
        Path marker = of(volumeId).resolve(ABNORMAL_MARKER);
        if (!Files.isRegularFile(marker, LinkOption.NOFOLLOW_LINKS)) {
            return VolumeCondition.newBuilder().setAbnormal(false).setMessage("volume " + volumeId + " is healthy").build();
        }
        String message;
        try (var lines = Files.lines(marker)) {
            message = lines.findFirst().map(String::strip).filter(l -> !l.isEmpty()).orElse("marked abnormal");
        } catch (IOException | java.io.UncheckedIOException e) {
            message = "marked abnormal";
        }
        return VolumeCondition.newBuilder().setAbnormal(true)
                .setMessage(message.length() > 256 ? message.substring(0, 256) : message).build();
    }

    Path create(String volumeId) throws IOException {
        return Files.createDirectories(of(volumeId));
    }

    /** Deletes a volume's directory and everything in it, without following symbolic links. */
    void delete(String volumeId) throws IOException {
        deleteTree(of(volumeId));
    }

    /** Deletes a directory and everything in it, without following symbolic links; nothing when absent. */
    static void deleteTree(Path directory) throws IOException {
        if (!Files.exists(directory, LinkOption.NOFOLLOW_LINKS)) {
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
