package io.csiorchestrator.worker.plugin;

import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.PluginFingerprint;
import io.csiorchestrator.csi.v1.NodeServiceCapability;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.NodeInfo;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginType;
import io.csiorchestrator.worker.EventSink;
import io.csiorchestrator.worker.telemetry.Telemetry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;
import org.jboss.logging.Logger;

/**
 * Supervises one CSI plugin on this node: connects to its socket, fingerprints it (plugin info,
 * capabilities, node info, node and controller capabilities), probes it, derives its type, and
 * publishes {@code plugin-health} on every health transition and as a heartbeat, with a node event
 * per transition. Whenever the plugin becomes healthy (first time, after being unhealthy, or after
 * its socket was replaced), {@code onHealthy} is called, so the volume healer can check the
 * plugin's volumes (it calls the plugin only where a staging or publication is gone).
 */
public final class PluginSupervisor {

    private static final Logger LOG = Logger.getLogger(PluginSupervisor.class);

    /** Durations of supervision. */
    public record Timing(Duration connectTimeout, Duration probeTimeout, Duration callTimeout, int callAttempts) {
    }

    private final String pluginId;
    private final String nodeId;
    private final Path socket;
    private final PluginSettings settings;
    private final Path workerRoot;
    private final Timing timing;
    private final EventSink sink;
    private final Consumer<String> onHealthy;
    private final Clock clock;
    private final Telemetry telemetry;

    private CsiPluginClient client;
    private Object socketIdentity;
    private PluginFingerprint fingerprint;
    private CsiVolumePlugin volumes;
    private Boolean healthy;
    private boolean restartPending;
    private String description = "not checked yet";
    private boolean stopped;
    /** Where a NodeGetInfo refresh after a RESOURCE_EXHAUSTED answer runs; null: none (see {@link #refreshNodeInfoOn}). */
    private volatile java.util.concurrent.Executor refreshExecutor;
    private final java.util.concurrent.atomic.AtomicBoolean refreshing = new java.util.concurrent.atomic.AtomicBoolean();
    /** Since when nothing has answered on the socket (connect failed or UNAVAILABLE); null while it answers. */
    private java.time.Instant unreachableSince;

    public PluginSupervisor(String pluginId, String nodeId, Path socket, PluginSettings settings, Path workerRoot,
                            Timing timing, EventSink sink, Consumer<String> onHealthy, Clock clock) {
        this(pluginId, nodeId, socket, settings, workerRoot, timing, sink, onHealthy, clock, Telemetry.none());
    }

    /** With {@code telemetry}: every CSI attempt recorded as {@code csi.rpc}, every volume call traced. */
    public PluginSupervisor(String pluginId, String nodeId, Path socket, PluginSettings settings, Path workerRoot,
                            Timing timing, EventSink sink, Consumer<String> onHealthy, Clock clock, Telemetry telemetry) {
        this.telemetry = telemetry;
        this.pluginId = pluginId;
        this.nodeId = nodeId;
        this.socket = socket;
        this.settings = settings;
        this.workerRoot = workerRoot;
        this.timing = timing;
        this.sink = sink;
        this.onHealthy = onHealthy;
        this.clock = clock;
    }

    public String pluginId() {
        return pluginId;
    }

    public Path socket() {
        return socket;
    }

    public synchronized boolean healthy() {
        return Boolean.TRUE.equals(healthy) && !stopped;
    }

    public synchronized String description() {
        return description;
    }

    public synchronized Optional<PluginFingerprint> fingerprint() {
        return Optional.ofNullable(fingerprint);
    }

    public synchronized PluginType type() {
        return settings.type().orElseGet(() -> deriveType(fingerprint));
    }

    /** The plugin's services, while it is healthy. */
    public synchronized Optional<CsiVolumePlugin> volumesIfHealthy() {
        return healthy() ? Optional.ofNullable(volumes) : Optional.empty();
    }

    public synchronized boolean hasNodeService() {
        PluginType type = type();
        return type == PluginType.NODE || type == PluginType.MONOLITH;
    }

    public synchronized boolean hasControllerService() {
        PluginType type = type();
        return type == PluginType.CONTROLLER || type == PluginType.MONOLITH;
    }

    static PluginType deriveType(PluginFingerprint fp) {
        return PluginHealthReports.deriveType(fp);
    }

    private final java.util.concurrent.atomic.AtomicBoolean checking = new java.util.concurrent.atomic.AtomicBoolean();

