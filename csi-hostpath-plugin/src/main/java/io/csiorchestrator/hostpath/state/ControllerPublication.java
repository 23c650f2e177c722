package io.csiorchestrator.hostpath.state;

/** A volume made available to a node by ControllerPublishVolume. */
public record ControllerPublication(String volumeId, String nodeId, boolean readonly, CapabilityRecord capability) {
}
