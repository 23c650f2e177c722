package io.csiorchestrator.worker.mount;

import java.nio.file.Path;

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
}
