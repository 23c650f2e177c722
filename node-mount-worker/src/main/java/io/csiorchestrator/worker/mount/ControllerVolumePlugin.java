package io.csiorchestrator.worker.mount;

import java.util.Map;

/** The controller service of one CSI plugin hosted on this node. */
public interface ControllerVolumePlugin {

    String pluginId();

    /** ControllerPublishVolume; returns the publish context. */
    Map<String, String> controllerPublish(VolumeRequest request, String externalNodeId);

    /** ControllerUnpublishVolume; NOT_FOUND counts as done. */
    void controllerUnpublish(String externalVolumeId, String externalNodeId, Map<String, String> secrets);
}
