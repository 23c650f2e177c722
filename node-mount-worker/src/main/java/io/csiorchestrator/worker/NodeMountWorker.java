package io.csiorchestrator.worker;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.worker.kafka.CommandConsumer;
import io.csiorchestrator.worker.kafka.EventSpool;
import io.csiorchestrator.worker.kafka.KafkaEventPublisher;
import io.csiorchestrator.worker.mount.Convergence;
import io.csiorchestrator.worker.mount.SecretOpener;
import io.csiorchestrator.worker.mount.VolumeOperations;
import io.csiorchestrator.worker.mount.VolumeSerializer;
import io.csiorchestrator.worker.plugin.PluginRegistry;
import io.csiorchestrator.worker.plugin.PluginSupervisor;
import io.csiorchestrator.worker.plugin.PluginWatcher;
import io.csiorchestrator.worker.state.ActualState;
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
    private final java.util.concurrent.atomic.AtomicLong stateReports = new java.util.concurrent.atomic.AtomicLong();
    private ScheduledFuture<?> stateReport;
    private final java.util.Set<VolumeKey> healsQueued = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private VolumeStatsPoller volumeStats;
    private io.csiorchestrator.worker.telemetry.VolumeStatsGauges volumeStatsGauges;
    private io.csiorchestrator.worker.plugin.CapacityReporter capacity;
    private volatile boolean started;
    private final java.time.Duration leaseTtl;
    /** Every Kafka client's security settings ({@code csi.kafka.*}, see KafkaClientSecurity). */
    private final KafkaClientSecurity kafkaSecurity;
    private io.csiorchestrator.worker.lease.LeaseGate lease;
    private io.csiorchestrator.worker.lease.LeaseClient leaseClient;
    private io.csiorchestrator.worker.lease.SelfFence selfFence;
    private volatile io.csiorchestrator.worker.lease.FenceGuard fenceGuard;

    public NodeMountWorker(WorkerConfig config,
                           @ConfigProperty(name = "kafka.bootstrap.servers", defaultValue = "localhost:9092") String bootstrapServers,
                           @ConfigProperty(name = TopicCatalog.PREFIX_PROPERTY, defaultValue = "") Optional<String> prefix,
                           @ConfigProperty(name = "csi.fencing.lease-ttl", defaultValue = "30s") java.time.Duration leaseTtl,
                           MeterRegistry meters, OpenTelemetry openTelemetry, Tracer tracer) {
        this.leaseTtl = leaseTtl;
        this.telemetry = new Telemetry(new WorkerMetrics(meters), new WorkerTracing(openTelemetry, tracer));
        this.config = config;
        this.bootstrapServers = bootstrapServers;
        this.kafkaSecurity = KafkaClientSecurity.from(
                name -> org.eclipse.microprofile.config.ConfigProvider.getConfig().getOptionalValue(name, String.class));
        this.topics = new TopicCatalog(prefix.orElse(""));
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
                telemetry.tracing(), EventSpool.open(paths)).withSecurity(kafkaSecurity);
        lease = config.fencingEnabled() ? io.csiorchestrator.worker.lease.LeaseGate.enabled(nodeId, System::nanoTime)
                : io.csiorchestrator.worker.lease.LeaseGate.disabled(nodeId);
        io.csiorchestrator.events.identity.IdentityKey identity = io.csiorchestrator.worker.kafka.WorkerIdentity.load(
                config.identityKeyFile(), nodeId);
        publisher.signWith(identity);
        publisher.stampLeaseEpoch(lease::epochOrNull);
        publisher.start();
        registry = new PluginRegistry();
        scheduler = Executors.newScheduledThreadPool(2, daemon("csi-worker-scheduler"));
        probeExecutor = Executors.newCachedThreadPool(daemon("csi-plugin-probe"));
        volumeExecutor = Executors.newFixedThreadPool(Math.max(1, config.concurrency()), daemon("csi-volume-op"));
        serializer = new VolumeSerializer(volumeExecutor);
        operations = new VolumeOperations(nodeId, paths, new MountRecordStore(paths), registry, MountTable.READ_SELF,
                // node events of a command are emitted synchronously on the volume thread, inside the
                // command's context (see handle): they carry the command's trace
                secretOpener(), event -> publisher.publish(event, Context.current()), clock);
        for (String problem : operations.load()) {
            LOG.error(problem);
            publisher.publish(new NodeEvent(nodeId, null, NodeEventKind.RESTORE, "Unreadable mount record", null, null,
                    null, null, false, problem, Map.of(), clock.instant()));
        }
        if (lease.isEnabled()) {
            operations.publishFencedOnlyWhile(lease::valid);
            // the self-fence (issue 19): before the restore, a fence found in the record (or the guard's marker) keeps
            // its publications from being mounted again; then the lease thread ticks it after every poll
            selfFence = new io.csiorchestrator.worker.lease.SelfFence(nodeId, lease, operations, serializer,
                    new io.csiorchestrator.worker.state.FenceRecordStore(paths),
                    paths.root().resolve(io.csiorchestrator.worker.lease.FenceMarker.FILE_NAME),
                    io.csiorchestrator.worker.mount.LazyUnmount.system(), event -> publisher.send(event), clock);
            for (String problem : selfFence.atStart()) {
                publisher.publish(new NodeEvent(nodeId, null, NodeEventKind.RESTORE, "Unreadable fence record", null,
                        null, null, null, false, problem, Map.of(), clock.instant()));
            }
            io.csiorchestrator.worker.lease.SelfFence fence = selfFence;
            leaseClient = new io.csiorchestrator.worker.lease.LeaseClient(bootstrapServers, topics, nodeId, SOURCE, lease,
                    leaseTtl, (change, granted) -> {
                        if (change == io.csiorchestrator.worker.lease.LeaseKeeper.Change.NEW_EPOCH) {
                            fence.onNewEpoch(granted.epoch());
                        }
                    }).withSecurity(kafkaSecurity);
            leaseClient.signWith(identity);
            leaseClient.afterEveryPoll(fence::tick);
            leaseClient.start();
            if (config.fencingGuard()) {
                startFenceGuard(fence); // after the records are loaded and the fence record is taken in
            }
        }
        PluginSupervisor.Timing timing = new PluginSupervisor.Timing(config.connectTimeout(), config.probeTimeout(),
                config.callTimeout(), config.callAttempts());
        watcher = new PluginWatcher(config.pluginsDir(), nodeId, registry,
                (pluginId, socket, settings) -> new PluginSupervisor(pluginId, nodeId, socket, settings, paths.root(),
                        timing, publisher, this::pluginHealthy, clock, telemetry).refreshNodeInfoOn(probeExecutor),
                scheduler, probeExecutor, config.probeInterval(), config.heartbeatInterval(), config.rescanInterval(),
                config.pluginDeregisterAfter(), publisher, clock);
        // before the watcher starts: a plugin found healthy asks its capacity (pluginHealthy)
        capacity = new io.csiorchestrator.worker.plugin.CapacityReporter(nodeId, registry, publisher, probeExecutor, clock);
        restoreRecordedVolumes(nodeId);
        watcher.start();
        consumer = new CommandConsumer(bootstrapServers, config.consumerGroup().orElse("node-mount-worker-" + nodeId),
                topics.name(Topic.NODE_COMMANDS), topics.deadLetterName(Topic.NODE_COMMANDS), nodeId, serializer,
                capacity.afterProvisioning(new CommandHandler(operations, clock, lease)), publisher, telemetry)
                .withSecurity(kafkaSecurity);
        consumer.start();
        // anti-entropy: the actual state once now and then on a timer (never two at once: one scheduled task)
        stateReport = scheduler.scheduleWithFixedDelay(() -> reportState(nodeId), 0,
                config.stateReportInterval().toMillis(), TimeUnit.MILLISECONDS);
        if (!config.healInterval().isZero()) {
            long every = config.healInterval().toMillis();
            scheduler.scheduleWithFixedDelay(this::healDamagedVolumes, every, every, TimeUnit.MILLISECONDS);
        }
        if (!config.nodeInfoInterval().isZero()) {
            // csi.worker.node-info-interval (5 min): a changed limit or topology reaches claim-service (see WorkerConfig)
            long every = config.nodeInfoInterval().toMillis();
            scheduler.scheduleWithFixedDelay(() -> registry.all().forEach(supervisor -> probeExecutor.execute(supervisor::refreshNodeInfo)),
                    every, every, TimeUnit.MILLISECONDS);
        }
        volumeStats = new VolumeStatsPoller(nodeId, operations::records, registry, serializer, publisher, clock);
        if (volumeStatsGauges == null) {
            volumeStatsGauges = new io.csiorchestrator.worker.telemetry.VolumeStatsGauges(
                    telemetry.metrics().registry(), nodeId, () -> volumeStats.usages().latest());
        }
        volumeStats.onUsageSeen(volumeStatsGauges::refresh);
        if (!config.conditionInterval().isZero()) {
            // volume stats (usage and condition) every minute, as kubelet: see WorkerConfig.conditionInterval
            long every = config.conditionInterval().toMillis();
            scheduler.scheduleWithFixedDelay(volumeStats::poll, every, every, TimeUnit.MILLISECONDS);
        }
        if (!config.capacityInterval().isZero()) {
            // slow on purpose (WorkerConfig.capacityInterval): provisioning reports its own changes at once
            long every = config.capacityInterval().toMillis();
            scheduler.scheduleWithFixedDelay(capacity::poll, every, every, TimeUnit.MILLISECONDS);
        }
        registerGauges();
        started = true;
        LOG.infof("node-mount-worker of node %s started: root %s, plugins %s", nodeId, paths.root(), config.pluginsDir());
    }

    /**
     * The guard process (README "The guard"): taken over or started now that the records are loaded (its first feed
     * names the restored mounts), fed on the lease thread while the lease is valid with the fence plan's paths. It is
     * left running on stop: a worker that does not come back with a valid lease in time is fenced.
     */
    private void startFenceGuard(io.csiorchestrator.worker.lease.SelfFence fence) throws IOException {
        VolumeOperations ops = operations;
        io.csiorchestrator.worker.lease.FenceGuard guard;
        try {
            guard = io.csiorchestrator.worker.lease.FenceGuard.startOrTakeOver(paths.root(), paths.root(),
                    () -> io.csiorchestrator.worker.lease.FencePlan.of(ops.records().values()).paths(), System::nanoTime);
        } catch (IOException e) {
            throw new IOException("cannot start the fence guard (csi.worker.fencing.guard=false runs without it): "
                    + e.getMessage(), e);
        }
        fenceGuard = guard;
        // a new fenced mount is in the guard's list before it is made (not only at the next lease poll)
        ops.feedGuardBeforeMountsWith(required -> guard.feedNow(lease.deadline(), required));
        // the guard's marker is taken in by the self-fence, even while the lease is valid again (the guard fenced an
        // epoch this worker may have renewed since); one tick after every lease poll feeds both
        guard.onMarker(fence::markerFound);
        leaseClient.afterEveryPoll(() -> {
            fence.tick();
            guard.tick(lease.deadline());
        });
    }

    /** The fence guard's supervisor; null when there is none (fencing or the guard off, or before start). */
    public io.csiorchestrator.worker.lease.FenceGuard fenceGuard() {
        return fenceGuard;
    }

    /** The node's lease (a disabled gate while {@code csi.worker.fencing.enabled} is false); null before start. */
    public io.csiorchestrator.worker.lease.LeaseGate lease() {
        return lease;
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
        metrics.gauge("csi.node.volumes.abnormal",
                "Volumes published on this node whose plugin last reported an abnormal condition", this,
                w -> w.volumeStats == null ? 0 : w.volumeStats.conditions().abnormal());
        metrics.gauge("csi.node.events.queued", "Events waiting in memory for the broker", this,
                w -> w.publisher == null ? 0 : w.publisher.queued());
        if (config.fencingEnabled() && config.fencingGuard()) {
            metrics.gauge("csi.node.fence.guard.running",
                    "1 while the fence guard process runs, 0 while it is gone and cannot be started again", this,
                    w -> w.fenceGuard != null && w.fenceGuard.down() == null ? 1 : 0);
        }
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

    /**
     * Reports the node's actual state on {@code node-state}: the records (read first) checked against the mount
     * table (read after), taken at the time the records were read. Never throws: a failed report is logged and the
     * next tick sends a new one (a newer report supersedes an older one, so none is spooled).
     */
    public void reportState(String nodeId) {
        try {
            Instant takenAt = clock.instant();
            var records = operations.records().values();
            NodeStateReported report = ActualState.report(nodeId, stateReports.incrementAndGet(), takenAt, records,
                    MountTable.readSelf());
            publisher.publish(report);
            LOG.debugf("reported the state of node %s: %d volumes (report %d)", nodeId, report.volumes().size(),
                    report.sequence());
        } catch (RuntimeException e) {
            LOG.warnf("could not report the state of node %s: %s", nodeId, e.toString());
        }
    }

    /** Whenever a plugin becomes healthy (first time, again, or with a new socket): heal its volumes, ask its capacity. */
    private void pluginHealthy(String pluginId) {
        healVolumesOf(pluginId);
        capacity.pluginHealthy(pluginId);
    }

    /** The volume healer: runs whenever a plugin becomes healthy (first time, again, or with a new socket). */
    private void healVolumesOf(String pluginId) {
        for (VolumeKey key : operations.volumesOf(pluginId)) {
            serializer.submit(key, () -> counted(operations.heal(key)));
        }
    }

    /**
     * The healer's periodic pass ({@code csi.worker.heal-interval}): every volume with a staging or
     * a usage is checked on its own volume thread (never beside a command on it); a volume whose
     * previous check has not run yet is not queued again.
     */
    private void healDamagedVolumes() {
        if (restoring()) {
            return;
        }
        for (Map.Entry<VolumeKey, VolumeRecord> e : operations.records().entrySet()) {
            VolumeKey key = e.getKey();
            if (e.getValue().idle() || !healsQueued.add(key)) {
                continue;
            }
            serializer.submit(key, () -> {
                healsQueued.remove(key);
                return counted(operations.healDamaged(key));
            });
        }
    }

    private Convergence counted(Convergence result) {
        for (Convergence.Repair repair : result.repairs()) {
            telemetry.metrics().heal(repair.damage().label(), repair.path(), result.errors().isEmpty());
        }
        return result;
    }

    private SecretOpener secretOpener() {
        return SecretOpener.forNode(config.nodeId(), config.sealKeyFile().orElse(null));
    }

    public synchronized void stop() {
        if (leaseClient != null) {
            leaseClient.close();
            leaseClient = null;
        }
        if (selfFence != null) {
            selfFence.close();
            selfFence = null;
        }
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

    /** The volume stats poller (usage and condition; null before the first start). */
    VolumeStatsPoller volumeStats() {
        return volumeStats;
    }

    /** The capacity reporter (null before the first start). */
    public io.csiorchestrator.worker.plugin.CapacityReporter capacity() {
        return capacity;
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