    /** Runs {@link #check()} on {@code executor} unless a check of this plugin is still running. */
    public void checkOn(java.util.concurrent.Executor executor) {
        if (!checking.compareAndSet(false, true)) {
            return;
        }
        try {
            executor.execute(() -> {
                try {
                    check();
                } finally {
                    checking.set(false);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            checking.set(false);
        }
    }

    /** Node capabilities GET_VOLUME_STATS and VOLUME_CONDITION: the volume condition can be polled. */
    private static boolean reportsVolumeCondition(PluginFingerprint fp) {
        return fp.node().map(n -> n.capabilities().contains(NodeServiceCapability.RPC.Type.GET_VOLUME_STATS)
                && n.capabilities().contains(NodeServiceCapability.RPC.Type.VOLUME_CONDITION)).orElse(false);
    }

    /** One supervision step: (re)connect, fingerprint or probe, publish a transition. */
    public void check() {
        boolean runRestart = false;
        synchronized (this) {
            if (stopped) {
                return;
            }
            try {
                Object identity = socketIdentity();
                if (client != null && identity != null && !identity.equals(socketIdentity)) {
                    LOG.infof("socket of CSI plugin %s was replaced; reconnecting", pluginId);
                    closeClient();
                    restartPending = true;
                }
                if (client == null) {
                    client = CsiPluginClient.connect(socket, clientOptions()).await()
                            .atMost(timing.connectTimeout().plusSeconds(1));
                    socketIdentity = identity;
                    fingerprint = null;
                }
                if (fingerprint == null || !Boolean.TRUE.equals(healthy)) {
                    PluginFingerprint fp = probeClient().fingerprint().await().atMost(timing.probeTimeout().multipliedBy(6));
                    if (!fp.ready()) {
                        unreachableSince = null;
                        transition(false, "plugin answered Probe with ready=false (still starting)");
                        return;
                    }
                    fingerprint = fp;
                    volumes = new CsiVolumePlugin(pluginId, client, fp.requiresStaging(), reportsVolumeCondition(fp),
                            settings, workerRoot,
                            timing.callTimeout().multipliedBy(timing.callAttempts()).plusSeconds(30),
                            telemetry.tracing()).withSingleNodeMultiWriter(CsiVolumePlugin.advertisesSingleNodeMultiWriter(fp))
                            .onResourceExhausted(this::refreshNodeInfoSoon);
                } else {
                    Boolean ready = probeClient().probe().await().atMost(timing.probeTimeout().plusSeconds(1));
                    if (!Boolean.TRUE.equals(ready)) {
                        unreachableSince = null;
                        transition(false, "plugin answered Probe with ready=false");
                        return;
                    }
                }
                unreachableSince = null;
                boolean wasHealthy = Boolean.TRUE.equals(healthy);
                if (!wasHealthy) {
                    restartPending = true;
                }
                transition(true, "plugin is ready");
                if (restartPending) {
                    restartPending = false;
                    runRestart = true;
                }
            } catch (RuntimeException e) {
                closeClient();
                if (unreachable(e)) {
                    if (unreachableSince == null) {
                        unreachableSince = clock.instant();
                    }
                } else {
                    unreachableSince = null;
                }
                transition(false, e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
            } catch (Error e) {
                // never let an Error end the scheduled supervision silently
                LOG.errorf(e, "supervising CSI plugin %s failed", pluginId);
                closeClient();
                transition(false, "worker error while supervising the plugin: " + e);
            }
        }
        if (runRestart) {
            LOG.debugf("CSI plugin %s became healthy; checking its volumes", pluginId);
            onHealthy.accept(pluginId);
        }
    }

    /**
     * A call answered RESOURCE_EXHAUSTED ("node has reached the maximum number of attached volumes"): the limit
     * claim-service holds may be stale, so NodeGetInfo is asked again at once (Kubernetes' KEP-4876 does the same on
     * such an error), on the executor given to {@link #refreshNodeInfoOn}; one refresh at a time.
     */
    void refreshNodeInfoSoon() {
        java.util.concurrent.Executor executor = refreshExecutor;
        if (executor == null || !refreshing.compareAndSet(false, true)) {
            return;
        }
        try {
            executor.execute(() -> {
                try {
                    refreshNodeInfo();
                } finally {
                    refreshing.set(false);
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            refreshing.set(false);
        }
    }

    /** Runs the refreshes a RESOURCE_EXHAUSTED answer asks for on {@code executor}; this supervisor, for chaining. */
    public PluginSupervisor refreshNodeInfoOn(java.util.concurrent.Executor executor) {
        this.refreshExecutor = executor;
        return this;
    }

    /**
     * Issue 34: calls NodeGetInfo again on a healthy node plugin. When its max_volumes_per_node or its accessible
     * topology changed, the fingerprint takes the new answer and a plugin-health report (not a heartbeat) goes out at
     * once, so the registry publishes the plugin's status and claim-service decides claims with the new limit, no
     * restart needed. A call that fails changes nothing: the probe decides the plugin's health.
     *
     * @return whether the node's limit or topology changed
     */
    public synchronized boolean refreshNodeInfo() {
        if (stopped || client == null || fingerprint == null || fingerprint.node().isEmpty()
                || !Boolean.TRUE.equals(healthy)) {
            return false;
        }
        io.csiorchestrator.csi.v1.NodeGetInfoResponse info;
        try {
            info = probeClient().nodeGetInfo().await().atMost(timing.probeTimeout().plusSeconds(1));
        } catch (RuntimeException e) {
            LOG.debugf("NodeGetInfo of CSI plugin %s failed (the probe decides its health): %s", pluginId, e.getMessage());
            return false;
        }
        PluginFingerprint.NodeFingerprint was = fingerprint.node().get();
        java.util.Map<String, String> topology = info.getAccessibleTopology().getSegmentsMap();
        if (was.maxVolumesPerNode() == info.getMaxVolumesPerNode() && was.topology().equals(topology)) {
            return false;
        }
        LOG.infof("CSI plugin %s on node %s: NodeGetInfo now says max_volumes_per_node %d (was %d), topology %s (was %s)",
                pluginId, nodeId, info.getMaxVolumesPerNode(), was.maxVolumesPerNode(), new java.util.TreeMap<>(topology),
                new java.util.TreeMap<>(was.topology()));
        fingerprint = new PluginFingerprint(fingerprint.name(), fingerprint.vendorVersion(), fingerprint.manifest(),
                fingerprint.ready(), fingerprint.pluginCapabilities(), fingerprint.controllerCapabilities(),
                Optional.of(new PluginFingerprint.NodeFingerprint(was.nodeId(), info.getMaxVolumesPerNode(), topology,
                        was.capabilities())), fingerprint.volumeExpansion());
        sink.publish(health(true, false));
        return true;
    }

    /**
     * Since when nothing has answered on the plugin's socket: no process accepts connections on it (the socket
     * file is left behind) or every call is UNAVAILABLE. Empty while the plugin answers, even unhealthy.
     */
    public synchronized Optional<java.time.Instant> unreachableSince() {
        return Optional.ofNullable(unreachableSince);
    }

    /** Whether {@code failure} (or a cause) says nothing answers on the socket. */
    static boolean unreachable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof io.csiorchestrator.csi.CsiSocketException) {
                return true;
            }
            if (t instanceof io.csiorchestrator.csi.CsiCallException call && call.code() == io.grpc.Status.Code.UNAVAILABLE) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    /** Publishes the current state as a heartbeat. */
    public synchronized void heartbeat() {
        if (!stopped && healthy != null) {
            sink.publish(health(Boolean.TRUE.equals(healthy), true));
        }
    }

    /** Stops supervision: publishes a last unhealthy fingerprint and closes the connection. */
    public synchronized void stop(String reason) {
        stop(reason, false);
    }

    /**
     * Stops supervision of a plugin the worker removes (its socket stayed unreachable): the last unhealthy
     * fingerprint is marked {@code deregistered}, so the registry deletes the instance instead of keeping it
     * unhealthy.
     */
    public synchronized void deregister(String reason) {
        stop(reason, true);
    }

    private void stop(String reason, boolean deregistered) {
        if (stopped) {
            return;
        }
        healthy = false;
        description = reason;
        sink.publish(deregistered ? health(false, false).asDeregistered() : health(false, false));
        stopped = true;
        closeClient();
    }

    private void transition(boolean nowHealthy, String why) {
        boolean changed = healthy == null || healthy != nowHealthy;
        healthy = nowHealthy;
        description = why;
        if (!changed) {
            return;
        }
        LOG.infof("CSI plugin %s on node %s is now %s: %s", pluginId, nodeId, nowHealthy ? "healthy" : "unhealthy", why);
        sink.publish(health(nowHealthy, false));
        sink.publish(PluginHealthReports.transition(pluginId, nodeId, nowHealthy, why, socket.toString(), clock.instant()));
    }

    private PluginHealth health(boolean isHealthy, boolean heartbeat) {
        return PluginHealthReports.health(pluginId, nodeId, type(), isHealthy, description, fingerprint, heartbeat,
                clock.instant());
    }

    private CsiClientOptions clientOptions() {
        CsiClientOptions defaults = CsiClientOptions.defaults();
        return defaults.withConnectTimeout(timing.connectTimeout())
                .withAttemptListener(telemetry.metrics().csiAttempts(pluginId))
                .withRetryPolicy(defaults.retryPolicy().withMaxAttempts(timing.callAttempts())
                        .withPerAttemptTimeout(timing.callTimeout()));
    }

    private CsiPluginClient probeClient() {
        return client.withOptions(client.options().withRetryPolicy(
                client.options().retryPolicy().withMaxAttempts(1).withPerAttemptTimeout(timing.probeTimeout())));
    }

    private Object socketIdentity() {
        try {
            return Files.readAttributes(socket, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
        } catch (IOException e) {
            return null;
        }
    }

    private void closeClient() {
        if (client != null) {
            try {
                client.close();
            } catch (RuntimeException e) {
                LOG.debugf("closing the client of %s: %s", pluginId, e.getMessage());
            }
            client = null;
            volumes = null;
        }
    }
}
