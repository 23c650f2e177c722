package io.csiorchestrator.worker.mount;

/**
 * A volume's condition as its node plugin reports it in NodeGetVolumeStats (CSI VOLUME_CONDITION).
 *
 * @param abnormal whether the plugin says the volume is abnormal
 * @param message  the plugin's message, human readable (may be shown to operators)
 */
public record VolumeCondition(boolean abnormal, String message) {

    public VolumeCondition {
        message = message == null ? "" : message;
    }
}
