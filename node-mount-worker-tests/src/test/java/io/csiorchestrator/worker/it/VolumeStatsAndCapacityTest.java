package io.csiorchestrator.worker.it;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.CapacityFigures;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.ProvisionSpec;
import io.csiorchestrator.events.VolumeUsageFigures;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.NodeMountWorker;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.ResourceArg;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Predicate;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 34 items 2 and 3 on the worker, with real parts: the reference plugin {@code hpu} as a separate process whose
 * state dir is a tmpfs of 64 MiB and 4096 inodes mounted for the test (so the statvfs figures are known), real bind
 * mounts, the testkit broker. Volume usage: gauges named after kubelet_volume_stats_* and volume-usage node events only
 * when a figure moved noticeably. Capacity: a capacity node event for the node's topology segment after a create, and
 * when the plugin becomes healthy.
 * The poll interval is the tests' 1 s ({@code WorkerRootResource}); the capacity timer keeps its 5 min default, so a
 * capacity event seen here comes from the create.
 */
@QuarkusTest
@QuarkusTestResource(value = KafkaResource.class, restrictToAnnotatedClass = false, initArgs = {
        @ResourceArg(name = KafkaResource.TOPICS, value = "node-commands:4"),
        @ResourceArg(name = KafkaResource.CONTRACT_TOPICS, value = "true"),
        @ResourceArg(name = KafkaResource.PRINCIPAL, value = "NODE:" + NodeMountWorkerTest.NODE)})
@QuarkusTestResource(value = WorkerRootResource.class, restrictToAnnotatedClass = false)
class VolumeStatsAndCapacityTest {

    static final String NODE = NodeMountWorkerTest.NODE;
    static final String NS = "default";
    static final String PLUGIN = "hpu";
    static final Duration WAIT = Duration.ofSeconds(40);
    static final long MIB = 1L << 20;
    static final String SEGMENT_KEY = "topology.hostpath.csi.csiorchestrator.io/node";

    static HostpathPlugin plugin;
    static Path fs;
    static KafkaTestClient kafka;
    static KafkaTestClient claimService;

    @Inject
    NodeMountWorker worker;

    @BeforeAll
    static void clients() {
        kafka = KafkaTestClient.forSharedBroker();
        claimService = KafkaTestClient.forSharedBroker(io.csiorchestrator.events.KafkaAccess.Principal.claimService(), "");
    }

    @AfterAll
    static void close() throws Exception {
        if (plugin != null) {
            plugin.stop();
        }
        kafka.close();
        claimService.close();
        // the tmpfs and the bind mounts below the root go with WorkerRootResource.stop
    }

