package io.csiorchestrator.hostpath.state;

/** A volume staged by NodeStageVolume: the volume directory bind-mounted at the staging path. */
public record Staging(String volumeId, String stagingPath, CapabilityRecord capability) {
}
