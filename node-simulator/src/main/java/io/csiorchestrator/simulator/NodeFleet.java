package io.csiorchestrator.simulator;

import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.worker.kafka.CommandConsumer;
import io.csiorchestrator.worker.kafka.EventSpool;
import io.csiorchestrator.worker.kafka.KafkaEventPublisher;
import io.csiorchestrator.worker.mount.SecretOpener;
import io.csiorchestrator.worker.mount.VolumeSerializer;
import io.csiorchestrator.worker.telemetry.Telemetry;
import io.csiorchestrator.worker.telemetry.WorkerMetrics;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jboss.logging.Logger;

/**
 * N simulated nodes on Kafka, each wired as the worker wires itself ({@code NodeMountWorker.start}): its own
 * {@link KafkaEventPublisher} (with the node-event spool under its root, {@link EventSpool}), its own {@link CommandConsumer}
 * (consumer group {@code node-mount-worker-<node>}, the node's partition of {@code node-commands} by
 * {@code NodePartitioner}, records of other nodes skipped), a {@link VolumeSerializer} over its own
 * {@code concurrency} threads, and the worker's command handling ({@link SimulatedNode}). One scheduler sends
 * every node's heartbeats.
 */
public final class NodeFleet implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(NodeFleet.class);

    /** Everything the nodes share. */
    public record Settings(String bootstrapServers, TopicCatalog topics, Path root, List<String> nodeIds,
                           String pluginId, Duration pluginDelay, boolean controllerPublish,
                           Duration heartbeatInterval, int concurrency, Duration leaseTtl, SecretOpener secrets) {
    }

    private record Running(SimulatedNode node, KafkaEventPublisher publisher, CommandConsumer consumer,
                           ExecutorService volumeThreads) {
    }

    private final Settings settings;
    private final Telemetry telemetry;
    private final Clock clock = Clock.systemUTC();
    /** Written by start and close only; read by the heartbeat thread and readiness at any time. */
    private final List<Running> nodes = new CopyOnWriteArrayList<>();
    private ScheduledExecutorService heartbeats;
    /** One principal for the whole fleet (KafkaAccess.SIMULATOR): CSI_KAFKA_* or -Dcsi.kafka.* unless given. */
    private KafkaClientSecurity kafkaSecurity = KafkaClientSecurity.fromEnvironment();

    public NodeFleet(Settings settings, Telemetry telemetry) {
        this.settings = settings;
        this.telemetry = telemetry;
    }

    /** Connects with {@code security}'s settings instead of the environment's (call before {@link #start()}). */
    public NodeFleet withSecurity(KafkaClientSecurity security) {
        this.kafkaSecurity = java.util.Objects.requireNonNull(security, "security");
        return this;
    }

    /**
     * The directory of the nodes' signing keys ({@code CSI_IDENTITY_DIR}: {@code node-<id>.key} per node, as
     * {@code ./csi up} makes them, and their sealing keys {@code node-<id>.seal.key}); unset: the simulated nodes'
     * records go unsigned and a command carrying secrets fails.
     */
    private static final io.csiorchestrator.events.identity.IdentityDirectory identities =
            System.getenv("CSI_IDENTITY_DIR") == null ? null
                    : new io.csiorchestrator.events.identity.IdentityDirectory(java.nio.file.Path.of(System.getenv("CSI_IDENTITY_DIR")));

    public synchronized void start() throws IOException {
        heartbeats = Executors.newSingleThreadScheduledExecutor(daemon("sim-heartbeats"));
        WorkerMetrics metrics = telemetry.metrics();
        for (String nodeId : settings.nodeIds()) {
            Path root = settings.root().resolve(nodeId);
            Files.createDirectories(root);
            // node events not yet acknowledged survive a restart in <root>/events, as the worker's do
            KafkaEventPublisher publisher = new KafkaEventPublisher(settings.bootstrapServers(), settings.topics(),
                    SimulatedNode.SOURCE, 10_000, telemetry.tracing(),
                    EventSpool.open(new WorkerPaths(root.toRealPath(), new PosixDirs()))).withSecurity(kafkaSecurity);
            if (identities != null) {
                // each simulated node signs as itself, with the key ./csi up made for it (issue 20 item 3)
                publisher.signWith(io.csiorchestrator.events.identity.IdentityKey.read(identities.keyFile(
                        io.csiorchestrator.events.identity.Principal.node(nodeId))));
            }
            SimulatedPlugin plugin = new SimulatedPlugin(settings.pluginId(), nodeId, settings.pluginDelay(),
                    settings.controllerPublish(), metrics.csiAttempts(settings.pluginId()));
            // each simulated node opens only what is sealed for it, with the sealing key ./csi up made for it (issue 20 item 4)
            Path sealKey = identities == null ? null
                    : identities.sealKeyFile(io.csiorchestrator.events.identity.Principal.node(nodeId));
            SecretOpener secrets = sealKey != null && Files.exists(sealKey) ? SecretOpener.forNode(nodeId, sealKey)
                    : settings.secrets();
            SimulatedNode node = new SimulatedNode(nodeId, root, plugin, secrets, publisher, clock);
            node.open();
            publisher.start();
            ExecutorService volumeThreads = Executors.newFixedThreadPool(Math.max(1, settings.concurrency()),
                    daemon("sim-volume-op-" + nodeId));
            CommandConsumer consumer = new CommandConsumer(settings.bootstrapServers(), "node-mount-worker-" + nodeId,
                    settings.topics().name(Topic.NODE_COMMANDS), settings.topics().deadLetterName(Topic.NODE_COMMANDS),
                    nodeId, new VolumeSerializer(volumeThreads), node.handler(), publisher, telemetry)
                    .withSecurity(kafkaSecurity);
            consumer.start();
            node.announce();
            nodes.add(new Running(node, publisher, consumer, volumeThreads));
        }
        long every = settings.heartbeatInterval().toMillis();
        heartbeats.scheduleAtFixedRate(() -> {
            for (Running r : nodes) {
                r.node().heartbeat();
            }
        }, every, every, TimeUnit.MILLISECONDS);
        if (!settings.leaseTtl().isZero()) {
            // issue 19: every node holds its lease (requests only: held epoch 0 renews a valid lease, and after a
            // lapse gets the next epoch); ttl/6, as the worker renews. The simulated nodes refuse no command.
            long renew = Math.max(1, settings.leaseTtl().toMillis() / 6);
            heartbeats.scheduleAtFixedRate(() -> {
                for (Running r : nodes) {
                    String nodeId = r.node().nodeId();
                    r.publisher().publish(new NodeLeaseRequested(UUID.randomUUID().toString(), nodeId, 0,
                            clock.instant()), io.opentelemetry.context.Context.root());
                }
            }, 0, renew, TimeUnit.MILLISECONDS);
        }
        LOG.infof("%d simulated nodes started (plugin %s, %d us per plugin call, root %s)", nodes.size(),
                settings.pluginId(), settings.pluginDelay().toNanos() / 1000, settings.root());
    }

    /** The nodes whose command consumer reads its partition and whose first report the broker acknowledged. */
    public int readyNodes() {
        int ready = 0;
        for (Running r : nodes) {
            if (r.consumer().connectivity().connected() && r.publisher().lastAcknowledged() != null
                    && r.publisher().lastSendFailure() == null) {
                ready++;
            }
        }
        return ready;
    }

    /**
     * Stops as the worker stops, up to 16 nodes at a time: the consumer (final offset commit), a last unhealthy
     * report, the volume threads, then the publisher (what is queued is delivered, bounded).
     */
    @Override
    public synchronized void close() {
        if (heartbeats != null) {
            heartbeats.shutdownNow();
        }
        ExecutorService stopping = Executors.newFixedThreadPool(Math.max(1, Math.min(16, nodes.size())),
                daemon("sim-stop"));
        for (Running r : nodes) {
            stopping.execute(() -> {
                r.consumer().close();
                r.node().retire();
                r.volumeThreads().shutdown();
                try {
                    r.volumeThreads().awaitTermination(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                r.publisher().close(Duration.ofSeconds(10));
            });
        }
        stopping.shutdown();
        try {
            stopping.awaitTermination(25, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        nodes.clear();
    }

    static ThreadFactory daemon(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
