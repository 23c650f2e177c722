package io.csiorchestrator.worker;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.SecretKeyring;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.worker.kafka.CommandConsumer;
import io.csiorchestrator.worker.kafka.EventSpool;
import io.csiorchestrator.worker.kafka.KafkaEventPublisher;
import io.csiorchestrator.worker.mount.SecretOpener;
import io.csiorchestrator.worker.mount.VolumeOperations;
import io.csiorchestrator.worker.mount.VolumeSerializer;
import io.csiorchestrator.worker.plugin.PluginRegistry;
import io.csiorchestrator.worker.plugin.PluginSupervisor;
import io.csiorchestrator.worker.plugin.PluginWatcher;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.WorkerPaths;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.telemetry.Telemetry;
import io.csiorchestrator.worker.telemetry.WorkerMetrics;
import io.csiorchestrator.worker.telemetry.WorkerTracing;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import org.jboss.logging.MDC;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * The worker of one node: wires the record store, the plugin watcher and supervisors, the volume
 * operations, the event publisher and the node-commands consumer, restores the recorded mounts on
 * start (without Kafka) and heals a plugin's volumes whenever it becomes healthy.
 */
@ApplicationScoped
public class NodeMountWorker {

    private static final Logger LOG = Logger.getLogger(NodeMountWorker.class);
    public static final String SOURCE = "/node-mount-worker";

    private final WorkerConfig config;
    private final String bootstrapServers;
    private final TopicCatalog topics;
    private final Optional<String> keyring;
    private final Optional<String> activeKey;
    private final Clock clock = Clock.systemUTC();
    private final Telemetry telemetry;

    private WorkerPaths paths;
    private PluginRegistry registry;
    private VolumeOperations operations;
    private VolumeSerializer serializer;
    private KafkaEventPublisher publisher;
    private PluginWatcher watcher;
    private CommandConsumer consumer;
    private ScheduledExecutorService scheduler;
    private ExecutorService volumeExecutor;
    private ExecutorService probeExecutor;
    private final AtomicInteger restoresPending = new AtomicInteger();
    private volatile boolean started;

    public NodeMountWorker(WorkerConfig config,
                           @ConfigProperty(name = "kafka.bootstrap.servers", defaultValue = "localhost:9092") String bootstrapServers,
                           @ConfigProperty(name = TopicCatalog.PREFIX_PROPERTY, defaultValue = "") Optional<String> prefix,
                           @ConfigProperty(name = "csi.secrets.keyring") Optional<String> keyring,
                           @ConfigProperty(name = "csi.secrets.active-key") Optional<String> activeKey,
                           MeterRegistry meters, OpenTelemetry openTelemetry, Tracer tracer) {
        this.telemetry = new Telemetry(new WorkerMetrics(meters), new WorkerTracing(openTelemetry, tracer));
        this.config = config;
        this.bootstrapServers = bootstrapServers;
        this.topics = new TopicCatalog(prefix.orElse(""));
        this.keyring = keyring;
        this.activeKey = activeKey;
    }

    void onStart(@Observes StartupEvent event) throws IOException {
        start();
    }

    void onStop(@Observes ShutdownEvent event) {
        stop();
    }

