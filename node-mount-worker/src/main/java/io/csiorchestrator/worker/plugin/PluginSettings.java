package io.csiorchestrator.worker.plugin;

import io.csiorchestrator.events.PluginType;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Properties;

/**
 * Optional settings of one plugin, read from {@code <plugins-dir>/<plugin-id>/plugin.properties}:
 * <ul>
 *   <li>{@code type} = controller | node | monolith: overrides the type derived from the capabilities;</li>
 *   <li>{@code container-root}: where the worker's root directory appears inside the plugin's
 *       container, when it differs from the host path; staging and target paths are translated
 *       to it in every call.</li>
 * </ul>
 */
public record PluginSettings(Optional<PluginType> type, Optional<Path> containerRoot) {

    public static final String FILE = "plugin.properties";
    public static final PluginSettings DEFAULTS = new PluginSettings(Optional.empty(), Optional.empty());

    public static PluginSettings read(Path pluginDir) {
        Path file = pluginDir.resolve(FILE);
        if (!Files.isRegularFile(file)) {
            return DEFAULTS;
        }
        Properties props = new Properties();
        try (Reader reader = Files.newBufferedReader(file)) {
            props.load(reader);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read plugin settings " + file + ": " + e.getMessage(), e);
        }
        Optional<PluginType> type = Optional.ofNullable(props.getProperty("type")).map(String::trim)
                .filter(s -> !s.isEmpty()).map(PluginType::fromWire);
        Optional<Path> root = Optional.ofNullable(props.getProperty("container-root")).map(String::trim)
                .filter(s -> !s.isEmpty()).map(Path::of);
        root.ifPresent(r -> {
            if (!r.isAbsolute()) {
                throw new IllegalArgumentException("container-root in " + file + " must be absolute, was '" + r + "'");
            }
        });
        return new PluginSettings(type, root.map(Path::normalize));
    }

    /** {@code hostPath} (under {@code workerRoot}) as the plugin sees it. */
    public Path translate(Path workerRoot, Path hostPath) {
        if (hostPath == null || containerRoot.isEmpty()) {
            return hostPath;
        }
        Path relative = workerRoot.relativize(hostPath.normalize());
        if (relative.startsWith("..")) {
            throw new IllegalArgumentException("path " + hostPath + " is outside the worker's root " + workerRoot);
        }
        return containerRoot.get().resolve(relative);
    }
}
