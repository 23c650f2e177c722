package io.csiorchestrator.worker.mount;

import java.util.Optional;

/** The plugins running on this node that are healthy right now. */
public interface PluginDirectory {

    Optional<NodeVolumePlugin> node(String pluginId);

    Optional<ControllerVolumePlugin> controller(String pluginId);
}
