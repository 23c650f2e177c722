package io.csiorchestrator.worker.it;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.containsString;
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
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.VolumeCapability;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.ProvisionSpec;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.testkit.HostileRecords;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.NodeMountWorker;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.ResourceArg;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.trace.data.SpanData;
import static org.hamcrest.Matchers.hasItems;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The worker end to end: real Kafka (testkit), the reference hostpath plugin as a separate
 * process on a real unix socket, real bind mounts checked in /proc/self/mountinfo. Every test runs
 * alone and in any order: the shared plugin {@code hp} is started (or found running) by
 * {@link #pluginRunning()} before each test, each test uses its own volumes and allocations and
 * asserts on them (counts as deltas around its own commands), and a test that kills or removes a
 * plugin uses a plugin of its own. The broker is closed as every deployment's is (this module's Surefire sets
 * {@code csi.testkit.kafka.secured}): the worker connects as its node's principal {@code node-test-node} with exactly
 * its ACLs from {@code KafkaAccess}; the test writes node commands as {@code claim-service} (a node may not) and
 * reads as the super user.
 */
@QuarkusTest
@QuarkusTestResource(value = KafkaResource.class, restrictToAnnotatedClass = false, initArgs = {
        @ResourceArg(name = KafkaResource.TOPICS, value = "node-commands:4"),
        @ResourceArg(name = KafkaResource.CONTRACT_TOPICS, value = "true"),
        @ResourceArg(name = KafkaResource.PRINCIPAL, value = "NODE:" + NodeMountWorkerTest.NODE)})
@QuarkusTestResource(value = WorkerRootResource.class, restrictToAnnotatedClass = false)
class NodeMountWorkerTest {

    static final String NODE = "test-node";
    static final String NS = "default";
    static final String PLUGIN = "hp";
    static final Duration WAIT = Duration.ofSeconds(40);

    static HostpathPlugin plugin;
    /** When {@link #pluginRunning()} last started {@link #plugin}. */
    static Instant pluginStartedAt;
    static KafkaTestClient kafka;
    /** The test's stand-in for claim-service, the one writer of node-commands. */
    static KafkaTestClient claimService;

    @Inject
    NodeMountWorker worker;

    @Inject
    RecordingSpanExporter spans;

    @BeforeAll
    static void startKafkaClient() {
        kafka = KafkaTestClient.forSharedBroker();
        claimService = KafkaTestClient.forSharedBroker(io.csiorchestrator.events.KafkaAccess.Principal.claimService(), "");
    }

    @AfterAll
    static void stopAll() throws Exception {
        if (kafka != null) {
            kafka.close();
        }
        if (claimService != null) {
            claimService.close();
        }
    }

    /**
     * The per-class fixture, idempotent: the worker is running, and the shared plugin {@code hp}
     * runs and is registered healthy (started here when it is not running).
     */
    @BeforeEach
    void pluginRunning() throws Exception {
        if (!worker.started()) {
            worker.start();
        }
        if (plugin == null) {
            plugin = new HostpathPlugin(PLUGIN, pluginsDir(), WorkerRootResource.root.resolve("hp-state"),
                    "--controller-publish=false", "--unmount-staging-on-exit");
        }
        if (!plugin.alive()) {
            pluginStartedAt = Instant.now();
            plugin.start();
        }
        await().atMost(WAIT).until(() -> worker.plugins().node(PLUGIN).isPresent() && !worker.restoring());
    }

    // ------------------------------------------------------------------ helpers

    private static Path pluginsDir() {
        return WorkerRootResource.root.resolve("plugins");
    }

    private WorkerPaths paths() {
        return worker.paths();
    }

