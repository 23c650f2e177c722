package io.csiorchestrator.worker.state;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A path under the worker's root that must not be used: one of its components is a symbolic link
 * (the worker never makes links under its root, so one there was planted) or something other than
 * a directory where a directory belongs. Nothing is mounted, created or chmodded through it.
 */
public final class UnsafePathException extends IOException {

    private final Path path;

    public UnsafePathException(Path path, String message) {
        super(message);
        this.path = path;
    }

    /** The path that was refused (the one asked about, not the component that made it unsafe). */
    public Path path() {
        return path;
    }
}