    public synchronized void start() throws IOException {
        String nodeId = PathSafeId.require("csi.worker.node-id", config.nodeId());
        paths = new WorkerPaths(config.root(), new PosixDirs());
        paths.ensureDirectory(paths.recordsDir());
        // node events not yet acknowledged by Kafka survive a restart in <root>/events
        publisher = new KafkaEventPublisher(bootstrapServers, topics, SOURCE, config.eventQueueCapacity(),
                telemetry.tracing(), EventSpool.open(paths));
        publisher.start();
        registry = new PluginRegistry();
        scheduler = Executors.newScheduledThreadPool(2, daemon("csi-worker-scheduler"));
        probeExecutor = Executors.newCachedThreadPool(daemon("csi-plugin-probe"));
        volumeExecutor = Executors.newFixedThreadPool(Math.max(1, config.concurrency()), daemon("csi-volume-op"));
        serializer = new VolumeSerializer(volumeExecutor);
        operations = new VolumeOperations(nodeId, paths, new MountRecordStore(paths), registry, MountTable::readSelf,
                // node events of a command are emitted synchronously on the volume thread, inside the
                // command's context (see handle): they carry the command's trace
                secretOpener(), event -> publisher.publish(event, Context.current()), clock);
        for (String problem : operations.load()) {
            LOG.error(problem);
            publisher.publish(new NodeEvent(nodeId, null, NodeEventKind.RESTORE, "Unreadable mount record", null, null,
                    null, null, false, problem, Map.of(), clock.instant()));
        }
        PluginSupervisor.Timing timing = new PluginSupervisor.Timing(config.connectTimeout(), config.probeTimeout(),
                config.callTimeout(), config.callAttempts());
        watcher = new PluginWatcher(config.pluginsDir(), nodeId, registry,
                (pluginId, socket, settings) -> new PluginSupervisor(pluginId, nodeId, socket, settings, paths.root(),
                        timing, publisher, this::healVolumesOf, clock, telemetry),
                scheduler, probeExecutor, config.probeInterval(), config.heartbeatInterval(), config.rescanInterval(),
                config.pluginDeregisterAfter(), publisher, clock);
        restoreRecordedVolumes(nodeId);
        watcher.start();
        consumer = new CommandConsumer(bootstrapServers, config.consumerGroup().orElse("node-mount-worker-" + nodeId),
                topics.name(Topic.NODE_COMMANDS), topics.deadLetterName(Topic.NODE_COMMANDS), nodeId, serializer,
                this::handle, publisher, telemetry);
        consumer.start();
        registerGauges();
        started = true;
        LOG.infof("node-mount-worker of node %s started: root %s, plugins %s", nodeId, paths.root(), config.pluginsDir());
    }

    /**
     * Runs a command on the volume thread inside {@code cause}, the context of its
     * {@code node-commands process} span: the CSI calls it awaits on this thread are its children
     * and the node events it emits carry it. An unexpected failure is still answered, so the
     * partition never stalls.
     */
    private MountDone handle(NodeCommand command, Context cause) {
        SpanContext span = Span.fromContext(cause).getSpanContext();
        // the log format's %X{traceId}: Quarkus fills the MDC on Vert.x threads only, this is a worker thread
        if (span.isValid()) {
            MDC.put("traceId", span.getTraceId());
            MDC.put("spanId", span.getSpanId());
        }
        try (Scope ignored = cause.makeCurrent()) {
            MountDone done = operations.execute(command);
            LOG.infof("%s of volume %s/%s%s: %s", command.kind().wire(), command.namespace(), command.volumeId(),
                    command.allocationId() == null ? "" : " for allocation " + command.allocationId(),
                    done.succeeded() ? "done" : "failed with " + done.errorCode());
            return done;
        } catch (RuntimeException e) {
            LOG.errorf(e, "command %s failed unexpectedly", command.commandId());
            return new MountDone(command.commandId(), command.nodeId(), command.kind(), command.namespace(),
                    command.volumeId(), command.allocationId(), false, "WORKER_ERROR",
                    "node-mount-worker failed on this command: " + e.getClass().getSimpleName() + ": " + e.getMessage(),
                    Map.of(), null, null, clock.instant());
        } finally {
            MDC.remove("traceId");
            MDC.remove("spanId");
        }
    }

    /** Gauges read from the worker's current parts (registered once; a restart keeps them). */
    private void registerGauges() {
        WorkerMetrics metrics = telemetry.metrics();
        metrics.gauge("csi.plugins", "CSI plugins registered on this node, by health", this,
                w -> w.countPlugins(true), "healthy", "true");
        metrics.gauge("csi.plugins", "CSI plugins registered on this node, by health", this,
                w -> w.countPlugins(false), "healthy", "false");
        metrics.gauge("csi.node.volumes.staged", "Volumes staged on this node (the worker's records)", this,
                NodeMountWorker::countStaged);
        metrics.gauge("csi.node.volumes.published",
                "Publications (allocation targets) published on this node (the worker's records)", this,
                NodeMountWorker::countPublished);
        metrics.gauge("csi.node.events.queued", "Events waiting in memory for the broker", this,
                w -> w.publisher == null ? 0 : w.publisher.queued());
    }

    private double countPlugins(boolean healthy) {
        PluginRegistry r = registry;
        return r == null ? 0 : r.all().stream().filter(s -> s.healthy() == healthy).count();
    }

    private double countStaged() {
        VolumeOperations ops = operations;
        return ops == null ? 0 : ops.records().values().stream().filter(r -> r.stage() == StageState.STAGED).count();
    }