    @BeforeEach
    void pluginRunning() throws Exception {
        if (!worker.started()) {
            worker.start();
        }
        if (plugin == null) {
            fs = Files.createDirectories(WorkerRootResource.root.resolve("hpu-fs"));
            Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + 64 * MIB + ",nr_inodes=4096",
                    "tmpfs", fs.toString()).inheritIO().start();
            assertEquals(0, mount.waitFor(), "mount a tmpfs at " + fs);
            plugin = new HostpathPlugin(PLUGIN, WorkerRootResource.root.resolve("plugins"), fs.resolve("state"),
                    "--controller-publish=false");
        }
        if (!plugin.alive()) {
            plugin.start();
        }
        await().atMost(WAIT).until(() -> worker.plugins().node(PLUGIN).isPresent()
                && worker.plugins().controller(PLUGIN).isPresent() && !worker.restoring());
    }

    /**
     * A published volume's usage: the first poll sends a volume-usage event (16 MiB capacity, nothing used, the
     * tmpfs's 4096 inodes) and sets the csi_volume_stats_* gauges; 100 bytes written show in the gauge but send no
     * event (less than 1 % of 16 MiB); 2 MiB more send one. Once unmounted its series are gone.
     */
    @Test
    void aPublishedVolumesUsageIsAGaugeAndAnEventOnlyWhenItMovedNoticeably() throws Exception {
        String ext = createVolume("usage", 16 * MIB);
        Instant before = Instant.now();
        MountDone mounted = run(mount("usage", ext, "alloc-usage"));
        assertTrue(mounted.succeeded(), mounted.toString());
        Path target = Path.of(mounted.hostPath());
        VolumeUsageFigures first = VolumeUsageFigures.fromDetails(awaitEvent(e -> e.kind() == NodeEventKind.VOLUME_USAGE
                && "usage".equals(e.volumeId()) && !e.occurredAt().isBefore(before)).details());
        assertEquals(16 * MIB, first.bytesTotal());
        assertEquals(0L, first.bytesUsed());
        assertEquals(4096L, first.inodesTotal());
        String series = "{namespace=\"default\",node=\"test-node\",plugin=\"hpu\",volume=\"usage\"}";
        awaitMetric("csi_volume_stats_capacity_bytes" + series + " 1.6777216E7");
        awaitMetric("csi_volume_stats_inodes" + series + " 4096.0");

        Files.write(target.resolve("small"), new byte[100]);
        awaitMetric("csi_volume_stats_used_bytes" + series + " 100.0");
        Files.write(target.resolve("large"), new byte[(int) (2 * MIB)]);
        VolumeUsageFigures grown = VolumeUsageFigures.fromDetails(awaitEvent(e -> e.kind() == NodeEventKind.VOLUME_USAGE
                && "usage".equals(e.volumeId()) && !e.occurredAt().isBefore(before)
                && !"0".equals(e.details().get(VolumeUsageFigures.BYTES_USED))).details());
        assertEquals(2 * MIB + 100, grown.bytesUsed());
        // every volume-usage event of this volume so far (one producer, keyed by node: in order): the first and the
        // 2 MiB one, none for the 100 bytes the gauge showed
        List<Long> reported = kafka.readAll("node-events").stream()
                .map(r -> EventCodec.decode(NodeEvent.class, r.value()))
                .filter(e -> e.kind() == NodeEventKind.VOLUME_USAGE && "usage".equals(e.volumeId())
                        && !e.occurredAt().isBefore(before))
                .map(e -> VolumeUsageFigures.fromDetails(e.details()).bytesUsed()).toList();
        assertEquals(List.of(0L, 2 * MIB + 100), reported);

        assertTrue(run(unmount("usage", ext, "alloc-usage")).succeeded());
        await().atMost(WAIT).until(() -> !metrics().contains("volume=\"usage\""));
    }

    /**
     * A create-volume through the worker makes it ask the plugin's capacity again: 8 MiB written into the plugin's
     * file system beforehand show in the capacity event for the node's topology segment that follows the create.
     */
    @Test
    void aCreateIsFollowedByACapacityEventForTheNodesSegment() throws Exception {
        worker.capacity().poll();
        CapacityFigures before = worker.capacity().last(PLUGIN).isPresent() ? worker.capacity().last(PLUGIN).get()
                : await().atMost(WAIT).until(() -> worker.capacity().last(PLUGIN), java.util.Optional::isPresent).get();
        Files.write(fs.resolve("filler-" + UUID.randomUUID()), new byte[(int) (8 * MIB)]);
        Instant created = Instant.now();
        MountDone done = run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.CREATE_VOLUME, NS,
                "cap-1", PLUGIN, null, null, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                null, Map.of(), Map.of(), null, Instant.now())
                .withProvision(new ProvisionSpec("default.cap-1", MIB, null, Map.of(), Map.of(), null, null)));
        assertTrue(done.succeeded(), done.toString());
        NodeEvent event = awaitEvent(e -> e.kind() == NodeEventKind.CAPACITY && PLUGIN.equals(e.pluginId())
                && !e.occurredAt().isBefore(created));
        CapacityFigures after = CapacityFigures.fromDetails(event.details());
        assertEquals(Map.of(SEGMENT_KEY, NODE), after.segment());
        assertTrue(after.availableBytes() <= before.availableBytes() - 8 * MIB,
                "8 MiB less than " + before.availableBytes() + ": " + after.availableBytes());
        assertEquals(NODE, event.nodeId());
    }

    /**
     * A plugin that becomes healthy again (stopped, its socket gone, started) is asked its capacity at once: a capacity
     * event after the restart with no create and no poll (the timer's period is 5 min).
     */
    @Test
    void aPluginThatBecomesHealthyReportsItsCapacityAtOnce() throws Exception {
        plugin.stop();
        await().atMost(WAIT).until(() -> worker.plugins().controller(PLUGIN).isEmpty());
        Instant restarted = Instant.now();
        plugin.start();
        NodeEvent event = awaitEvent(e -> e.kind() == NodeEventKind.CAPACITY && PLUGIN.equals(e.pluginId())
                && !e.occurredAt().isBefore(restarted));
        CapacityFigures figures = CapacityFigures.fromDetails(event.details());
        assertEquals(Map.of(SEGMENT_KEY, NODE), figures.segment());
        assertTrue(figures.availableBytes() > 0 && figures.availableBytes() <= 64 * MIB, figures.toString());
    }

    // ------------------------------------------------------------------ helpers

    private static String createVolume(String name, long bytes) {
        MountDone created = run(new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.CREATE_VOLUME, NS,
                name, PLUGIN, null, null, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null,
                Map.of(), Map.of(), null, Instant.now())
                .withProvision(new ProvisionSpec("default." + name, bytes, null, Map.of(), Map.of(), null, null)));
        assertTrue(created.succeeded(), created.toString());
        return created.provisioned().externalVolumeId();
    }

    private static NodeCommand mount(String volumeId, String externalId, String alloc) {
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, NS, volumeId, PLUGIN, externalId,
                alloc, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, Map.of(),
                Map.of(), null, Instant.now());
    }

    private static NodeCommand unmount(String volumeId, String externalId, String alloc) {
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.UNMOUNT, NS, volumeId, PLUGIN,
                externalId, alloc, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now());
    }

    private static MountDone run(NodeCommand command) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_COMMAND, "/test").writeTo(headers);
        claimService.send(new ProducerRecord<>("node-commands", NodePartitioner.partitionFor(NODE, 4), NODE,
                EventCodec.encodeToString(command), headers));
        String marker = "\"commandId\":\"" + command.commandId() + "\"";
        return EventCodec.decode(MountDone.class,
                kafka.awaitRecord("mount-done", r -> r.value().contains(marker), WAIT).value());
    }

    private static NodeEvent awaitEvent(Predicate<NodeEvent> predicate) {
        return EventCodec.decode(NodeEvent.class, kafka.awaitRecord("node-events",
                r -> predicate.test(EventCodec.decode(NodeEvent.class, r.value())), WAIT).value());
    }

    private static String metrics() {
        return given().get("/q/metrics").then().statusCode(200).extract().asString();
    }

    private static void awaitMetric(String line) {
        await().atMost(WAIT).until(() -> metrics().contains(line));
    }
}
