package io.csiorchestrator.worker.plugin;

import io.csiorchestrator.worker.mount.ControllerVolumePlugin;
import io.csiorchestrator.worker.mount.NodeVolumePlugin;
import io.csiorchestrator.worker.mount.PluginDirectory;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** The plugins of this node, by id; answers with a plugin's services only while it is healthy. */
public final class PluginRegistry implements PluginDirectory {

    private final Map<String, PluginSupervisor> supervisors = new ConcurrentHashMap<>();

    public Optional<PluginSupervisor> get(String pluginId) {
        return Optional.ofNullable(supervisors.get(pluginId));
    }

    public List<PluginSupervisor> all() {
        return List.copyOf(supervisors.values());
    }

    void put(PluginSupervisor supervisor) {
        supervisors.put(supervisor.pluginId(), supervisor);
    }

    Optional<PluginSupervisor> remove(String pluginId) {
        return Optional.ofNullable(supervisors.remove(pluginId));
    }

    @Override
    public Optional<NodeVolumePlugin> node(String pluginId) {
        PluginSupervisor s = supervisors.get(pluginId);
        if (s == null || !s.hasNodeService()) {
            return Optional.empty();
        }
        return s.volumesIfHealthy().map(v -> v);
    }

    @Override
    public Optional<ControllerVolumePlugin> controller(String pluginId) {
        PluginSupervisor s = supervisors.get(pluginId);
        if (s == null || !s.hasControllerService()) {
            return Optional.empty();
        }
        return s.volumesIfHealthy().map(v -> v);
    }
}