    private double countPublished() {
        VolumeOperations ops = operations;
        return ops == null ? 0 : ops.records().values().stream()
                .flatMap(r -> r.users().stream())
                .filter(u -> u.state() == PublishState.PUBLISHED)
                .count();
    }

    /**
     * For every recorded volume: wait (bounded) for its plugin, then verify and converge it. Runs
     * in the background and needs no Kafka; what it did is reported as node events, which are
     * delivered whenever Kafka is reachable.
     */
    private void restoreRecordedVolumes(String nodeId) {
        Map<String, List<VolumeKey>> byPlugin = new LinkedHashMap<>();
        for (Map.Entry<VolumeKey, VolumeRecord> e : operations.records().entrySet()) {
            VolumeRecord r = e.getValue();
            if (!r.idle()) {
                byPlugin.computeIfAbsent(r.pluginId(), p -> new java.util.ArrayList<>()).add(e.getKey());
            }
        }
        byPlugin.forEach((pluginId, keys) -> {
            restoresPending.addAndGet(keys.size());
            Instant deadline = clock.instant().plus(config.restorePluginTimeout());
            CompletableFuture<Boolean> ready = new CompletableFuture<>();
            ScheduledFuture<?> poll = scheduler.scheduleWithFixedDelay(() -> {
                if (registry.node(pluginId).isPresent()) {
                    ready.complete(true);
                } else if (clock.instant().isAfter(deadline)) {
                    ready.complete(false);
                }
            }, 0, 200, TimeUnit.MILLISECONDS);
            ready.whenComplete((ok, failure) -> {
                poll.cancel(false);
                for (VolumeKey key : keys) {
                    if (Boolean.TRUE.equals(ok)) {
                        serializer.submit(key, () -> operations.restore(key))
                                .whenComplete((c, f) -> restoresPending.decrementAndGet());
                    } else {
                        restoresPending.decrementAndGet();
                        publisher.publish(new NodeEvent(nodeId, null, NodeEventKind.RESTORE,
                                "Restore volume after worker restart", pluginId, key.namespace(), key.volumeId(), null,
                                false, "CSI plugin '" + pluginId + "' did not become healthy within "
                                + config.restorePluginTimeout() + "; volume not verified, it is restored when the plugin is back",
                                Map.of(), clock.instant()));
                    }
                }
            });
        });
    }

    /** The volume healer: runs whenever a plugin becomes healthy (first time, again, or with a new socket). */
    private void healVolumesOf(String pluginId) {
        for (VolumeKey key : operations.volumesOf(pluginId)) {
            serializer.submit(key, () -> operations.heal(key));
        }
    }

    private SecretOpener secretOpener() {
        if (keyring.isEmpty() || keyring.get().isBlank()) {
            return (sealed, ns, vol) -> {
                if (sealed == null) {
                    return SecretPayload.EMPTY;
                }
                throw new IllegalStateException("the command carries sealed secrets but csi.secrets.keyring is not "
                        + "configured on this node");
            };
        }
        SecretSealer sealer = new SecretSealer(SecretKeyring.parse(keyring.get(), activeKey.orElse(null)));
        return (sealed, ns, vol) -> sealer.open(sealed, SecretSealer.associatedData(ns, vol));
    }

    public synchronized void stop() {
        if (!started) {
            return;
        }
        started = false;
        if (consumer != null) {
            consumer.close();
        }
        if (watcher != null) {
            watcher.close();
        }
        if (scheduler != null) {
            scheduler.shutdownNow();
        }
        if (probeExecutor != null) {
            probeExecutor.shutdownNow();
        }
        if (volumeExecutor != null) {
            volumeExecutor.shutdown();
            try {
                volumeExecutor.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (publisher != null) {
            publisher.close(Duration.ofSeconds(10));
        }
    }

    public boolean started() {
        return started;
    }

    public boolean restoring() {
        return restoresPending.get() > 0;
    }

    public PluginRegistry plugins() {
        return registry;
    }

    /** The watcher of the plugins directory (null before the first start). */
    public PluginWatcher pluginWatcher() {
        return watcher;
    }

    public VolumeOperations operations() {
        return operations;
    }

    public WorkerPaths paths() {
        return paths;
    }

    public CommandConsumer consumer() {
        return consumer;
    }

    public KafkaEventPublisher publisher() {
        return publisher;
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