    private static String createVolume(String name) {
        VolumeCapability capability = VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_MULTI_WRITER,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE);
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            return client.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(capability)
                    .build()).await().atMost(Duration.ofSeconds(20)).getVolume().getVolumeId();
        }
    }

    private static NodeCommand mount(String volumeId, String externalId, String alloc, boolean readOnly) {
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, NS, volumeId, PLUGIN, externalId,
                alloc, AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, readOnly, null, null, Map.of(),
                Map.of(), null, Instant.now());
    }

    private static NodeCommand unmount(String volumeId, String externalId, String alloc) {
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.UNMOUNT, NS, volumeId, PLUGIN,
                externalId, alloc, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now());
    }

    private static void send(NodeCommand command) {
        sendRaw(command.commandId(), EventCodec.encodeToString(command));
    }

    private static void sendRaw(String what, String json) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_COMMAND, "/test").writeTo(headers);
        int partition = NodePartitioner.partitionFor(NODE, 4);
        claimService.send(new ProducerRecord<>("node-commands", partition, NODE, json, headers));
    }

    private static final String TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
    private static final String PARENT_SPAN_ID = "00f067aa0ba902b7";

    private static void sendTraced(NodeCommand command, String traceparent) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_COMMAND, "/test").writeTo(headers);
        headers.add("traceparent", traceparent.getBytes(StandardCharsets.UTF_8));
        int partition = NodePartitioner.partitionFor(NODE, 4);
        claimService.send(new ProducerRecord<>("node-commands", partition, NODE, EventCodec.encodeToString(command), headers));
    }

    private static String traceIdOf(String traceparent) {
        return traceparent.split("-")[1];
    }

    private static String spanIdOf(String traceparent) {
        return traceparent.split("-")[2];
    }

    private SpanData awaitSpan(Predicate<SpanData> predicate) {
        return await().atMost(Duration.ofSeconds(20)).until(
                () -> spans.spans().stream().filter(predicate).findFirst(), java.util.Optional::isPresent).orElseThrow();
    }

    /** {@code payload} of volume {@code NS/volumeId} sealed as claim-service seals it for {@code node} (issue 20 item 4). */
    static io.csiorchestrator.events.SealedSecrets sealFor(String node, io.csiorchestrator.events.SecretPayload payload,
                                                           String volumeId) {
        io.csiorchestrator.events.identity.SealingKeys keys = io.csiorchestrator.testkit.TestIdentities.sealing(
                io.csiorchestrator.events.identity.Principal.node(node));
        return io.csiorchestrator.events.SecretSealer.seal(payload, keys.publicEntry(keys.newest()), NS, volumeId);
    }

    private static MountDone awaitDone(NodeCommand command) {
        return awaitDone(command, 1).get(0);
    }

    private static List<MountDone> awaitDone(NodeCommand command, int count) {
        String marker = "\"commandId\":\"" + command.commandId() + "\"";
        return kafka.awaitRecords("mount-done", r -> r.value().contains(marker), count, WAIT).stream()
                // claim-service requires these headers of mount-done
                .peek(r -> CloudEventHeaders.requireValid(r.headers(), EventType.MOUNT_DONE))
                .map(r -> EventCodec.decode(MountDone.class, r.value())).toList();
    }

    private static MountDone run(NodeCommand command) {
        send(command);
        return awaitDone(command);
    }

    private static NodeEvent awaitEvent(Predicate<NodeEvent> predicate) {
        ConsumerRecord<String, String> r = kafka.awaitRecord("node-events",
                rec -> predicate.test(EventCodec.decode(NodeEvent.class, rec.value())), WAIT);
        return EventCodec.decode(NodeEvent.class, r.value());
    }

    private static boolean mounted(Path path) {
        return MountTable.readSelf().isMountPoint(path);
    }

    private static long mountCount(Path path) {
        String p = path.toString();
        return MountTable.readSelf().mounts().stream().filter(e -> e.mountPoint().equals(p)).count();
    }

    // -------------------------------------------------------------------- tests

    /**
     * The shared plugin's socket, once it appeared (the fixture started the plugin), is
     * fingerprinted: a healthy plugin-health record observed after the start, a PLUGIN_HEALTH node
     * event, readiness naming the plugin, and heartbeats on plugin-health after that record.
     */
    @Test
    void aPluginSocketThatAppearsIsFingerprintedAndPublishedHealthy() throws Exception {
        Instant started = pluginStartedAt.minusSeconds(1);
        ConsumerRecord<String, String> record = kafka.awaitRecord("plugin-health", r -> {
            if (!r.key().equals(PluginHealth.key(PLUGIN, NODE))) {
                return false;
            }
            PluginHealth h = EventCodec.decode(PluginHealth.class, r.value());
            return h.reportsHealthy() && !h.observedAt().isBefore(started);
        }, Duration.ofSeconds(15));
        PluginHealth health = EventCodec.decode(PluginHealth.class, record.value());
        assertEquals("hostpath.csi.csiorchestrator.io", health.providerName());
        assertTrue(health.nodeCapabilities().contains("STAGE_UNSTAGE_VOLUME"), health.toString());
        assertTrue(health.pluginCapabilities().contains("CONTROLLER_SERVICE"), health.toString());
        assertTrue(health.pluginCapabilities().contains("VOLUME_EXPANSION_ONLINE"), "the plugin's VolumeExpansion type: "
                + health.pluginCapabilities());
        assertEquals(io.csiorchestrator.events.PluginType.MONOLITH, health.type());
        assertEquals(NODE, health.nodeInfo().externalNodeId());
        assertEquals(EventType.PLUGIN_HEALTH.cloudEventType(), CloudEventHeaders.requireValid(record.headers(), EventType.PLUGIN_HEALTH).type());
        awaitEvent(e -> e.kind() == NodeEventKind.PLUGIN_HEALTH && PLUGIN.equals(e.pluginId())
                && Boolean.TRUE.equals(e.success()) && !e.occurredAt().isBefore(started));
        await().atMost(WAIT).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200)
                .body(containsString("plugin hp")).body(containsString("healthy (monolith)")));
        // heartbeats follow: one written after this point
        Map<TopicPartition, Long> now = kafka.endOffsets("plugin-health");
        kafka.awaitRecords("plugin-health", now, r -> r.key().equals(PluginHealth.key(PLUGIN, NODE))
                && EventCodec.decode(PluginHealth.class, r.value()).heartbeat(), 1, Duration.ofSeconds(15));
    }

    @Test
    void twoAllocationsStageOnceAndTheLastReleaseUnstages() throws Exception {
        String ext = createVolume("shared-vol");
        long stages = plugin.calls("NodeStageVolume");
        long publishes = plugin.calls("NodePublishVolume");

        MountDone a1 = run(mount("shared", ext, "alloc-1", false));
        MountDone a2 = run(mount("shared", ext, "alloc-2", true));
        assertTrue(a1.succeeded(), a1.toString());
        assertTrue(a2.succeeded(), a2.toString());
        assertEquals(stages + 1, plugin.calls("NodeStageVolume"), "one stage for two allocations");
        assertEquals(publishes + 2, plugin.calls("NodePublishVolume"), "one publish per allocation");

        Path staging = paths().stagingPath(NS, "shared");
        Path t1 = paths().targetPath("alloc-1", NS, "shared");
        Path t2 = paths().targetPath("alloc-2", NS, "shared");
        assertEquals(staging.toString(), a1.stagingPath());
        assertEquals(t1.toString(), a1.hostPath());
        assertTrue(mounted(staging) && mounted(t1) && mounted(t2));
        assertTrue(MountTable.readSelf().mountAt(t2).orElseThrow().readOnly(), "alloc-2 asked read-only");
        Files.writeString(t1.resolve("hello.txt"), "through alloc-1");
        assertEquals("through alloc-1", Files.readString(t2.resolve("hello.txt")), "both see one volume");
        assertEquals(0700, new io.csiorchestrator.worker.state.PosixDirs().mode(t1.getParent()));
        awaitEvent(e -> e.kind() == NodeEventKind.MOUNT && "alloc-1".equals(e.allocationId())
                && Boolean.TRUE.equals(e.success()) && "shared".equals(e.volumeId()));

        long unstages = plugin.calls("NodeUnstageVolume");
        assertTrue(run(unmount("shared", ext, "alloc-1")).succeeded());
        assertEquals(unstages, plugin.calls("NodeUnstageVolume"), "alloc-2 still uses the volume");
        assertFalse(mounted(t1));
        assertFalse(Files.exists(paths().allocationDir("alloc-1")), "the target and its parents are removed");
        assertTrue(mounted(t2) && mounted(staging));

        assertTrue(run(unmount("shared", ext, "alloc-2")).succeeded());
        assertEquals(unstages + 1, plugin.calls("NodeUnstageVolume"), "the last release unstages");
        assertFalse(mounted(t2));
        assertFalse(mounted(staging));
        awaitEvent(e -> e.kind() == NodeEventKind.UNMOUNT && "alloc-2".equals(e.allocationId())
                && Boolean.TRUE.equals(e.success()));
    }

    /**
     * A node command produced with a known traceparent: the worker's CONSUMER span
     * {@code node-commands process} is its child, the CSI calls are children of that span, and the
     * mount-done and the node event it causes carry the same trace with their own span ids.
     */
    @Test
    void aTracedCommandCarriesItsTraceToMountDoneTheNodeEventAndTheCsiCalls() throws Exception {
        String ext = createVolume("traced-vol");
        NodeCommand command = mount("traced", ext, "alloc-t", false);
        String sent = "00-" + TRACE_ID + "-" + PARENT_SPAN_ID + "-01";
        List<org.jboss.logmanager.ExtLogRecord> logged;
        try (LogCapture log = LogCapture.of(NodeMountWorker.class.getName())) {
            sendTraced(command, sent);
            await().atMost(WAIT).until(() -> log.records().stream()
                    .anyMatch(r -> r.getFormattedMessage().contains("alloc-t")));
            logged = log.records();
        }
        org.jboss.logmanager.ExtLogRecord line = logged.stream()
                .filter(r -> r.getFormattedMessage().contains("alloc-t")).findFirst().orElseThrow();
        assertEquals(TRACE_ID, line.getMdc("traceId"), "the command's log line carries its trace id (%X{traceId})");

        String marker = "\"commandId\":\"" + command.commandId() + "\"";
        ConsumerRecord<String, String> done = kafka.awaitRecord("mount-done", r -> r.value().contains(marker), WAIT);
        assertTrue(EventCodec.decode(MountDone.class, done.value()).succeeded(), done.value());
        String doneParent = KafkaTestClient.header(done, "traceparent");
        assertEquals(TRACE_ID, traceIdOf(doneParent), "mount-done continues the command's trace: " + doneParent);
        assertFalse(PARENT_SPAN_ID.equals(spanIdOf(doneParent)), "with a span of the worker: " + doneParent);

        ConsumerRecord<String, String> event = kafka.awaitRecord("node-events", r -> {
            NodeEvent e = EventCodec.decode(NodeEvent.class, r.value());
            return e.kind() == NodeEventKind.MOUNT && "alloc-t".equals(e.allocationId());
        }, WAIT);
        String eventParent = KafkaTestClient.header(event, "traceparent");
        assertEquals(TRACE_ID, traceIdOf(eventParent), "the node event the command caused is in its trace too");

        SpanData process = awaitSpan(s -> s.getName().equals("node-commands process")
                && s.getTraceId().equals(TRACE_ID));
        assertEquals(SpanKind.CONSUMER, process.getKind());
        assertEquals(PARENT_SPAN_ID, process.getParentSpanId(), "a child of the producer's span");
        SpanData publish = awaitSpan(s -> s.getName().equals("csi/NodePublishVolume") && s.getTraceId().equals(TRACE_ID));
        assertEquals(SpanKind.CLIENT, publish.getKind());
        assertEquals(process.getSpanId(), publish.getParentSpanId(), "CSI calls are children of the command's span");
        SpanData stage = awaitSpan(s -> s.getName().equals("csi/NodeStageVolume") && s.getTraceId().equals(TRACE_ID));
        assertEquals(process.getSpanId(), stage.getParentSpanId());
        SpanData produced = awaitSpan(s -> s.getName().equals("mount-done publish") && s.getTraceId().equals(TRACE_ID));
        assertEquals(SpanKind.PRODUCER, produced.getKind());
        assertEquals(process.getSpanId(), produced.getParentSpanId());
        assertEquals(produced.getSpanId(), spanIdOf(doneParent), "mount-done carries its publish span");

        assertTrue(run(unmount("traced", ext, "alloc-t")).succeeded());
    }

    /**
     * The node gauges show exactly this test's volume: two allocations of one volume add 1 staged
     * volume and 2 publications, the first release takes one publication away, the last release
     * the staging too (deltas from the values before, read when no command is in flight). The node
     * command histogram counts exactly its 2 mounts and 2 unmounts, the CSI RPC histogram has the
     * stage and publish buckets and counts probes, the plugins gauge shows the one healthy plugin,
     * there are no per-volume tags, and readiness names its checks.
     */
    @Test
    void metricsCountExactlyThisTestsVolumesAndCommandsAndReadinessNamesItsChecks() throws Exception {
        awaitCommandsSettled();
        String before = scrape();
        double staged = value(before, "csi_node_volumes_staged");
        double published = value(before, "csi_node_volumes_published");
        double mounts = count(before, "csi_node_command_seconds_count", "kind=\"mount\"", "outcome=\"succeeded\"");
        double unmounts = count(before, "csi_node_command_seconds_count", "kind=\"unmount\"", "outcome=\"succeeded\"");

        String ext = createVolume("metrics-vol");
        assertTrue(run(mount("metrics", ext, "alloc-m1", false)).succeeded());
        assertTrue(run(mount("metrics", ext, "alloc-m2", false)).succeeded());
        assertGauges(staged + 1, published + 2, "one volume staged once and published for two allocations");
        assertTrue(run(unmount("metrics", ext, "alloc-m1")).succeeded());
        assertGauges(staged + 1, published + 1, "alloc-m2 still uses the staging");
        assertTrue(run(unmount("metrics", ext, "alloc-m2")).succeeded());
        assertGauges(staged, published, "the last release unstages");

        // a command's timer is recorded on the broker's acknowledgement of its mount-done, before its offset commits
        awaitCommandsSettled();
        String metrics = scrape();
        assertEquals(mounts + 2, count(metrics, "csi_node_command_seconds_count", "kind=\"mount\"",
                "outcome=\"succeeded\""), "the two mounts of this test");
        assertEquals(unmounts + 2, count(metrics, "csi_node_command_seconds_count", "kind=\"unmount\"",
                "outcome=\"succeeded\""), "the two unmounts of this test");
        assertBucket(metrics, "csi_node_command_seconds_bucket", "0.05", "kind=\"mount\"", "outcome=\"succeeded\"");
        assertBucket(metrics, "csi_rpc_seconds_bucket", "0.05", "plugin=\"hp\"", "rpc=\"NodeStageVolume\"", "code=\"OK\"");
        assertBucket(metrics, "csi_rpc_seconds_bucket", "1.0", "plugin=\"hp\"", "rpc=\"NodePublishVolume\"", "code=\"OK\"");
        assertTrue(count(metrics, "csi_rpc_seconds_count", "plugin=\"hp\"", "rpc=\"Probe\"", "code=\"OK\"") > 0,
                "probes are CSI calls too");
        assertEquals(1.0, value(metrics, "csi_plugins", "healthy=\"true\""), metrics);
        assertEquals(0.0, value(metrics, "csi_plugins", "healthy=\"false\""));
        // issue 34's csi_volume_stats_* gauges are per volume on purpose (as kubelet's volume stats); no other meter is
        String others = metrics.lines().filter(l -> !l.startsWith("csi_volume_stats_"))
                .collect(java.util.stream.Collectors.joining("\n"));
        assertFalse(java.util.regex.Pattern.compile("[{,](volume|volume_id|alloc|allocation|node|node_id)=").matcher(others).find(),
                "no per-volume, per-allocation or per-node tags");
        given().get("/q/health/ready").then().statusCode(200)
                .body("checks.name", hasItems("node-mount-worker", "kafka"))
                .body("checks.find { it.name == 'kafka' }.status", org.hamcrest.Matchers.equalTo("UP"))
                .body("checks.find { it.name == 'kafka' }.data.consumer", containsString("node-commands"));
    }

    private static String scrape() {
        return given().get("/q/metrics").then().statusCode(200).extract().asString();
    }

    private static void assertGauges(double staged, double published, String why) {
        String metrics = scrape();
        assertEquals(staged, value(metrics, "csi_node_volumes_staged"), "staged: " + why);
        assertEquals(published, value(metrics, "csi_node_volumes_published"), "published: " + why);
    }

    /**
     * Waits until the worker's group committed every node command sent so far. The worker commits
     * a command's offset only after the broker acknowledged its mount-done, so then no command is in
     * flight and every command timer is recorded.
     */
    private static void awaitCommandsSettled() {
        TopicPartition partition = new TopicPartition("node-commands", NodePartitioner.partitionFor(NODE, 4));
        try (Admin admin = io.csiorchestrator.localinfra.Kraft.admin(kafka.bootstrapServers(), kafka.security())) {
            await().atMost(WAIT).until(() -> {
                long end = kafka.endOffsets("node-commands").get(partition);
                OffsetAndMetadata committed = admin.listConsumerGroupOffsets("node-mount-worker-" + NODE)
                        .partitionsToOffsetAndMetadata().get().get(partition);
                return committed == null ? end == 0 : committed.offset() == end;
            });
        }
    }

    private static List<String> lines(String metrics, String name, String... labels) {
        return metrics.lines().filter(l -> l.startsWith(name + "{") || l.startsWith(name + " "))
                .filter(l -> java.util.Arrays.stream(labels).allMatch(l::contains)).toList();
    }

    private static void assertBucket(String metrics, String name, String le, String... labels) {
        List<String> found = lines(metrics, name, labels).stream().filter(l -> l.contains("le=\"" + le + "\"")).toList();
        assertEquals(1, found.size(), name + " " + List.of(labels) + " le=" + le + " in:\n" + lines(metrics, name));
    }

    private static double count(String metrics, String name, String... labels) {
        return lines(metrics, name, labels).stream().mapToDouble(NodeMountWorkerTest::sampleValue).sum();
    }

    private static double value(String metrics, String name, String... labels) {
        List<String> found = lines(metrics, name, labels);
        assertEquals(1, found.size(), name + " " + List.of(labels) + ": " + found);
        return sampleValue(found.get(0));
    }

    private static double sampleValue(String line) {
        return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
    }

    @Test
    void aRedeliveredCommandIsAnsweredWithoutASecondPluginCall() throws Exception {
        String ext = createVolume("redelivered-vol");
        NodeCommand command = mount("redelivered", ext, "alloc-r", false);
        assertTrue(run(command).succeeded());
        long stages = plugin.calls("NodeStageVolume");
        long publishes = plugin.calls("NodePublishVolume");
        send(command);
        List<MountDone> answers = awaitDone(command, 2);
        assertEquals(answers.get(0).hostPath(), answers.get(1).hostPath());
        assertTrue(answers.get(1).succeeded());
        assertEquals(stages, plugin.calls("NodeStageVolume"));
        assertEquals(publishes, plugin.calls("NodePublishVolume"));
        assertEquals(1, mountCount(paths().targetPath("alloc-r", NS, "redelivered")));
        assertTrue(run(unmount("redelivered", ext, "alloc-r")).succeeded());
    }

    @Test
    void aPluginErrorReachesMountDoneAsTheOperatorMessage() throws Exception {
        String ext = createVolume("faulty-vol");
        plugin.faults("NodePublishVolume PERMISSION_DENIED 1 backend refused the mount\n");
        MountDone done = run(mount("faulty", ext, "alloc-f", false));
        assertFalse(done.succeeded());
        assertEquals("PERMISSION_DENIED", done.errorCode());
        assertTrue(done.errorMessage().contains("backend refused the mount"), done.errorMessage());
        assertTrue(done.errorMessage().contains("NodePublishVolume"), done.errorMessage());
        NodeEvent event = awaitEvent(e -> e.kind() == NodeEventKind.MOUNT && "alloc-f".equals(e.allocationId()));
        assertEquals(Boolean.FALSE, event.success());
        assertEquals(done.errorMessage(), event.error());
        // the failed mount was rolled back: nothing mounted, nothing left staged
        assertFalse(mounted(paths().targetPath("alloc-f", NS, "faulty")));
        assertFalse(mounted(paths().stagingPath(NS, "faulty")));
        assertTrue(worker.operations().record(new VolumeKey(NS, "faulty")).orElseThrow().usages().isEmpty());
    }

    /**
     * A plugin whose error echoes its request (the fault message's {@code {request}}: secrets and
     * mount flags included) fails a mount that carries a sealed secret and a sealed mount flag,
     * each a canary. The echo reaches the worker (the mount-done names the plugin's message, with
     * the canaries blanked), and neither canary appears in anything the worker emits: mount-done
     * and node-events records, the spans it ends, its log (every logger), its metrics, and the
     * files under its records/ and events/ directories.
     */
    @Test
    void aPluginErrorThatEchoesSecretsAndMountFlagsLeaksNeitherFromTheWorker() throws Exception {
        String secret = "canary-secret-" + UUID.randomUUID();
        String flag = "canary-flag-" + UUID.randomUUID();
        String ext = createVolume("echo-vol");
        io.csiorchestrator.events.SealedSecrets sealed = sealFor(NODE,
                new io.csiorchestrator.events.SecretPayload(Map.of("password", secret), List.of(flag)), "echo");
        NodeCommand command = new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, NS, "echo",
                PLUGIN, ext, "alloc-echo", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                null, Map.of(), Map.of(), sealed, Instant.now());
        String traceId = UUID.randomUUID().toString().replace("-", "");
        plugin.faults("NodeStageVolume PERMISSION_DENIED 1 backend refused {request}\n");

        MountDone done;
        NodeEvent event;
        List<org.jboss.logmanager.ExtLogRecord> logged;
        try (LogCapture log = LogCapture.of("")) {
            sendTraced(command, "00-" + traceId + "-" + PARENT_SPAN_ID + "-01");
            done = awaitDone(command);
            event = awaitEvent(e -> e.kind() == NodeEventKind.MOUNT && "alloc-echo".equals(e.allocationId()));
            awaitSpan(s -> s.getName().equals("node-commands process") && s.getTraceId().equals(traceId));
            logged = log.records();
        }
        assertFalse(done.succeeded());
        assertEquals("PERMISSION_DENIED", done.errorCode());

        List<String> leaks = new java.util.ArrayList<>();
        Predicate<String> leaky = text -> text != null && (text.contains(secret) || text.contains(flag));
        for (String topic : List.of("mount-done", "node-events")) {
            kafka.readAll(topic).stream().filter(r -> leaky.test(r.value())).forEach(r -> leaks.add(topic + ": " + r.value()));
        }
        spans.spans().stream().filter(span -> leaky.test(span.toString())).forEach(span -> leaks.add("span " + span));
        for (org.jboss.logmanager.ExtLogRecord r : logged) {
            StringBuilder text = new StringBuilder(String.valueOf(r.getFormattedMessage()));
            for (Throwable t = r.getThrown(); t != null; t = t.getCause()) {
                text.append(" / ").append(t);
            }
            if (leaky.test(text.toString())) {
                leaks.add("log " + r.getLoggerName() + ": " + text);
            }
        }
        if (leaky.test(scrape())) {
            leaks.add("metrics");
        }
        for (String dir : List.of("records", "events")) {
            Path under = paths().root().resolve(dir);
            if (Files.isDirectory(under)) {
                try (var files = Files.walk(under)) {
                    for (Path file : files.filter(Files::isRegularFile).toList()) {
                        if (leaky.test(Files.readString(file))) {
                            leaks.add("file " + file);
                        }
                    }
                }
            }
        }
        assertTrue(leaks.isEmpty(), "the canaries leaked: " + leaks);
        assertTrue(done.errorMessage().contains("backend refused") && done.errorMessage().contains("***"),
                "the plugin's echo reached the worker, blanked: " + done.errorMessage());
        assertEquals(done.errorMessage(), event.error());
        assertTrue(Files.readString(paths().recordFile(NS, "echo")).contains(command.commandId()),
                "the record file scanned holds this command's answer");
        assertFalse(mounted(paths().stagingPath(NS, "echo")));
    }

    /**
     * Issue 20 item 4, "node-1 cannot open node-2's secret": a mount command for this node whose secrets are sealed
     * for another node (node-2's key) is refused with SECRETS_UNREADABLE, the reason naming the recipient, its key id
     * and this node; nothing is staged or published, no CSI node call is made for it, and the secret appears neither
     * in the answer nor in the worker's log (every logger). Then the same secret sealed for this node mounts.
     */
    @Test
    void aCommandWhoseSecretsAreSealedForAnotherNodeIsRefusedNamingTheRecipient() throws Exception {
        String secret = "canary-node2-" + UUID.randomUUID();
        String ext = createVolume("other-node-vol");
        io.csiorchestrator.events.SecretPayload payload = new io.csiorchestrator.events.SecretPayload(
                Map.of("password", secret), List.of());
        io.csiorchestrator.events.SealedSecrets forNode2 = sealFor("node-2", payload, "othernode");
        NodeCommand command = new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, NS, "othernode",
                PLUGIN, ext, "alloc-n2", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                null, Map.of(), Map.of(), forNode2, Instant.now());
        long stagesBefore = plugin.successfulCalls("NodeStageVolume");
        MountDone done;
        List<org.jboss.logmanager.ExtLogRecord> logged;
        try (LogCapture log = LogCapture.of("")) {
            done = run(command);
            logged = log.records();
        }
        assertFalse(done.succeeded(), done.toString());
        assertEquals("SECRETS_UNREADABLE", done.errorCode());
        assertTrue(done.errorMessage().contains("node:node-2") && done.errorMessage().contains("'" + forNode2.keyId() + "'")
                && done.errorMessage().contains("node:" + NODE), done.errorMessage());
        assertFalse(done.errorMessage().contains(secret), done.errorMessage());
        for (org.jboss.logmanager.ExtLogRecord r : logged) {
            StringBuilder text = new StringBuilder(String.valueOf(r.getFormattedMessage()));
            for (Throwable t = r.getThrown(); t != null; t = t.getCause()) {
                text.append(" / ").append(t);
            }
            assertFalse(text.toString().contains(secret), "secret in the log of " + r.getLoggerName() + ": " + text);
        }
        assertEquals(stagesBefore, plugin.successfulCalls("NodeStageVolume"), "no NodeStage for a refused command");
        assertFalse(mounted(paths().stagingPath(NS, "othernode")));
        assertFalse(mounted(paths().targetPath("alloc-n2", NS, "othernode")));

        // the same secret sealed for this node opens: the mount goes through
        NodeCommand mine = new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, NS, "othernode",
                PLUGIN, ext, "alloc-n2", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                null, Map.of(), Map.of(), sealFor(NODE, payload, "othernode"), Instant.now());
        MountDone ok = run(mine);
        assertTrue(ok.succeeded(), ok.toString());
        assertTrue(mounted(paths().targetPath("alloc-n2", NS, "othernode")));
        assertTrue(run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.UNMOUNT, NS, "othernode", PLUGIN,
                ext, "alloc-n2", null, null, false, null, null, Map.of(), Map.of(), null, Instant.now())).succeeded());
    }

    /**
     * Issue 20 item 4, rotation without downtime: a new sealing key for this node is added to its key file and
     * published (TestIdentities.rotateSealing, as {@code ./csi identity rotate} does); the running worker, not
     * restarted, mounts a volume whose secrets are sealed for the new key (it reads its key file again for the unknown
     * kid) and still mounts one sealed for the old key.
     */
    @Test
    void aRotatedSealingKeyOpensWithoutRestartAndTheOldKeyStillOpens() throws Exception {
        io.csiorchestrator.events.identity.Principal self = io.csiorchestrator.events.identity.Principal.node(NODE);
        io.csiorchestrator.events.SecretPayload payload = new io.csiorchestrator.events.SecretPayload(
                Map.of("password", "rotated-" + UUID.randomUUID()), List.of());
        String ext = createVolume("rotation-vol");
        io.csiorchestrator.events.SealedSecrets old = sealFor(NODE, payload, "rotation");
        io.csiorchestrator.events.identity.SealingKeys rotated = io.csiorchestrator.testkit.TestIdentities.rotateSealing(
                self, "node." + NODE + ".enc.k-" + UUID.randomUUID().toString().substring(0, 8));
        io.csiorchestrator.events.SealedSecrets fresh = sealFor(NODE, payload, "rotation");
        assertEquals(rotated.newest().kid(), fresh.keyId(), "sealed for the new key");
        assertFalse(fresh.keyId().equals(old.keyId()));
        for (var sealed : List.of(fresh, old)) {
            String alloc = "alloc-rot-" + sealed.keyId().hashCode();
            MountDone done = run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, NS, "rotation",
                    PLUGIN, ext, alloc, AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                    null, Map.of(), Map.of(), sealed, Instant.now()));
            assertTrue(done.succeeded(), sealed.keyId() + ": " + done);
            assertTrue(run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.UNMOUNT, NS, "rotation", PLUGIN,
                    ext, alloc, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now())).succeeded());
        }
    }

    @Test
    void aHostileIdIsRejectedAndNothingIsCreatedOutsideTheRoot() throws Exception {
        Path root = paths().root();
        String json = EventCodec.encodeToString(mount("placeholder", "ext", "alloc-h", false))
                .replace("\"volumeId\":\"placeholder\"", "\"volumeId\":\"../x\"");
        sendRaw("hostile", json);
        ConsumerRecord<String, String> dead = kafka.awaitRecord("node-commands-dead-letter",
                r -> r.value().contains("../x"), WAIT);
        String reason = KafkaTestClient.header(dead, DeadLetters.REASON);
        assertTrue(reason.contains("volumeId") && reason.contains("../x"), reason);
        assertFalse(Files.exists(root.resolve("staging").resolve(NS).resolve("..").resolve("x").normalize()));
        assertFalse(Files.exists(root.getParent().resolve("x")));
        assertFalse(Files.exists(root.resolve("staging/x")));
        assertFalse(Files.exists(root.resolve("per-alloc/alloc-h")));
    }

    /**
     * Issue 20 item 7 (the Kubernetes subpath escape, CVE-2017-1002101): a symbolic link planted under the
     * worker's root that points to a directory outside it, in turn AS the publish target, AS the staging
     * path and AS the allocation directory (a component of the target path), makes the mount fail with
     * {@code UNSAFE_PATH} and a message naming the refused path and the link. In each case the plugin gets
     * no NodeStageVolume or NodePublishVolume call, the outside directory is not a mount point, keeps its
     * mode 0755 and its single file, and the volume's record holds no usage. With the link at the target
     * removed, the same mount of that volume succeeds: the refusal was the link's doing.
     */
    @Test
    void aSymlinkPlantedUnderTheRootPointingOutsideIsRefusedBeforeAnyMountAndNothingOutsideChanges() throws Exception {
        Path outside = Files.createDirectory(WorkerRootResource.root.resolve("outside-" + UUID.randomUUID()));
        Files.writeString(outside.resolve("keep.txt"), "outside the worker's root");
        new io.csiorchestrator.worker.state.PosixDirs().chmod(outside, 0755);

        String extTarget = createVolume("sl-target-vol");
        Path target = paths().targetPath("alloc-sl1", NS, "sl-target");
        Files.createDirectories(target.getParent());
        Files.createSymbolicLink(target, outside);
        assertRefusedAndOutsideUntouched(mount("sl-target", extTarget, "alloc-sl1", false), target, target, outside);

        String extStaging = createVolume("sl-staging-vol");
        Path staging = paths().stagingPath(NS, "sl-staging");
        Files.createDirectories(staging.getParent());
        Files.createSymbolicLink(staging, outside);
        assertRefusedAndOutsideUntouched(mount("sl-staging", extStaging, "alloc-sl2", false), staging, staging, outside);

        String extParent = createVolume("sl-parent-vol");
        Path allocDir = paths().allocationDir("alloc-sl3");
        Files.createDirectories(allocDir.getParent());
        Files.createSymbolicLink(allocDir, outside);
        assertRefusedAndOutsideUntouched(mount("sl-parent", extParent, "alloc-sl3", false),
                paths().targetPath("alloc-sl3", NS, "sl-parent"), allocDir, outside);

        Files.delete(target);
        MountDone done = run(mount("sl-target", extTarget, "alloc-sl1", false));
        assertTrue(done.succeeded(), done.toString());
        assertTrue(mounted(target));
        assertTrue(run(unmount("sl-target", extTarget, "alloc-sl1")).succeeded());
        Files.delete(staging);
        Files.delete(allocDir);
    }

    private void assertRefusedAndOutsideUntouched(NodeCommand command, Path refused, Path link, Path outside)
            throws Exception {
        long stages = plugin.calls("NodeStageVolume");
        long publishes = plugin.calls("NodePublishVolume");
        MountDone done = run(command);
        assertFalse(done.succeeded(), done.toString());
        assertEquals("UNSAFE_PATH", done.errorCode(), done.toString());
        assertTrue(done.errorMessage().contains(refused.toString()), done.errorMessage());
        assertTrue(done.errorMessage().contains(link + " is a symbolic link"), done.errorMessage());
        assertEquals(stages, plugin.calls("NodeStageVolume"), "no stage through the link");
        assertEquals(publishes, plugin.calls("NodePublishVolume"), "no publish through the link");
        assertFalse(MountTable.readSelf().isMountPoint(outside), "nothing mounted outside the root");
        assertEquals(0755, new io.csiorchestrator.worker.state.PosixDirs().mode(outside), "outside not chmodded");
        try (java.util.stream.Stream<Path> files = Files.list(outside)) {
            assertEquals(List.of(outside.resolve("keep.txt")), files.toList(), "nothing created outside the root");
        }
        assertTrue(Files.isSymbolicLink(link), "the planted link is left for the operator to see");
        assertTrue(worker.operations().record(new VolumeKey(NS, command.volumeId()))
                .map(r -> r.usages().isEmpty()).orElse(true), "no usage recorded");
    }

    /**
     * Every kind of {@link HostileRecords} (bad CloudEvents headers, values that are not a command) sent
     * to this node's partition of node-commands, keyed with this node, then a valid command on the same
     * partition: the command is answered on mount-done within {@link #WAIT}, and every hostile record is
     * on node-commands-dead-letter with a reason naming its header or field.
     */
    @Test
    void everyHostileKindIsDeadLetteredWithItsReasonAndTheCommandAfterThemIsAnswered() {
        NodeCommand template = unmount("hostile", "ext-hostile", "alloc-hostile");
        RecordHeaders ce = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_COMMAND, "/test").writeTo(ce);
        Map<String, String> headers = new java.util.LinkedHashMap<>();
        ce.forEach(h -> headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
        HostileRecords.Template shape = new HostileRecords.Template(NODE, EventCodec.encodeToString(template), headers,
                EventType.NODE_COMMAND.cloudEventType(), EventType.MOUNT_DONE.cloudEventType(),
                List.of("commandId", "nodeId", "kind", "namespace", "volumeId", "pluginId", "externalVolumeId", "allocationId",
                        "issuedAt"),
                List.of("nodeId", "namespace", "volumeId", "pluginId", "allocationId"), List.of("kind"), List.of("issuedAt"),
                EventCodec.encodeToString(new io.csiorchestrator.events.ClaimRequested("req-x", NS, "hostile", "alloc-hostile",
                        null, io.csiorchestrator.events.ClaimMode.RELEASE, null, null, false, null, null, null, Instant.now())));
        List<HostileRecords.Kind> kinds = HostileRecords.of(shape);
        assertTrue(kinds.size() >= 50, kinds.size() + " kinds");
        Map<HostileRecords.Kind, RecordMetadata> sent = HostileRecords.send(kafka, "node-commands",
                NodePartitioner.partitionFor(NODE, 4), kinds);

        NodeCommand valid = unmount("hostile", "ext-hostile", "alloc-hostile");
        send(valid);
        awaitDone(valid);
        List<String> problems = HostileRecords.deadLetterProblems(kafka, "node-commands-dead-letter", sent, WAIT);
        assertEquals(List.of(), problems, problems.size() + " of " + sent.size()
                + " hostile node-commands records not dead-lettered with their reason");
    }

    @Test
    void aWorkerRestartWithIntactMountsCostsNoPluginCall() throws Exception {
        String ext = createVolume("intact-vol");
        assertTrue(run(mount("intact", ext, "alloc-i1", false)).succeeded());
        assertTrue(run(mount("intact", ext, "alloc-i2", false)).succeeded());
        long before = plugin.calls("NodeStageVolume") + plugin.calls("NodePublishVolume");

        Instant stopped = Instant.now();
        worker.stop();
        ConsumerRecord<String, String> last = kafka.awaitRecord("plugin-health", r -> {
            PluginHealth h = EventCodec.decode(PluginHealth.class, r.value());
            return h.pluginId().equals(PLUGIN) && !h.reportsHealthy() && !h.observedAt().isBefore(stopped);
        }, WAIT);
        assertTrue(EventCodec.decode(PluginHealth.class, last.value()).healthDescription().contains("shutting down"),
                "a last unhealthy fingerprint on shutdown");
        worker.start();
        await().atMost(WAIT).until(() -> worker.plugins().node(PLUGIN).isPresent() && !worker.restoring());
        // the worker answers commands again
        NodeCommand probe = unmount("intact", ext, "alloc-i2");
        assertTrue(run(probe).succeeded());
        assertEquals(before, plugin.calls("NodeStageVolume") + plugin.calls("NodePublishVolume"),
                "intact mounts are verified in mountinfo, not by calling the plugin");
        assertTrue(mounted(paths().targetPath("alloc-i1", NS, "intact")));
        assertTrue(run(unmount("intact", ext, "alloc-i1")).succeeded());
    }

    /**
     * A kill -9 of the worker between stage and publish, reproduced in-process: the worker is
     * stopped, the state a crash leaves is built (the volume staged by a real NodeStageVolume, the
     * record holding the usage reference as PUBLISHING and the staging as STAGING, the command not
     * yet answered so it is redelivered), then the worker starts.
     */
    @Test
    void aCrashBetweenStageAndPublishConvergesWithoutDuplicates() throws Exception {
        String ext = createVolume("crash-vol");
        VolumeKey key = new VolumeKey(NS, "crash");
        Path staging = paths().stagingPath(NS, "crash");
        Path target = paths().targetPath("alloc-c", NS, "crash");
        NodeCommand command = mount("crash", ext, "alloc-c", false);

        worker.stop();
        paths().ensureDirectory(staging);
        paths().ensureTargetParent(target);
        VolumeCapability capability = VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_MULTI_WRITER,
                CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE);
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            client.nodeStage(NodeStageVolumeRequest.newBuilder().setVolumeId(ext)
                    .setStagingTargetPath(staging.toString()).setVolumeCapability(capability).build())
                    .await().atMost(Duration.ofSeconds(20));
        }
        Usage usage = new Usage("alloc-c", target.toString(), false, AccessMode.MULTI_NODE_MULTI_WRITER,
                AttachmentMode.FILE_SYSTEM, null, Map.of(), Map.of(), null, PublishState.PUBLISHING, null);
        new MountRecordStore(paths()).save(VolumeRecord.empty(key, PLUGIN, ext, staging.toString())
                .withStage(StageState.STAGING).withUsage(usage));
        send(command);
        long stages = plugin.calls("NodeStageVolume");
        long publishes = plugin.calls("NodePublishVolume");

        worker.start();
        MountDone done = awaitDone(command);
        assertTrue(done.succeeded(), done.toString());
        await().atMost(WAIT).until(() -> !worker.restoring());
        assertEquals(stages, plugin.calls("NodeStageVolume"), "the staging made before the crash is reused");
        assertEquals(publishes + 1, plugin.calls("NodePublishVolume"), "published exactly once");
        assertEquals(1, mountCount(target), "no duplicate mount");
        assertEquals(1, mountCount(staging), "no duplicate staging");
        VolumeRecord record = worker.operations().record(key).orElseThrow();
        assertEquals(StageState.STAGED, record.stage());
        assertEquals(PublishState.PUBLISHED, record.usage("alloc-c").orElseThrow().state());
        assertTrue(run(unmount("crash", ext, "alloc-c")).succeeded());
        assertFalse(mounted(staging));
    }

    @Test
    void theHealerStagesAgainAndRepublishesAfterAPluginRestartLostTheStaging() throws Exception {
        String ext = createVolume("heal-vol");
        assertTrue(run(mount("heal", ext, "alloc-x", false)).succeeded());
        Path staging = paths().stagingPath(NS, "heal");
        assertTrue(mounted(staging));
        long stages = plugin.calls("NodeStageVolume");
        long publishes = plugin.calls("NodePublishVolume");
        Instant restart = Instant.now();

        plugin.stop(); // --unmount-staging-on-exit: the staging dies with the plugin
        assertFalse(mounted(staging));
        plugin.start();

        // the plugin-restart heal or the periodic check, whichever runs first once the plugin is back (a
        // periodic check that ran before the worker saw the plugin go may have reported a failed heal)
        NodeEvent heal = awaitEvent(e -> e.kind() == NodeEventKind.HEAL && "heal".equals(e.volumeId())
                && !e.occurredAt().isBefore(restart) && Boolean.TRUE.equals(e.success()));
        assertEquals(Boolean.TRUE, heal.success(), heal.toString());
        assertTrue(mounted(staging), "staged again");
        // the plugin-restart heal stages and publishes again; the periodic stale-mount check may have done it
        // first (both are serialized per volume and NodeStage/NodePublish are idempotent): once or twice, never more
        long staged = plugin.calls("NodeStageVolume") - stages;
        long published = plugin.calls("NodePublishVolume") - publishes;
        assertTrue(staged >= 1 && staged <= 2, "NodeStageVolume calls: " + staged);
        assertTrue(published >= 1 && published <= 2, "NodePublishVolume calls: " + published);
        Path target = paths().targetPath("alloc-x", NS, "heal");
        assertTrue(mounted(target));
        Files.writeString(target.resolve("after-heal.txt"), "ok");
        assertEquals("ok", Files.readString(staging.resolve("after-heal.txt")));
        assertTrue(run(unmount("heal", ext, "alloc-x")).succeeded());
    }

    /**
     * The healer's periodic check: the staging and the target of a published volume are lazily
     * unmounted ({@code umount -l}) behind the worker's back; a HEAL node event names both as
     * not-mounted, both are mount points again, {@code csi_node_heals_total} counts them, and a
     * file written through the target lands in the plugin's directory of the volume.
     */
    @Test
    void aLazilyUnmountedStagingAndTargetAreMountedAgainByThePeriodicHealer() throws Exception {
        String ext = createVolume("lazy-vol");
        assertTrue(run(mount("lazy", ext, "alloc-lazy", false)).succeeded());
        Path staging = paths().stagingPath(NS, "lazy");
        Path target = paths().targetPath("alloc-lazy", NS, "lazy");
        Instant broken = Instant.now();

        umount("-l", target);
        umount("-l", staging);
        assertFalse(mounted(target));
        assertFalse(mounted(staging));

        // The healer may pass between the two unmounts: it then heals what it found (the target alone, whose publish
        // fails once the staging is gone under it, or succeeds before), and a later pass the rest. So: the first
        // successful heal since the break, and what every heal since the break found, together.
        NodeEvent heal = awaitEvent(e -> e.kind() == NodeEventKind.HEAL && "lazy".equals(e.volumeId())
                && !e.occurredAt().isBefore(broken) && Boolean.TRUE.equals(e.success()));
        assertEquals("Heal stale mount", heal.message());
        Map<String, String> found = new java.util.HashMap<>();
        kafka.readAll("node-events").stream().map(r -> EventCodec.decode(NodeEvent.class, r.value()))
                .filter(e -> e.kind() == NodeEventKind.HEAL && "lazy".equals(e.volumeId())
                        && !e.occurredAt().isBefore(broken) && !e.occurredAt().isAfter(heal.occurredAt()))
                .forEach(e -> found.putAll(e.details()));
        assertEquals("not-mounted", found.get("staging"), found.toString());
        assertEquals("not-mounted", found.get("target/alloc-lazy"), found.toString());
        assertTrue(mounted(staging), "staged again");
        assertTrue(mounted(target), "published again");
        Files.writeString(target.resolve("after-lazy.txt"), "usable");
        assertEquals("usable", Files.readString(volumeDir(ext).resolve("after-lazy.txt")));
        given().get("/q/metrics").then().statusCode(200)
                .body(containsString("csi_node_heals_total{kind=\"not-mounted\",outcome=\"succeeded\",path=\"target\"}"))
                .body(containsString("csi_node_heals_total{kind=\"not-mounted\",outcome=\"succeeded\",path=\"staging\"}"));
        assertTrue(run(unmount("lazy", ext, "alloc-lazy")).succeeded());
        assertFalse(mounted(target));
        assertFalse(mounted(staging));
    }

    /**
     * A corrupted target, for real: a FUSE file system is mounted over the published target (its
     * "daemon" a process holding /dev/fuse) and the daemon is killed, so that {@code stat} of the
     * target fails with ENOTCONN ("transport endpoint is not connected") while the mount table still
     * lists it. The healer unmounts it first (NodeUnpublishVolume), publishes again, reports
     * {@code corrupted (ENOTCONN)} in a HEAL node event, and the target is usable: a file written
     * through it lands in the plugin's directory of the volume.
     */
    @Test
    void aTargetWhoseFuseDaemonWasKilledIsUnmountedAndPublishedAgain() throws Exception {
        String ext = createVolume("fuse-vol");
        assertTrue(run(mount("fuse", ext, "alloc-fuse", false)).succeeded());
        Path target = paths().targetPath("alloc-fuse", NS, "fuse");
        long unpublishes = plugin.calls("NodeUnpublishVolume");
        Instant broken = Instant.now();

        mountFuseAndKillItsDaemon(target);

        NodeEvent heal = awaitEvent(e -> e.kind() == NodeEventKind.HEAL && "fuse".equals(e.volumeId())
                && !e.occurredAt().isBefore(broken));
        assertEquals(Boolean.TRUE, heal.success(), heal.toString());
        assertEquals("corrupted (ENOTCONN)", heal.details().get("target/alloc-fuse"), heal.toString());
        assertEquals(unpublishes + 1, plugin.calls("NodeUnpublishVolume"), "unmounted through the plugin first");
        assertFalse(fuseMountedAt(target), "the dead FUSE mount is gone");
        assertEquals(1, mountCount(target), "one mount at the target: the volume's");
        Files.writeString(target.resolve("after-fuse.txt"), "usable");
        assertEquals("usable", Files.readString(volumeDir(ext).resolve("after-fuse.txt")));
        given().get("/q/metrics").then().statusCode(200)
                .body(containsString("csi_node_heals_total{kind=\"corrupted\",outcome=\"succeeded\",path=\"target\"}"));
        assertTrue(run(unmount("fuse", ext, "alloc-fuse")).succeeded());
        assertFalse(mounted(target));
    }

    /** Read from the mount table's text only: a stat of a FUSE mount whose daemon never answers would block. */
    /**
     * The condition poller with the real plugin: a published volume is first reported normal; the
     * plugin's marker file, written through the target, makes NodeGetVolumeStats answer abnormal,
     * which becomes a volume-condition node event with the plugin's message and counts in
     * {@code csi_node_volumes_abnormal}; removing the marker is reported as normal again.
     */
    @Test
    void aVolumeConditionThePluginReportsAbnormalIsANodeEventAndSoIsItsReturnToNormal() throws Exception {
        String ext = createVolume("cond-vol");
        Instant mounted = Instant.now();
        assertTrue(run(mount("cond", ext, "alloc-cond", false)).succeeded());
        Path target = paths().targetPath("alloc-cond", NS, "cond");
        NodeEvent first = awaitEvent(e -> e.kind() == NodeEventKind.VOLUME_CONDITION && "cond".equals(e.volumeId())
                && !e.occurredAt().isBefore(mounted));
        assertEquals("normal", first.details().get("condition"), first.toString());

        Instant marked = Instant.now();
        Files.writeString(target.resolve(".csi-condition-abnormal"), "bad sectors on the backing disk\n");
        NodeEvent abnormal = awaitEvent(e -> e.kind() == NodeEventKind.VOLUME_CONDITION && "cond".equals(e.volumeId())
                && !e.occurredAt().isBefore(marked));
        assertEquals("abnormal", abnormal.details().get("condition"), abnormal.toString());
        assertEquals("bad sectors on the backing disk", abnormal.details().get("message"));
        assertEquals("Volume condition abnormal", abnormal.message());
        assertEquals(PLUGIN, abnormal.pluginId());
        assertEquals(NS, abnormal.namespace());
        given().get("/q/metrics").then().statusCode(200).body(containsString("csi_node_volumes_abnormal 1.0"));

        Instant cleared = Instant.now();
        Files.delete(volumeDir(ext).resolve(".csi-condition-abnormal"));
        NodeEvent normal = awaitEvent(e -> e.kind() == NodeEventKind.VOLUME_CONDITION && "cond".equals(e.volumeId())
                && !e.occurredAt().isBefore(cleared));
        assertEquals("normal", normal.details().get("condition"), normal.toString());
        assertTrue(run(unmount("cond", ext, "alloc-cond")).succeeded());
    }

    /**
     * A corrupted staging, for real: a FUSE mount over the staging whose daemon is killed (ENOTCONN). The
     * healer unpublishes the target, unstages (the plugin unmounts the dead FUSE mount and its bind mount),
     * stages and publishes again; the HEAL event names the staging {@code corrupted (ENOTCONN)} and a file
     * written through the target lands in the plugin's directory of the volume.
     */
    @Test
    void aStagingWhoseFuseDaemonWasKilledIsUnstagedThenStagedAndPublishedAgain() throws Exception {
        String ext = createVolume("fuse-stg-vol");
        assertTrue(run(mount("fusestg", ext, "alloc-fs", false)).succeeded());
        Path staging = paths().stagingPath(NS, "fusestg");
        Path target = paths().targetPath("alloc-fs", NS, "fusestg");
        long unstages = plugin.calls("NodeUnstageVolume");
        Instant broken = Instant.now();

        mountFuseAndKillItsDaemon(staging);

        NodeEvent heal = awaitEvent(e -> e.kind() == NodeEventKind.HEAL && "fusestg".equals(e.volumeId())
                && !e.occurredAt().isBefore(broken));
        assertEquals(Boolean.TRUE, heal.success(), heal.toString());
        assertEquals("corrupted (ENOTCONN)", heal.details().get("staging"), heal.toString());
        assertEquals(unstages + 1, plugin.calls("NodeUnstageVolume"), "unstaged through the plugin first");
        assertFalse(fuseMountedAt(staging), "the dead FUSE mount is gone");
        assertEquals(1, mountCount(staging), "one mount at the staging: the volume's");
        Files.writeString(target.resolve("after-fuse-staging.txt"), "usable");
        assertEquals("usable", Files.readString(volumeDir(ext).resolve("after-fuse-staging.txt")));
        assertTrue(run(unmount("fusestg", ext, "alloc-fs")).succeeded());
        assertFalse(mounted(staging));
    }

    /**
     * Mounts a FUSE file system at {@code path} whose "daemon" (a shell holding /dev/fuse, never answering)
     * is then killed: the mount stays in the mount table and {@code stat} of it fails with ENOTCONN.
     */
    private static void mountFuseAndKillItsDaemon(Path path) throws Exception {
        Process daemon = new ProcessBuilder("sh", "-c", "exec 3<>/dev/fuse && mount -i -t fuse -o "
                + "fd=3,rootmode=40000,user_id=0,group_id=0 csi-heal-test '" + path + "' && exec sleep 600")
                .redirectErrorStream(true).start();
        try {
            await().atMost(WAIT).until(() -> fuseMountedAt(path) || !daemon.isAlive());
            assertTrue(fuseMountedAt(path), "the FUSE mount is made: " + new String(
                    daemon.isAlive() ? new byte[0] : daemon.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        } finally {
            daemon.destroyForcibly();
            daemon.waitFor();
        }
    }

    private static boolean fuseMountedAt(Path path) {
        return MountTable.readSelf().mounts().stream()
                .anyMatch(m -> m.mountPoint().equals(path.toString()) && m.fsType().equals("fuse"));
    }

    /** Where the hostpath plugin keeps the volume's files. */
    private static Path volumeDir(String externalId) {
        return plugin.stateDir.resolve("volumes").resolve(externalId);
    }

    private static void umount(String option, Path path) throws Exception {
        Process p = new ProcessBuilder("umount", option, path.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "umount " + option + " " + path + ": " + out);
    }

    @Test
    void controllerCommandsRunOnTheNodeHostingTheControllerAndSecretsStaySealed() throws Exception {
        HostpathPlugin controller = new HostpathPlugin("hpc", pluginsDir(), WorkerRootResource.root.resolve("hpc-state"))
                .start();
        try {
            await().atMost(WAIT).until(() -> worker.plugins().controller("hpc").isPresent());
            String ext;
            VolumeCapability capability = VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_MULTI_WRITER,
                    CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE);
            try (CsiPluginClient client = CsiPluginClient.connect(controller.socket, CsiClientOptions.defaults()).await()
                    .atMost(Duration.ofSeconds(10))) {
                ext = client.createVolume(CreateVolumeRequest.newBuilder().setName("ctl-vol").addVolumeCapabilities(capability)
                        .build()).await().atMost(Duration.ofSeconds(20)).getVolume().getVolumeId();
            }
            io.csiorchestrator.events.SealedSecrets sealed = sealFor(NODE,
                    new io.csiorchestrator.events.SecretPayload(Map.of("password", "s3cret-value"), List.of()), "ctl");

            NodeCommand publish = new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.CONTROLLER_PUBLISH, NS,
                    "ctl", "hpc", ext, null, AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                    NODE, Map.of(), Map.of(), sealed, Instant.now());
            MountDone published = run(publish);
            assertTrue(published.succeeded(), published.toString());
            assertEquals(1, controller.successfulCalls("ControllerPublishVolume"));

            NodeCommand mount = new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, NS, "ctl", "hpc",
                    ext, "alloc-ctl", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null,
                    Map.of(), published.publishContext(), sealed, Instant.now());
            MountDone mounted = run(mount);
            assertTrue(mounted.succeeded(), mounted.toString());
            assertTrue(mounted(paths().targetPath("alloc-ctl", NS, "ctl")));
            String recordText = Files.readString(paths().recordFile(NS, "ctl"));
            assertFalse(recordText.contains("s3cret-value"), "secrets rest only sealed in the record");
            assertTrue(recordText.contains(sealed.ciphertext()));

            assertTrue(run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.UNMOUNT, NS, "ctl", "hpc", ext,
                    "alloc-ctl", null, null, false, null, null, Map.of(), Map.of(), sealed, Instant.now())).succeeded());
            MountDone unpublished = run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE,
                    NodeCommandKind.CONTROLLER_UNPUBLISH, NS, "ctl", "hpc", ext, null, null, null, false, null, NODE,
                    Map.of(), Map.of(), sealed, Instant.now()));
            assertTrue(unpublished.succeeded(), unpublished.toString());
            assertEquals(1, controller.successfulCalls("ControllerUnpublishVolume"));
            assertTrue(worker.operations().record(new VolumeKey(NS, "ctl")).orElseThrow().idle());

            // a plugin whose socket disappears is deregistered, with a last unhealthy fingerprint
            Instant gone = Instant.now();
            controller.stop();
            Files.deleteIfExists(controller.socket);
            await().atMost(WAIT).until(() -> worker.plugins().get("hpc").isEmpty());
            awaitEvent(e -> e.kind() == NodeEventKind.PLUGIN_DEREGISTERED && "hpc".equals(e.pluginId())
                    && !e.occurredAt().isBefore(gone));
        } finally {
            if (worker.plugins().get(controller.id).isPresent()) {
                removePlugin(controller); // a failed run leaves no second plugin behind for the other tests
            }
        }
    }

    /**
     * Issue 14's create-volume and delete-volume commands, run by the worker against the shared plugin's controller:
     * create answers the plugin's volume (id, capacity at least the minimum asked) and ListVolumes lists it; the same
     * CSI name again (a new command: a re-send after a crash) answers the same volume, no second one; a fault-injected
     * INVALID_ARGUMENT reaches mount-done as the code and the plugin's message, not retried (one more CreateVolume
     * call); delete removes it from ListVolumes, and a second delete succeeds (NOT_FOUND is done). The commands leave
     * no volume record on the node.
     */
    @Test
    void createAndDeleteVolumeCommandsCallThePluginsControllerIdempotentlyByName() throws Exception {
        await().atMost(WAIT).until(() -> worker.plugins().controller(PLUGIN).isPresent());
        ProvisionSpec spec = new ProvisionSpec("default.prov-1", 1L << 20, null, Map.of(), Map.of(), null, null);
        MountDone created = run(provision("prov-1", spec));
        assertTrue(created.succeeded(), created.toString());
        String ext = created.provisioned().externalVolumeId();
        assertTrue(created.provisioned().capacityBytes() >= 1L << 20, created.toString());
        assertTrue(pluginVolumes().contains(ext), pluginVolumes().toString());

        MountDone again = run(provision("prov-1", spec));
        assertTrue(again.succeeded(), again.toString());
        assertEquals(ext, again.provisioned().externalVolumeId());
        assertEquals(1, pluginVolumes().stream().filter(ext::equals).count());

        long before = plugin.calls("CreateVolume");
        plugin.faults("CreateVolume INVALID_ARGUMENT 1 parameter 'type' is unknown\n");
        MountDone refused = run(provision("prov-2", new ProvisionSpec("default.prov-2", 1L << 20, null,
                Map.of("type", "x"), Map.of(), null, null)));
        assertFalse(refused.succeeded());
        assertEquals("INVALID_ARGUMENT", refused.errorCode());
        assertTrue(refused.errorMessage().contains("parameter 'type' is unknown"), refused.errorMessage());
        assertEquals(before + 1, plugin.calls("CreateVolume"));

        NodeCommand delete = new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.DELETE_VOLUME, NS,
                "prov-1", PLUGIN, ext, null, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now());
        MountDone deleted = run(delete);
        assertTrue(deleted.succeeded(), deleted.toString());
        assertFalse(pluginVolumes().contains(ext), pluginVolumes().toString());
        MountDone deletedAgain = run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.DELETE_VOLUME, NS,
                "prov-1", PLUGIN, ext, null, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now()));
        assertTrue(deletedAgain.succeeded(), deletedAgain.toString());
        assertTrue(worker.operations().record(new VolumeKey(NS, "prov-1")).isEmpty());
    }

    /**
     * Issue 14 item 2's create-snapshot and delete-snapshot commands against the shared plugin's controller: a
     * snapshot of a created volume answers the plugin's snapshot (ready to use, its source the volume) and
     * ListSnapshots lists it; the same CSI name again (a re-send) answers the same snapshot id; delete removes it
     * from ListSnapshots and a second delete succeeds (NOT_FOUND is done). No volume record is left on the node.
     */
    @Test
    void createAndDeleteSnapshotCommandsCallThePluginsControllerIdempotentlyByName() throws Exception {
        await().atMost(WAIT).until(() -> worker.plugins().controller(PLUGIN).isPresent());
        MountDone created = run(provision("snap-src", new ProvisionSpec("default.snap-src", 1L << 20, null, Map.of(),
                Map.of(), null, null)));
        assertTrue(created.succeeded(), created.toString());
        String ext = created.provisioned().externalVolumeId();

        MountDone snap = run(snapshotCommand(NodeCommandKind.CREATE_SNAPSHOT, ext,
                new ProvisionSpec("default.snap-1", null, null, Map.of(), Map.of(), null, null)));
        assertTrue(snap.succeeded(), snap.toString());
        String snapId = snap.snapshot().externalSnapshotId();
        assertEquals(ext, snap.snapshot().sourceVolumeId());
        assertEquals(Boolean.TRUE, snap.snapshot().readyToUse());
        assertTrue(pluginSnapshots().contains(snapId), pluginSnapshots().toString());

        MountDone again = run(snapshotCommand(NodeCommandKind.CREATE_SNAPSHOT, ext,
                new ProvisionSpec("default.snap-1", null, null, Map.of(), Map.of(), null, null)));
        assertEquals(snapId, again.snapshot().externalSnapshotId(), again.toString());
        assertEquals(1, pluginSnapshots().stream().filter(snapId::equals).count());

        ProvisionSpec deleteSpec = new ProvisionSpec("default.snap-1", null, null, Map.of(), Map.of(), snapId, null);
        MountDone deleted = run(snapshotCommand(NodeCommandKind.DELETE_SNAPSHOT, ext, deleteSpec));
        assertTrue(deleted.succeeded(), deleted.toString());
        assertFalse(pluginSnapshots().contains(snapId), pluginSnapshots().toString());
        MountDone deletedAgain = run(snapshotCommand(NodeCommandKind.DELETE_SNAPSHOT, ext, deleteSpec));
        assertTrue(deletedAgain.succeeded(), deletedAgain.toString());
        assertTrue(run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.DELETE_VOLUME, NS, "snap-src",
                PLUGIN, ext, null, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now())).succeeded());
        assertTrue(worker.operations().record(new VolumeKey(NS, "snap-src")).isEmpty());
    }

    /**
     * Issue 14 item 3's expansion commands against the shared plugin: a controller-expand-volume of a volume (1GiB)
     * answers the new capacity and that the plugin asks for node expansion; a node-expand-volume while the volume is
     * published calls NodeExpandVolume once at the target path, and NodeGetVolumeStats there then reports the new
     * capacity while the file written before stays readable; a NodeExpandVolume failing with FAILED_PRECONDITION is
     * answered with that code and the plugin's message after exactly one call (never retried, CSI); a node-expand of a
     * volume not published on the node succeeds without a plugin call and without a capacity. A volume expanded while
     * published nowhere and mounted afterwards has the former size on this node until a node-expand runs here (resize
     * on mount, issue 14).
     */
    @Test
    void expandCommandsCallControllerThenNodeExpandAtThePublishedPathAndNeverRetryFailedPrecondition() throws Exception {
        await().atMost(WAIT).until(() -> worker.plugins().controller(PLUGIN).isPresent());
        String ext = createVolume("exp-vol"); // 1GiB, the plugin's default
        MountDone mounted = run(mount("exp-1", ext, "alloc-exp", false));
        assertTrue(mounted.succeeded(), mounted.toString());
        Path target = Path.of(mounted.hostPath());
        Files.writeString(target.resolve("before.txt"), "written before the expansion");
        assertEquals(1L << 30, statsTotalBytes(ext, target));

        MountDone expanded = run(expandCommand(NodeCommandKind.CONTROLLER_EXPAND, "exp-1", ext, 2L << 30));
        assertTrue(expanded.succeeded(), expanded.toString());
        assertEquals(2L << 30, expanded.provisioned().capacityBytes());
        assertTrue(expanded.provisioned().requiresNodeExpansion(), expanded.toString());

        long nodeCalls = plugin.calls("NodeExpandVolume");
        plugin.faults("NodeExpandVolume FAILED_PRECONDITION 1 the file system is busy\n");
        MountDone refused = run(expandCommand(NodeCommandKind.NODE_EXPAND, "exp-1", ext, 2L << 30));
        assertFalse(refused.succeeded());
        assertEquals("FAILED_PRECONDITION", refused.errorCode());
        assertTrue(refused.errorMessage().contains("the file system is busy"), refused.errorMessage());
        assertEquals(nodeCalls + 1, plugin.calls("NodeExpandVolume"), "FAILED_PRECONDITION is never retried");

        MountDone nodeExpanded = run(expandCommand(NodeCommandKind.NODE_EXPAND, "exp-1", ext, 2L << 30));
        assertTrue(nodeExpanded.succeeded(), nodeExpanded.toString());
        assertEquals(target.toString(), nodeExpanded.hostPath(), "expanded at the published target path");
        assertEquals(2L << 30, nodeExpanded.provisioned().capacityBytes());
        assertEquals(nodeCalls + 2, plugin.calls("NodeExpandVolume"));
        assertEquals(2L << 30, statsTotalBytes(ext, target), "NodeGetVolumeStats reports the new capacity");
        assertEquals("written before the expansion", Files.readString(target.resolve("before.txt")));

        assertTrue(run(unmount("exp-1", ext, "alloc-exp")).succeeded());
        MountDone notPublished = run(expandCommand(NodeCommandKind.NODE_EXPAND, "exp-1", ext, 2L << 30));
        assertTrue(notPublished.succeeded(), notPublished.toString());
        assertEquals(nodeCalls + 2, plugin.calls("NodeExpandVolume"), "nothing published here: no call");
        assertEquals(null, notPublished.provisioned(), "no capacity: claim-service does not count the node as expanded");

        // expanded while published nowhere, then mounted: this node's file system keeps the former size until a
        // NodeExpandVolume runs here (what claim-service's resize on mount sends once the claim is ready)
        assertTrue(run(expandCommand(NodeCommandKind.CONTROLLER_EXPAND, "exp-1", ext, 3L << 30)).succeeded());
        MountDone remounted = run(mount("exp-1", ext, "alloc-exp2", false));
        assertTrue(remounted.succeeded(), remounted.toString());
        Path target2 = Path.of(remounted.hostPath());
        assertEquals(2L << 30, statsTotalBytes(ext, target2), "mounted after the expansion: still the former size here");
        MountDone onMount = run(expandCommand(NodeCommandKind.NODE_EXPAND, "exp-1", ext, 3L << 30));
        assertTrue(onMount.succeeded(), onMount.toString());
        assertEquals(3L << 30, onMount.provisioned().capacityBytes());
        assertEquals(3L << 30, statsTotalBytes(ext, target2));
        assertTrue(run(unmount("exp-1", ext, "alloc-exp2")).succeeded());
        assertTrue(run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.DELETE_VOLUME, NS, "exp-1",
                PLUGIN, ext, null, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now())).succeeded());
    }

    /**
     * Issue 14: a list-volumes command runs CSI ListVolumes on the plugin's controller, one page of at most
     * {@code maxEntries} ids with its next token; following the tokens reads exactly the plugin's volumes (two created
     * for this test among them). A plugin not running here answers PLUGIN_NOT_FOUND.
     */
    @Test
    void aListVolumesCommandAnswersOnePageOfThePluginsVolumesAndTheTokenOfTheNext() throws Exception {
        await().atMost(WAIT).until(() -> worker.plugins().controller(PLUGIN).isPresent());
        String one = createVolume("list-one");
        String two = createVolume("list-two");
        List<String> listed = new java.util.ArrayList<>();
        String token = null;
        for (int page = 0; page < 100; page++) {
            MountDone done = run(NodeCommand.listVolumes("cmd-" + UUID.randomUUID(), NODE, PLUGIN,
                    new io.csiorchestrator.events.VolumeListing(token, 1), Instant.now()));
            assertTrue(done.succeeded(), done.toString());
            assertTrue(done.listed().externalVolumeIds().size() <= 1, done.toString());
            listed.addAll(done.listed().externalVolumeIds());
            if (done.listed().last()) {
                break;
            }
            token = done.listed().nextToken();
        }
        assertTrue(listed.containsAll(List.of(one, two)), listed.toString());
        assertEquals(new java.util.TreeSet<>(pluginVolumes()), new java.util.TreeSet<>(listed), "every page read: the plugin's volumes");
        MountDone unknown = run(NodeCommand.listVolumes("cmd-" + UUID.randomUUID(), NODE, "no-such-plugin",
                new io.csiorchestrator.events.VolumeListing(null, 10), Instant.now()));
        assertEquals("PLUGIN_NOT_FOUND", unknown.errorCode());
        for (String id : List.of(one, two)) {
            assertTrue(run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.DELETE_VOLUME, NS, "list-vol",
                    PLUGIN, id, null, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now())).succeeded());
        }
    }

    private static NodeCommand expandCommand(NodeCommandKind kind, String volumeId, String externalVolumeId, long bytes) {
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, kind, NS, volumeId, PLUGIN, externalVolumeId, null,
                null, null, false, null, null, Map.of(), Map.of(), null, Instant.now())
                .withProvision(new ProvisionSpec("default." + volumeId, bytes, null, Map.of(), Map.of(), null, null));
    }

    /** The total bytes NodeGetVolumeStats of the shared plugin reports for the volume at {@code path}. */
    private static long statsTotalBytes(String externalVolumeId, Path path) {
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            return client.nodeGetVolumeStats(io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest.newBuilder()
                    .setVolumeId(externalVolumeId).setVolumePath(path.toString()).build()).await()
                    .atMost(Duration.ofSeconds(20)).getUsageList().stream()
                    .filter(u -> u.getUnit() == io.csiorchestrator.csi.v1.VolumeUsage.Unit.BYTES)
                    .mapToLong(io.csiorchestrator.csi.v1.VolumeUsage::getTotal).findFirst().orElse(-1);
        }
    }

    private static NodeCommand snapshotCommand(NodeCommandKind kind, String externalVolumeId, ProvisionSpec spec) {
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, kind, NS, "snap-src", PLUGIN, externalVolumeId, null,
                null, null, false, null, null, Map.of(), Map.of(), null, Instant.now()).withProvision(spec);
    }

    /** The ids of every snapshot the shared plugin lists (CSI ListSnapshots). */
    private static List<String> pluginSnapshots() {
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            return client.listSnapshots(io.csiorchestrator.csi.v1.ListSnapshotsRequest.getDefaultInstance()).await()
                    .atMost(Duration.ofSeconds(20)).getEntriesList().stream().map(e -> e.getSnapshot().getSnapshotId())
                    .toList();
        }
    }

    private static NodeCommand provision(String volumeId, ProvisionSpec spec) {
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.CREATE_VOLUME, NS, volumeId, PLUGIN,
                null, null, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, Map.of(),
                Map.of(), null, Instant.now()).withProvision(spec);
    }

    /** The ids of every volume the shared plugin lists (CSI ListVolumes). */
    private static List<String> pluginVolumes() {
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            return client.listVolumes(io.csiorchestrator.csi.v1.ListVolumesRequest.getDefaultInstance()).await()
                    .atMost(Duration.ofSeconds(20)).getEntriesList().stream().map(e -> e.getVolume().getVolumeId()).toList();
        }
    }

    /**
     * A plugin killed with SIGKILL (a plugin of its own, {@code hpk}, so the shared one stays up) leaves its socket
     * file with no process behind it. It is reported unhealthy at once (plugin-health, a PLUGIN_HEALTH node event) and
     * a mount for it is answered PLUGIN_NOT_FOUND, not lost; the worker stays ready (200) with the plugin listed as
     * unhealthy. After {@code csi.worker.plugin-deregister-after} (4 s here) it is deregistered: a last plugin-health
     * report marked {@code deregistered}, after the unhealthy one, a PLUGIN_DEREGISTERED node event, gone from the
     * registry and from readiness (still 200); the dead socket file, still there, is not registered again by a rescan.
     * A plugin started again on that path (a new socket) is registered and healthy again.
     */
    @Test
    void aKilledPluginIsReportedUnhealthyAtOnceAndDeregisteredAfterTheGraceWhileTheWorkerStaysReady() throws Exception {
        String doomedId = "hpk";
        HostpathPlugin doomed = new HostpathPlugin(doomedId, pluginsDir(),
                WorkerRootResource.root.resolve("hpk-state"), "--controller-publish=false").start();
        try {
            await().atMost(WAIT).until(() -> worker.plugins().node(doomedId).isPresent());
            Instant before = Instant.now();
            doomed.kill();
            ConsumerRecord<String, String> unhealthy = kafka.awaitRecord("plugin-health", r -> {
                if (!r.key().equals(PluginHealth.key(doomedId, NODE))) {
                    return false;
                }
                PluginHealth h = EventCodec.decode(PluginHealth.class, r.value());
                return !h.reportsHealthy() && !h.reportsDeregistered() && !h.observedAt().isBefore(before);
            }, Duration.ofSeconds(20));
            NodeEvent event = awaitEvent(e -> e.kind() == NodeEventKind.PLUGIN_HEALTH && doomedId.equals(e.pluginId())
                    && Boolean.FALSE.equals(e.success()) && !e.occurredAt().isBefore(before));
            assertTrue(event.error() != null && !event.error().isBlank());
            assertTrue(Files.exists(doomed.socket), "SIGKILL leaves the socket file behind");
            // the worker is ready whatever its plugins do; the plugin's state is listed for operators
            given().get("/q/health/ready").then().statusCode(200);
            // a mount while the plugin is gone is answered, not lost
            MountDone done = run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, NS, "orphan",
                    doomedId, "ext-orphan", "alloc-o", AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                    false, null, null, Map.of(), Map.of(), null, Instant.now()));
            assertEquals("PLUGIN_NOT_FOUND", done.errorCode());
            assertTrue(done.errorMessage().contains("'" + doomedId + "'"), done.errorMessage());

            ConsumerRecord<String, String> last = kafka.awaitRecord("plugin-health", r -> r.key().equals(
                    PluginHealth.key(doomedId, NODE)) && EventCodec.decode(PluginHealth.class, r.value()).reportsDeregistered()
                    && r.offset() > unhealthy.offset(), WAIT);
            PluginHealth lastReport = EventCodec.decode(PluginHealth.class, last.value());
            assertFalse(lastReport.reportsHealthy());
            assertTrue(lastReport.healthDescription().contains("unreachable"), lastReport.healthDescription());
            NodeEvent deregistered = awaitEvent(e -> e.kind() == NodeEventKind.PLUGIN_DEREGISTERED
                    && doomedId.equals(e.pluginId()) && !e.occurredAt().isBefore(before));
            assertTrue(deregistered.details().get("reason").contains(doomedId + "/csi.sock unreachable"),
                    deregistered.details().toString());
            await().atMost(WAIT).until(() -> worker.plugins().get(doomedId).isEmpty());
            given().get("/q/health/ready").then().statusCode(200)
                    .body(org.hamcrest.Matchers.not(containsString("plugin hpk")));
            assertTrue(Files.exists(doomed.socket), "the dead socket file is still there");
            worker.pluginWatcher().rescan();
            assertTrue(worker.plugins().get(doomedId).isEmpty(), "the same dead socket is not registered again");

            doomed.start(); // binds a new socket at the same path
            await().atMost(WAIT).until(() -> worker.plugins().node(doomedId).isPresent());
        } finally {
            removePlugin(doomed);
        }
    }

    /**
     * Issue 14: a plugin whose GetPluginCapabilities says VolumeExpansion OFFLINE (the hostpath plugin with
     * {@code --volume-expansion=offline}, a plugin of its own) is reported on plugin-health with
     * {@code VOLUME_EXPANSION_OFFLINE} among its plugin capabilities (never ONLINE), which the registry turns into
     * plugin-status' {@code volumeExpansion: offline}.
     */
    @Test
    void aPluginThatExpandsOfflineOnlyIsReportedSoOnPluginHealth() throws Exception {
        String offlineId = "hpo";
        Instant before = Instant.now().minusSeconds(1);
        HostpathPlugin offline = new HostpathPlugin(offlineId, pluginsDir(), WorkerRootResource.root.resolve("hpo-state"),
                "--controller-publish=false", "--volume-expansion=offline").start();
        try {
            ConsumerRecord<String, String> record = kafka.awaitRecord("plugin-health", r -> r.key().equals(
                    PluginHealth.key(offlineId, NODE)) && EventCodec.decode(PluginHealth.class, r.value()).reportsHealthy()
                    && !EventCodec.decode(PluginHealth.class, r.value()).observedAt().isBefore(before), WAIT);
            PluginHealth health = EventCodec.decode(PluginHealth.class, record.value());
            assertTrue(health.pluginCapabilities().contains("VOLUME_EXPANSION_OFFLINE"), health.pluginCapabilities().toString());
            assertFalse(health.pluginCapabilities().contains("VOLUME_EXPANSION_ONLINE"), health.pluginCapabilities().toString());
            assertEquals(io.csiorchestrator.events.VolumeExpansionMode.OFFLINE,
                    io.csiorchestrator.events.VolumeExpansionMode.fromCapabilities(health.pluginCapabilities()));
        } finally {
            removePlugin(offline);
        }
    }

    /** Stops the plugin and removes its socket, then waits until the worker deregistered it. */
    private void removePlugin(HostpathPlugin removed) throws Exception {
        removed.kill();
        Files.deleteIfExists(removed.socket);
        await().atMost(WAIT).until(() -> worker.plugins().get(removed.id).isEmpty());
    }

    /** Keeps the log records of one logger (and its children) while open, with their MDC. */
    private static final class LogCapture extends java.util.logging.Handler implements AutoCloseable {

        private final java.util.logging.Logger logger;
        private final List<org.jboss.logmanager.ExtLogRecord> records = new java.util.concurrent.CopyOnWriteArrayList<>();

        private LogCapture(java.util.logging.Logger logger) {
            this.logger = logger;
        }

        static LogCapture of(String loggerName) {
            LogCapture capture = new LogCapture(java.util.logging.Logger.getLogger(loggerName));
            capture.logger.addHandler(capture);
            return capture;
        }

        List<org.jboss.logmanager.ExtLogRecord> records() {
            return List.copyOf(records);
        }

        @Override
        public void publish(java.util.logging.LogRecord record) {
            if (record instanceof org.jboss.logmanager.ExtLogRecord ext) {
                ext.copyMdc();
                records.add(ext);
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
            logger.removeHandler(this);
        }
    }
}
