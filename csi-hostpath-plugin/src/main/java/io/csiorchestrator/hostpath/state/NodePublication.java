package io.csiorchestrator.hostpath.state;

/**
 * A volume published by NodePublishVolume: {@code sourcePath} (the staging path, or the volume
 * directory without staging) bind-mounted at {@code targetPath}, read-only when {@code readonly}.
 */
public record NodePublication(String volumeId, String targetPath, String sourcePath, boolean readonly,
                              CapabilityRecord capability) {
}
