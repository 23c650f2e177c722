package io.csiorchestrator.csi;

/**
 * The CSI remote procedures the orchestrator calls, with the service that serves each.
 */
public enum CsiRpc {
    GET_PLUGIN_INFO("GetPluginInfo", Service.IDENTITY),
    GET_PLUGIN_CAPABILITIES("GetPluginCapabilities", Service.IDENTITY),
    PROBE("Probe", Service.IDENTITY),

    CREATE_VOLUME("CreateVolume", Service.CONTROLLER),
    DELETE_VOLUME("DeleteVolume", Service.CONTROLLER),
    CONTROLLER_PUBLISH_VOLUME("ControllerPublishVolume", Service.CONTROLLER),
    CONTROLLER_UNPUBLISH_VOLUME("ControllerUnpublishVolume", Service.CONTROLLER),
    VALIDATE_VOLUME_CAPABILITIES("ValidateVolumeCapabilities", Service.CONTROLLER),
    LIST_VOLUMES("ListVolumes", Service.CONTROLLER),
    CONTROLLER_GET_CAPABILITIES("ControllerGetCapabilities", Service.CONTROLLER),
    CREATE_SNAPSHOT("CreateSnapshot", Service.CONTROLLER),
    DELETE_SNAPSHOT("DeleteSnapshot", Service.CONTROLLER),
    LIST_SNAPSHOTS("ListSnapshots", Service.CONTROLLER),
    CONTROLLER_EXPAND_VOLUME("ControllerExpandVolume", Service.CONTROLLER),
    GET_CAPACITY("GetCapacity", Service.CONTROLLER),

    NODE_STAGE_VOLUME("NodeStageVolume", Service.NODE),
    NODE_UNSTAGE_VOLUME("NodeUnstageVolume", Service.NODE),
    NODE_PUBLISH_VOLUME("NodePublishVolume", Service.NODE),
    NODE_UNPUBLISH_VOLUME("NodeUnpublishVolume", Service.NODE),
    NODE_GET_VOLUME_STATS("NodeGetVolumeStats", Service.NODE),
    NODE_GET_CAPABILITIES("NodeGetCapabilities", Service.NODE),
    NODE_GET_INFO("NodeGetInfo", Service.NODE),
    NODE_EXPAND_VOLUME("NodeExpandVolume", Service.NODE);

    /** The CSI gRPC services. */
    public enum Service { IDENTITY, CONTROLLER, NODE }

    private final String methodName;
    private final Service service;

    CsiRpc(String methodName, Service service) {
        this.methodName = methodName;
        this.service = service;
    }

    /** The method name as csi.proto spells it, e.g. {@code NodeStageVolume}. */
    public String methodName() {
        return methodName;
    }

    public Service service() {
        return service;
    }

    @Override
    public String toString() {
        return methodName;
    }
}
