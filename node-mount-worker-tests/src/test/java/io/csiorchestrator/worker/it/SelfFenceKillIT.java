package io.csiorchestrator.worker.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.CsiAccessMode;
import io.csiorchestrator.csi.CsiAttachmentMode;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.MountOptions;
import io.csiorchestrator.csi.VolumeCapabilities;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaBroker;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.state.FenceRecord;
import io.csiorchestrator.worker.state.FenceRecordStore;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A real crash in the middle of the worker's self-fence: the packaged worker ({@code quarkus-run.jar}, as
 * {@link FenceGuardIT} starts it; fencing on, the guard off so that only the worker fences) with the hostpath plugin
 * process and a closed in-process broker; the test grants the node's lease requests as plugin-registry-service (epoch
 * {@link #epoch}, ttl 20 s, fence budget 15 s: the fence starts 5 s after the last renewal and has 15 s before the
 * lease's expiry) while {@link #granting}. A fenceOnLapse mount is made; the plugin's NodeUnpublishVolume is made to
 * hang; the grants stop. Once the worker is observably inside its fence (fence.json says FENCING, the plugin received
 * the NodeUnpublishVolume, the target still mounted) it is killed with -9. What it left is what a crash leaves: the
 * FENCING record and the publication marked UNPUBLISHING, the mount still there. A new worker process on the same root
 * finishes the fence at start (lazily: no plugin yet), reports FENCED for the epoch, never publishes the volume again,
 * and is unfenced by the next epoch.
 */
class SelfFenceKillIT {

    static final String NODE = "kill-fence-node";
    static final String NS = "default";
    static final Duration AWAIT = Duration.ofSeconds(90);
    static Path root;
    static Path workerRoot;
    static KafkaBroker broker;
    static KafkaTestClient kafka;
    static KafkaTestClient claimService;
    static KafkaTestClient registryWriter;
    static HostpathPlugin plugin;
    static Process worker;
    static Thread registry;
    static volatile boolean running = true;
    /** Whether the test's registry answers the node's lease requests now. */
    static volatile boolean granting = true;
    static final java.util.concurrent.atomic.AtomicLong epoch = new java.util.concurrent.atomic.AtomicLong(1);

    @BeforeAll
    static void setUp() throws Exception {
        root = Files.createTempDirectory("csi-self-fence-kill-it").toRealPath();
        workerRoot = root.resolve("worker");
        broker = KafkaBroker.builder().secured(true).start();
        broker.createTopic("node-commands", 4);
        broker.createTopic(Topic.NODE_LEASE_REQUESTS.baseName(), 6);
        broker.createTopic(Topic.NODE_LEASES.baseName(), 6, Map.of("cleanup.policy", "compact"));
        broker.createContractTopics("");
        broker.issue(KafkaAccess.Principal.node(NODE), TopicCatalog.unprefixed());
        kafka = new KafkaTestClient(broker.bootstrapServers(), broker.adminSecurity());
        claimService = new KafkaTestClient(broker.bootstrapServers(),
                broker.issue(KafkaAccess.Principal.claimService(), TopicCatalog.unprefixed()));
        registryWriter = new KafkaTestClient(broker.bootstrapServers(),
                broker.issue(KafkaAccess.Principal.pluginRegistry(), TopicCatalog.unprefixed()));
        plugin = new HostpathPlugin("hp", root.resolve("plugins"), root.resolve("hp-state"),
                "--controller-publish=false").start();
        registry = new Thread(SelfFenceKillIT::grantWhileGranting, "test-registry");
        registry.setDaemon(true);
        registry.start();
    }

    @AfterAll
    static void tearDown() throws Exception {
        running = false;
        if (worker != null) {
            worker.destroyForcibly();
            worker.waitFor(10, TimeUnit.SECONDS);
        }
        if (registry != null) {
            registry.join(10_000);
        }
        HostpathPlugin.killAll(); // its NodeUnpublishVolume still hanging ends with it
        WorkerRootResource.unmountAllUnder(root);
        for (KafkaTestClient c : new KafkaTestClient[] {kafka, claimService, registryWriter}) {
            if (c != null) {
                c.close();
            }
        }
        if (broker != null) {
            broker.close();
        }
        try (Stream<Path> files = Files.walk(root)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** The registry's part: each request of the node answered VALID with {@link #epoch} while {@link #granting}. */
    static void grantWhileGranting() {
        Properties c = registryWriter.security().applyTo(new Properties());
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        c.put(ConsumerConfig.GROUP_ID_CONFIG, KafkaAccess.PLUGIN_REGISTRY + "-self-fence-kill-it");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> requests = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            requests.subscribe(List.of(Topic.NODE_LEASE_REQUESTS.baseName()));
            while (running) {
                for (ConsumerRecord<String, String> r : requests.poll(Duration.ofMillis(100))) {
                    NodeLeaseRequested request = EventCodec.decode(NodeLeaseRequested.class, r.value());
                    if (!NODE.equals(request.nodeId()) || !granting) {
                        continue;
                    }
                    NodeLease lease = new NodeLease(NODE, epoch.get(), NodeLeaseState.VALID, request.requestId(), 20_000,
                            15_000, Instant.now());
                    RecordHeaders h = new RecordHeaders();
                    CloudEventHeaders.create(EventType.NODE_LEASE, "/test-registry").writeTo(h);
                    registryWriter.send(new ProducerRecord<>(Topic.NODE_LEASES.baseName(), null, NODE,
                            EventCodec.encodeToString(lease), h));
                }
            }
        }
    }

    private static Process startWorker(String name) throws IOException {
        Path jar = Path.of(System.getProperty("csi.worker.jar", "../node-mount-worker/target/quarkus-app/quarkus-run.jar"));
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:TieredStopAtLevel=1",
                "-Dcsi.worker.node-id=" + NODE,
                "-Dcsi.worker.root=" + workerRoot,
                "-Dcsi.worker.plugins-dir=" + root.resolve("plugins"),
                "-Dcsi.worker.probe-interval=500ms",
                "-Dcsi.worker.rescan-interval=1s",
                "-Dcsi.worker.call-timeout=60s", // the fence's hung NodeUnpublishVolume is not given up before the kill
                "-Dcsi.worker.call-attempts=1",
                "-Dcsi.worker.heal-interval=0s",
                "-Dcsi.worker.fencing.enabled=true",
                "-Dcsi.worker.fencing.guard=false", // the worker's own fence only: the guard would fence at the same time
                "-Dcsi.fencing.lease-ttl=20s",
                "-Dkafka.bootstrap.servers=" + broker.bootstrapServers(),
                "-D" + KafkaClientSecurity.PROTOCOL + "=SASL_SSL",
                "-D" + KafkaClientSecurity.USERNAME + "=" + KafkaAccess.Principal.node(NODE).name(),
                "-D" + KafkaClientSecurity.PASSWORD_FILE + "=" + broker.passwordFileOf(KafkaAccess.Principal.node(NODE).name()),
                "-D" + KafkaClientSecurity.TRUSTSTORE + "=" + broker.truststore(),
                "-Dquarkus.http.port=0",
                "-jar", jar.toAbsolutePath().toString());
        return new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(root.resolve(name + ".log").toFile())).start();
    }

    private static String createVolume(String name) {
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            return client.createVolume(CreateVolumeRequest.newBuilder().setName(name)
                    .addVolumeCapabilities(VolumeCapabilities.build(CsiAccessMode.SINGLE_NODE_WRITER,
                            CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE))
                    .build()).await().atMost(Duration.ofSeconds(20)).getVolume().getVolumeId();
        }
    }

    private static MountDone run(NodeCommand command) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_COMMAND, "/test").writeTo(headers);
        claimService.send(new ProducerRecord<>("node-commands", NodePartitioner.partitionFor(NODE, 4), NODE,
                EventCodec.encodeToString(command), headers));
        String marker = "\"commandId\":\"" + command.commandId() + "\"";
        return EventCodec.decode(MountDone.class, kafka.awaitRecord("mount-done", r -> r.value().contains(marker), AWAIT).value());
    }

    private static boolean mounted(Path path) {
        return MountTable.readSelf().isMountPoint(path);
    }

    private static NodeEvent awaitEvent(String kind, String epochDetail) {
        return EventCodec.decode(NodeEvent.class, kafka.awaitRecord("node-events", r -> NODE.equals(r.key())
                && r.value().contains("\"kind\":\"" + kind + "\"")
                && r.value().contains("\"epoch\":\"" + epochDetail + "\""), AWAIT).value());
    }

    @Test
    void aWorkerKilledInTheMiddleOfItsSelfFenceLeavesARecordFromWhichTheNextOneFinishesItAndNeverMountsAgain()
            throws Exception {
        String ext = createVolume("killed-fence-vol");
        worker = startWorker("worker");
        kafka.awaitRecord("plugin-health", r -> r.key().equals(PluginHealth.key("hp", NODE))
                && EventCodec.decode(PluginHealth.class, r.value()).reportsHealthy(), AWAIT);
        await().atMost(AWAIT).until(() -> Files.readString(root.resolve("worker.log")).contains("lease epoch 1: granted"));
        MountDone done = run(new NodeCommand("mount-1", NODE, NodeCommandKind.MOUNT, NS, "vol", "hp", ext, "alloc-1",
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, Map.of(), Map.of(),
                null, Instant.now()).withFencing(1L, 1L, true));
        assertTrue(done.succeeded(), done.toString());
        WorkerPaths paths = new WorkerPaths(workerRoot, new PosixDirs());
        Path target = paths.targetPath("alloc-1", NS, "vol");
        Path staging = paths.stagingPath(NS, "vol");
        assertTrue(mounted(target) && mounted(staging));
        FenceRecordStore fences = new FenceRecordStore(paths);
        assertTrue(fences.load().isEmpty(), "no fence yet");

        // the fence's unpublish hangs in the plugin; then the registry stops answering
        plugin.faults("latency NodeUnpublishVolume 600s\n");
        long unpublishes = plugin.startedCalls("NodeUnpublishVolume");
        long publishes = plugin.calls("NodePublishVolume");
        granting = false;
        await().atMost(AWAIT).until(() -> fences.load().map(f -> f.phase() == FenceRecord.Phase.FENCING).orElse(false)
                && plugin.startedCalls("NodeUnpublishVolume") > unpublishes);
        worker.destroyForcibly(); // kill -9 in the middle of the self-fence
        assertTrue(worker.waitFor(10, TimeUnit.SECONDS));

        // what the crash left: the FENCING record, the publication marked as being released, the mount still there
        FenceRecord left = fences.load().orElseThrow();
        assertEquals(FenceRecord.Phase.FENCING, left.phase(), left.toString());
        assertEquals(1, left.epoch());
        assertTrue(mounted(target), "killed before its unmount was done");
        var usages = new MountRecordStore(paths).load(new VolumeKey(NS, "vol")).orElseThrow().users();
        assertEquals(List.of(PublishState.UNPUBLISHING), usages.stream().map(u -> u.state()).toList(),
                "marked before the unmount: " + usages);

        plugin.faults(""); // the next worker's calls are not held up (the hung one stays hung)
        worker = startWorker("worker-2");
        NodeEvent fenced = awaitEvent("fenced", "1");
        assertEquals("worker", fenced.details().get("fencedBy"), fenced.toString());
        await().atMost(AWAIT).until(() -> fences.load().map(f -> f.phase() == FenceRecord.Phase.FENCED).orElse(false));
        assertFalse(mounted(target), "the second worker finished the fence: " + fences.load());
        assertFalse(mounted(staging));
        assertEquals(publishes, plugin.calls("NodePublishVolume"), "the fenced publication was not published again");

        // the next epoch unfences it; the fenced publication stays unmounted
        epoch.set(2);
        granting = true;
        NodeEvent unfenced = awaitEvent("unfenced", "2");
        assertEquals("1", unfenced.details().get("fencedEpoch"), unfenced.toString());
        assertFalse(mounted(target));
        assertEquals(publishes, plugin.calls("NodePublishVolume"));
    }
}
