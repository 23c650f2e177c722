package io.csiorchestrator.worker.plugin;

import io.csiorchestrator.csi.PluginFingerprint;
import io.csiorchestrator.csi.v1.ControllerServiceCapability;
import io.csiorchestrator.events.CapacityFigures;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.worker.EventSink;
import io.csiorchestrator.worker.mount.ControllerVolumePlugin;
import io.csiorchestrator.worker.mount.PluginCallFailure;
import io.opentelemetry.context.Context;
import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.BiFunction;
import org.jboss.logging.Logger;

/**
 * The capacity of the plugins whose controller instance runs on this node (issue 34 item 2): for each healthy one that
 * advertises GET_CAPACITY, GetCapacity for the node's accessible topology segment (NodeGetInfo's; none for a
 * controller-only plugin: "anywhere"), with no parameters (the services have no volume classes whose parameter sets
 * could be asked about), sent as a {@code capacity} node event for claim-service's {@code CapacityView}.
 * <ul>
 *   <li>{@link #pluginHealthy} when a plugin becomes healthy, so that the first figures do not wait for the period;</li>
 *   <li>{@link #poll()} on the worker's capacity timer reports every such plugin, changed or not: a claim-service that
 *       restarted (it holds capacity in memory only) learns it again within one period.</li>
 *   <li>{@link #afterProvisioning} wraps the command handler: after a create-volume, delete-volume or
 *       controller-expand that succeeded, the plugin's capacity is asked again off the volume thread and reported
 *       when it changed.</li>
 * </ul>
 * A failed call is logged and asked again at the next occasion. No plugin with GET_CAPACITY: a poll reads the
 * registry and stops.
 */
public final class CapacityReporter {

    private static final Logger LOG = Logger.getLogger(CapacityReporter.class);
    private static final Set<NodeCommandKind> CHANGING = Set.of(NodeCommandKind.CREATE_VOLUME,
            NodeCommandKind.DELETE_VOLUME, NodeCommandKind.CONTROLLER_EXPAND);

    private final String nodeId;
    private final PluginRegistry registry;
    private final EventSink events;
    private final Executor executor;
    private final Clock clock;
    private final Map<String, CapacityFigures> last = new ConcurrentHashMap<>();

    /** @param executor where the calls run (never a volume thread, nor the scheduler's) */
    public CapacityReporter(String nodeId, PluginRegistry registry, EventSink events, Executor executor, Clock clock) {
        this.nodeId = nodeId;
        this.registry = registry;
        this.events = events;
        this.executor = executor;
        this.clock = clock;
    }

    /** The periodic pass: every plugin with GET_CAPACITY whose controller is healthy here, reported changed or not. */
    public void poll() {
        for (PluginSupervisor supervisor : registry.all()) {
            String pluginId = supervisor.pluginId();
            try {
                executor.execute(() -> ask(pluginId, true)); // off the scheduler: a slow plugin holds no timer
            } catch (java.util.concurrent.RejectedExecutionException stopping) {
                return;
            }
        }
        last.keySet().retainAll(registry.all().stream().map(PluginSupervisor::pluginId).toList());
    }

    /**
     * A plugin became healthy (first time, again, or with a new socket): its capacity is asked now, off the calling
     * thread, and reported, so that claim-service knows it without waiting for the period.
     */
    public void pluginHealthy(String pluginId) {
        try {
            executor.execute(() -> ask(pluginId, true));
        } catch (java.util.concurrent.RejectedExecutionException stopping) {
            LOG.debugf("capacity of %s not asked: the worker stops", pluginId);
        }
    }

    /** {@code handler} followed, for a provisioning command that succeeded, by a capacity check of its plugin. */
    public BiFunction<NodeCommand, Context, MountDone> afterProvisioning(
            BiFunction<NodeCommand, Context, MountDone> handler) {
        return (command, cause) -> {
            MountDone done = handler.apply(command, cause);
            if (done.succeeded() && CHANGING.contains(command.kind())) {
                try {
                    executor.execute(() -> ask(command.pluginId(), false));
                } catch (java.util.concurrent.RejectedExecutionException stopping) {
                    LOG.debugf("capacity of %s not asked: the worker stops", command.pluginId());
                }
            }
            return done;
        };
    }

    /** The last capacity reported of a plugin (tests). */
    public Optional<CapacityFigures> last(String pluginId) {
        return Optional.ofNullable(last.get(pluginId));
    }

    private void ask(String pluginId, boolean always) {
        Optional<PluginSupervisor> supervisor = registry.get(pluginId);
        Optional<PluginFingerprint> fp = supervisor.flatMap(PluginSupervisor::fingerprint)
                .filter(f -> f.controllerCapabilities().contains(ControllerServiceCapability.RPC.Type.GET_CAPACITY));
        Optional<ControllerVolumePlugin> controller = registry.controller(pluginId);
        if (fp.isEmpty() || controller.isEmpty()) {
            return;
        }
        Map<String, String> segment = fp.get().node().map(PluginFingerprint.NodeFingerprint::topology).orElse(Map.of());
        // the event's time is when the plugin was asked: its figures are of that moment or later, never of before it
        // (stamped after the answer, a figure the plugin took before a write could carry a time after that write)
        Instant asked = clock.instant();
        CapacityFigures figures;
        try {
            figures = controller.get().capacity(segment);
        } catch (PluginCallFailure f) {
            LOG.debugf("capacity of %s: %s", pluginId, f.getMessage());
            return;
        }
        CapacityFigures before = last.put(pluginId, figures);
        if (always || !figures.equals(before)) {
            LOG.debugf("capacity of %s in %s: %d bytes available", pluginId, segment, figures.availableBytes());
            events.publish(new NodeEvent(nodeId, null, NodeEventKind.CAPACITY, "Capacity", pluginId, null, null, null,
                    null, null, figures.toDetails(), asked));
        }
    }
}
