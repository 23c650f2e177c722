package io.csiorchestrator.worker.mount;

import java.nio.file.Path;
import java.util.Optional;

/**
 * The node service of one CSI plugin, as the worker's operations need it. Implemented over the
 * csi-client library; every method blocks until the call (with its retries) ended and throws
 * {@link PluginCallFailure} on failure. NOT_FOUND on unstage/unpublish counts as done.
 */
public interface NodeVolumePlugin {

    String pluginId();

    /** Whether the plugin advertises STAGE_UNSTAGE_VOLUME. */
    boolean requiresStaging();

    void stage(VolumeRequest request);

    void unstage(String externalVolumeId, Path stagingPath);

    void publish(VolumeRequest request);

    void unpublish(String externalVolumeId, Path targetPath);

    /**
     * CSI NodeExpandVolume of the volume published at {@code volumePath} (staged at {@code stagingPath}, null when
     * not staged) to {@code requiredBytes}; returns the capacity the node reports (0 = unknown). FAILED_PRECONDITION
     * is never retried (csi-client's CsiRetryPolicy.neverRetried, as the CSI spec asks).
     */
    default long nodeExpand(String externalVolumeId, Path volumePath, Path stagingPath, long requiredBytes, long limitBytes) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' cannot expand volumes on nodes", false);
    }

    /** Whether NodeGetVolumeStats reports the volume's condition (node capabilities GET_VOLUME_STATS and VOLUME_CONDITION). */
    default boolean reportsVolumeCondition() {
        return false;
    }

    /**
     * The volume's condition at a path where it is published (NodeGetVolumeStats); empty when the
     * answer carries none.
     */
    default Optional<VolumeCondition> volumeCondition(String externalVolumeId, Path volumePath) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' does not report volume conditions",
                false);
    }

    /**
     * NodeGetVolumeStats at a path where the volume is published: its usage (bytes and inodes, each figure as the
     * plugin reported it) and its condition (empty when the answer carries none). Issue 34.
     */
    default VolumeStats volumeStats(String externalVolumeId, Path volumePath) {
        throw new PluginCallFailure("UNIMPLEMENTED", "CSI plugin '" + pluginId() + "' does not report volume stats",
                false);
    }
}
