package io.csiorchestrator.simulator;

import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.worker.CommandHandler;
import io.csiorchestrator.worker.EventSink;
import io.csiorchestrator.worker.mount.ControllerVolumePlugin;
import io.csiorchestrator.worker.mount.NodeVolumePlugin;
import io.csiorchestrator.worker.mount.PluginDirectory;
import io.csiorchestrator.worker.mount.SecretOpener;
import io.csiorchestrator.worker.mount.VolumeOperations;
import io.csiorchestrator.worker.plugin.PluginHealthReports;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import io.opentelemetry.context.Context;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One simulated node without its Kafka clients: the worker's own {@link VolumeOperations} (commands,
 * reference counting, the crash-safe record in {@link MountRecordStore} under {@code root}) and
 * {@link CommandHandler} over a {@link SimulatedPlugin} in place of the plugin process, and what the worker's
 * plugin supervision reports for it ({@link PluginHealthReports}): a health transition with its node event when
 * the node starts, heartbeats, a last unhealthy report when it stops. Every event goes to {@code sink};
 * {@link NodeFleet} connects it to Kafka.
 */
public final class SimulatedNode {

    /** {@code ce_source} of every record the simulator writes. */
    public static final String SOURCE = "/node-simulator";

    private final String nodeId;
    private final WorkerPaths paths;
    private final SimulatedPlugin plugin;
    private final EventSink sink;
    private final Clock clock;
    private final VolumeOperations operations;
    private final CommandHandler handler;

    public SimulatedNode(String nodeId, Path root, SimulatedPlugin plugin, SecretOpener secrets, EventSink sink,
                         Clock clock) throws IOException {
        this.nodeId = PathSafeId.require("node id", nodeId);
        Files.createDirectories(root);
        // the plugin's mount table holds real paths: resolve links once, nothing below the root is a link
        this.paths = new WorkerPaths(root.toRealPath(), new PosixDirs());
        this.plugin = plugin;
        this.sink = sink;
        this.clock = clock;
        PluginDirectory directory = new PluginDirectory() {
            @Override
            public Optional<NodeVolumePlugin> node(String pluginId) {
                return pluginId.equals(plugin.pluginId()) ? Optional.of(plugin) : Optional.empty();
            }

            @Override
            public Optional<ControllerVolumePlugin> controller(String pluginId) {
                return pluginId.equals(plugin.pluginId()) ? Optional.of(plugin) : Optional.empty();
            }
        };
        // node events of a command are emitted on the volume thread inside the command's context, as in the worker
        this.operations = new VolumeOperations(nodeId, paths, new MountRecordStore(paths), directory,
                plugin::mountTable, secrets, event -> sink.publish(event, Context.current()), clock);
        this.handler = new CommandHandler(operations, clock);
    }

    public String nodeId() {
        return nodeId;
    }

    public WorkerPaths paths() {
        return paths;
    }

    public SimulatedPlugin plugin() {
        return plugin;
    }

    /** The {@code CommandConsumer}'s handler: the worker's. */
    public CommandHandler handler() {
        return handler;
    }

    public VolumeOperations operations() {
        return operations;
    }

    /**
     * Loads the records a previous run left (an unreadable one is set aside and reported, as the worker does)
     * and gives the plugin back the mounts they hold: a node's mounts outlive its worker. Nothing is verified
     * or healed (the worker's restore is not simulated).
     */
    public void open() throws IOException {
        paths.ensureDirectory(paths.recordsDir());
        for (String problem : operations.load()) {
            sink.publish(new NodeEvent(nodeId, null, NodeEventKind.RESTORE, "Unreadable mount record", null, null,
                    null, null, false, problem, Map.of(), clock.instant()));
        }
        for (VolumeRecord record : operations.records().values()) {
            if (record.stage() == StageState.STAGED) {
                plugin.restoreMount(Path.of(record.stagingPath()), false);
            }
            for (Usage usage : record.users()) {
                if (usage.state() == PublishState.PUBLISHED) {
                    plugin.restoreMount(Path.of(usage.targetPath()), usage.readOnly());
                }
            }
        }
    }

    /** The plugin became healthy: its {@code plugin-health} transition and the node event, as the supervisor sends them. */
    public void announce() {
        sink.publish(health(true, false, "plugin is ready"));
        sink.publish(PluginHealthReports.transition(plugin.pluginId(), nodeId, true, "plugin is ready",
                "simulated:" + plugin.pluginId(), clock.instant()));
    }

    /** The periodic {@code plugin-health} heartbeat. */
    public void heartbeat() {
        sink.publish(health(true, true, "plugin is ready"));
    }

    /** The node stops: the last fingerprint, unhealthy, as the supervisor sends it on shutdown. */
    public void retire() {
        sink.publish(health(false, false, "node simulator stopped"));
    }

    PluginHealth health(boolean healthy, boolean heartbeat, String description) {
        return PluginHealthReports.health(plugin.pluginId(), nodeId,
                PluginHealthReports.deriveType(plugin.fingerprint()), healthy, description, plugin.fingerprint(),
                heartbeat, clock.instant());
    }

    /** Volume records of this node (for tests and the README's claims). */
    public List<VolumeRecord> records() {
        return List.copyOf(operations.records().values());
    }
}
