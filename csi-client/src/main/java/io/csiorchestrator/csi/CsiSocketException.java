package io.csiorchestrator.csi;

import java.nio.file.Path;

/** The CSI plugin's unix socket cannot be opened. The message names the socket and what to check. */
public final class CsiSocketException extends RuntimeException {

    private final Path socketPath;

    public CsiSocketException(Path socketPath, String detail, Throwable cause) {
        super("failed to open CSI socket " + socketPath
                + ": check that the plugin runs and that this process may access the socket"
                + (detail == null || detail.isBlank() ? "" : " (" + detail + ")"), cause);
        this.socketPath = socketPath;
    }

    public Path socketPath() {
        return socketPath;
    }
}
