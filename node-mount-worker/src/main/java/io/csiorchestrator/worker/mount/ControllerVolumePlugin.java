package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.ProvisionSpec;
import io.csiorchestrator.events.ProvisionedSnapshot;
import io.csiorchestrator.events.ProvisionedVolume;
import java.util.Map;

/** The controller service of one CSI plugin hosted on this node. */
public interface ControllerVolumePlugin {

    String pluginId();

    /** ControllerPublishVolume; returns the publish context. */
    Map<String, String> controllerPublish(VolumeRequest request, String externalNodeId);

    /** ControllerUnpublishVolume; NOT_FOUND counts as done. */
    void controllerUnpublish(String externalVolumeId, String externalNodeId, Map<String, String> secrets);

    /**
     * CSI CreateVolume of {@code spec.name()} with the capability of {@code request} (its external id unused);
     * idempotent by name. A plugin without CREATE_DELETE_VOLUME answers UNIMPLEMENTED.
     */
    default ProvisionedVolume createVolume(VolumeRequest request, ProvisionSpec spec) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' cannot create volumes", false);
    }

    /** CSI DeleteVolume; NOT_FOUND counts as done (the volume is gone). */
    default void deleteVolume(String externalVolumeId, Map<String, String> secrets) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' cannot delete volumes", false);
    }

    /**
     * CSI CreateSnapshot named {@code name} of {@code externalVolumeId}; idempotent by name (the same name again
     * answers the same snapshot, so calling it again is how its {@code ready_to_use} is polled).
     */
    default ProvisionedSnapshot createSnapshot(String name, String externalVolumeId, Map<String, String> parameters,
                                               Map<String, String> secrets) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' cannot create snapshots", false);
    }

    /**
     * CSI ControllerExpandVolume of {@code externalVolumeId} to at least {@code requiredBytes} (at most
     * {@code limitBytes}, 0 = no limit); idempotent (a volume as large already answers its capacity). Returns the
     * capacity and whether the plugin asks for NodeExpandVolume on each node where the volume is published.
     */
    default ProvisionedVolume controllerExpand(String externalVolumeId, long requiredBytes, long limitBytes,
                                               Map<String, String> secrets) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' cannot expand volumes", false);
    }

    /**
     * CSI ListVolumes, one page: at most {@code maxEntries} volume ids from {@code startingToken} (null: the first
     * page), and the next page's token (null on the last page). A plugin without LIST_VOLUMES answers UNIMPLEMENTED;
     * a token the plugin no longer accepts is ABORTED (CSI).
     */
    default io.csiorchestrator.events.ListedVolumes listVolumes(String startingToken, int maxEntries) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' cannot list volumes", false);
    }

    /** CSI DeleteSnapshot; NOT_FOUND counts as done (the snapshot is gone). */
    default void deleteSnapshot(String externalSnapshotId, Map<String, String> secrets) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' cannot delete snapshots", false);
    }

    /**
     * CSI GetCapacity for volumes reachable from {@code segment} (empty: anywhere), with no parameters and the
     * plugin's default capability. A plugin without GET_CAPACITY answers UNIMPLEMENTED. Issue 34.
     */
    default io.csiorchestrator.events.CapacityFigures capacity(Map<String, String> segment) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' does not report its capacity",
                false);
    }
}
