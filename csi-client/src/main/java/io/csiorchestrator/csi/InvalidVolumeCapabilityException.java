package io.csiorchestrator.csi;

/** A volume capability cannot be built from what was asked. The message never holds a mount flag's value. */
public final class InvalidVolumeCapabilityException extends IllegalArgumentException {

    public InvalidVolumeCapabilityException(String message) {
        super(message);
    }
}
