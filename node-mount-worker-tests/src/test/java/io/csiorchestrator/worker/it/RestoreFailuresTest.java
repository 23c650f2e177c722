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
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.NodeStateReported;
import io.csiorchestrator.events.ReportedMount;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.NodeMountWorker;
import io.csiorchestrator.worker.WorkerConfig;
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
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The worker's restore path when things fail, with the real worker (stopped and started in this
 * JVM, as a restart), the reference hostpath plugin as a separate process, and real bind mounts:
 * the plugin not healthy within {@code restore-plugin-timeout}; NodeStageVolume,
 * NodePublishVolume, NodeUnpublishVolume or NodeUnstageVolume failing during the restore (injected
 * through the plugin's faults file); and an interrupted unmount (a usage recorded as UNPUBLISHING) finished
 * against the plugin. Each failure is reported as a node event, the record is kept, and a later
 * heal (the plugin restarts, or becomes ready) finishes the work.
 *
 * <p>A restart runs both the restore and, when the plugin is first seen healthy, the healer; they
 * are serialized per volume. With a fault on every call both fail, so the restore's own event is
 * checked. Runs in its own profile (its own worker root and plugin), with a short restore timeout.
 */
@QuarkusTest
@TestProfile(RestoreFailuresTest.ShortRestoreTimeout.class)
@QuarkusTestResource(value = KafkaResource.class, restrictToAnnotatedClass = false, initArgs = {
        @ResourceArg(name = KafkaResource.TOPICS, value = "node-commands:4"),
        @ResourceArg(name = KafkaResource.CONTRACT_TOPICS, value = "true"),
        @ResourceArg(name = KafkaResource.PRINCIPAL, value = "NODE:" + NodeMountWorkerTest.NODE)})
@QuarkusTestResource(value = WorkerRootResource.class, restrictToAnnotatedClass = false)
class RestoreFailuresTest {

    /** Long enough for a plugin that is already running to be probed ready, short enough to wait out. */
    static final Duration RESTORE_TIMEOUT = Duration.ofSeconds(8);

    public static class ShortRestoreTimeout implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            // the periodic stale-mount check and the condition poller off: these tests leave failed mounts for
            // the restore and the plugin-restart heal to finish, count their calls, and inject "*" faults
            return Map.of("csi.worker.restore-plugin-timeout", RESTORE_TIMEOUT.toSeconds() + "s",
                    "csi.worker.heal-interval", "0s", "csi.worker.condition-interval", "0s");
        }
    }

    static final String NODE = "test-node";
    static final String NS = "restore";
    static final String PLUGIN = "hp-restore";
    static final Duration WAIT = Duration.ofSeconds(60);

    static HostpathPlugin plugin;
    static KafkaTestClient kafka;
    /** The test's stand-in for claim-service, the one writer of node-commands (the worker runs as node-test-node). */
    static KafkaTestClient claimService;

    @Inject
    NodeMountWorker worker;

    @Inject
    WorkerConfig config;

    @BeforeAll
    static void startPluginAndClient() throws Exception {
        kafka = KafkaTestClient.forSharedBroker();
        claimService = KafkaTestClient.forSharedBroker(io.csiorchestrator.events.KafkaAccess.Principal.claimService(), "");
        plugin = new HostpathPlugin(PLUGIN, WorkerRootResource.root.resolve("plugins"),
                WorkerRootResource.root.resolve("hp-restore-state"), "--controller-publish=false").start();
    }

    @AfterAll
    static void stopAll() {
        if (kafka != null) {
            kafka.close();
        }
        if (claimService != null) {
            claimService.close();
        }
    }

    /** Whatever an earlier test left when it failed: no fault, the plugin and the worker running. */
    @BeforeEach
    void healthyPluginAndWorker() throws Exception {
        plugin.faults("");
        if (!plugin.alive()) {
            plugin.start();
        }
        if (!worker.started()) {
            worker.start();
        }
    }

    // ------------------------------------------------------------------ helpers

    private WorkerPaths paths() {
        return worker.paths();
    }

    private static String createVolume(String name) {
        try (CsiPluginClient client = CsiPluginClient.connect(plugin.socket, CsiClientOptions.defaults()).await()
                .atMost(Duration.ofSeconds(10))) {
            return client.createVolume(CreateVolumeRequest.newBuilder().setName(name)
                    .addVolumeCapabilities(VolumeCapabilities.build(CsiAccessMode.MULTI_NODE_MULTI_WRITER,
                            CsiAttachmentMode.FILE_SYSTEM, MountOptions.NONE))
                    .build()).await().atMost(Duration.ofSeconds(20)).getVolume().getVolumeId();
        }
    }

    private static NodeCommand command(NodeCommandKind kind, String volumeId, String externalId, String alloc) {
        boolean mount = kind == NodeCommandKind.MOUNT;
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, kind, NS, volumeId, PLUGIN, externalId, alloc,
                mount ? AccessMode.MULTI_NODE_MULTI_WRITER : null, mount ? AttachmentMode.FILE_SYSTEM : null, false,
                null, null, Map.of(), Map.of(), null, Instant.now());
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

    /** The first node event about {@code volumeId} since {@code since} that matches. */
    private static NodeEvent awaitEvent(String volumeId, Instant since, Predicate<NodeEvent> predicate) {
        return EventCodec.decode(NodeEvent.class, kafka.awaitRecord("node-events", r -> {
            NodeEvent e = EventCodec.decode(NodeEvent.class, r.value());
            return volumeId.equals(e.volumeId()) && !e.occurredAt().isBefore(since) && predicate.test(e);
        }, WAIT).value());
    }

    /** Every node event about {@code volumeId} since {@code since}, as now on the topic. */
    private static List<NodeEvent> events(String volumeId, Instant since) {
        return kafka.readAll("node-events").stream().map(r -> EventCodec.decode(NodeEvent.class, r.value()))
                .filter(e -> volumeId.equals(e.volumeId()) && !e.occurredAt().isBefore(since)).toList();
    }

    private static boolean mounted(Path path) {
        return MountTable.readSelf().isMountPoint(path);
    }

    /** What a reboot does to a mount: it is gone, behind the worker's and the plugin's back. */
    private static void unmount(Path path) throws Exception {
        Process umount = new ProcessBuilder("umount", path.toString()).redirectErrorStream(true).start();
        assertTrue(umount.waitFor(20, TimeUnit.SECONDS));
        assertEquals(0, umount.exitValue(), new String(umount.getInputStream().readAllBytes()));
        assertFalse(mounted(path));
    }

    private VolumeRecord record(VolumeKey key) {
        return worker.operations().record(key).orElseThrow();
    }

    /** A volume mounted for {@code alloc} through a real MOUNT command; returns its external id. */
    private String mounted(String volumeId, String alloc) {
        String ext = createVolume(volumeId + "-vol");
        MountDone done = run(command(NodeCommandKind.MOUNT, volumeId, ext, alloc));
        assertTrue(done.succeeded(), done.toString());
        assertTrue(mounted(paths().targetPath(alloc, NS, volumeId)));
        return ext;
    }

    private void awaitPluginHealthy() {
        await().atMost(WAIT).until(() -> worker.plugins().node(PLUGIN).isPresent());
    }

    /** The plugin stops (SIGTERM, its mounts stay) and starts again: the worker heals its volumes. */
    private static void restartPlugin() throws Exception {
        plugin.stop();
        plugin.start();
    }

    private void assertReleasedAndClean(String volumeId, String ext, String alloc) {
        MountDone released = run(command(NodeCommandKind.UNMOUNT, volumeId, ext, alloc));
        assertTrue(released.succeeded(), released.toString());
        assertFalse(mounted(paths().targetPath(alloc, NS, volumeId)));
        assertFalse(mounted(paths().stagingPath(NS, volumeId)));
    }

    // -------------------------------------------------------------------- tests

    /**
     * The plugin is running but not ready when the worker starts, and becomes ready within
     * restore-plugin-timeout: the restore waits for it, no "did not become healthy" event is sent,
     * and the lost mounts are back.
     */
    @Test
    void aPluginThatBecomesReadyWithinTheRestoreTimeoutIsWaitedFor() throws Exception {
        assertEquals(RESTORE_TIMEOUT, config.restorePluginTimeout());
        awaitPluginHealthy();
        String ext = mounted("waited", "alloc-w");
        Path staging = paths().stagingPath(NS, "waited");
        Path target = paths().targetPath("alloc-w", NS, "waited");

        worker.stop();
        unmount(target);
        unmount(staging);
        plugin.faults("probe-not-ready\n");
        long probes = plugin.calls("Probe");
        Instant start = Instant.now();
        worker.start();
        // the fault lasts until the restore has observably waited on it: the new worker's supervisor probed the plugin
        // and was answered not ready, and the restore is still pending (it waits for the plugin to be healthy)
        await().atMost(WAIT).until(() -> plugin.calls("Probe") > probes && worker.plugins().all().stream()
                .anyMatch(s -> s.pluginId().equals(PLUGIN) && !s.healthy()));
        assertTrue(worker.restoring(), "the restore waits for the plugin that is not ready");
        assertTrue(worker.plugins().node(PLUGIN).isEmpty(), "not healthy: the restore cannot have run");
        Instant cleared = Instant.now();
        plugin.faults("");

        NodeEvent restored = awaitEvent("waited", start, e -> Boolean.TRUE.equals(e.success())
                && (e.kind() == NodeEventKind.RESTORE || e.kind() == NodeEventKind.HEAL));
        assertFalse(restored.occurredAt().isBefore(cleared), "restored once the plugin was ready, not before: " + restored);
        assertEquals("1", restored.details().get("staged"), restored.toString());
        await().atMost(WAIT).until(() -> !worker.restoring());
        assertTrue(mounted(staging));
        assertTrue(mounted(target));
        // every node event of the restart is on the topic before this marker (one partition, in order)
        assertTrue(run(command(NodeCommandKind.UNMOUNT, "waited", ext, "alloc-w")).succeeded());
        awaitEvent("waited", start, e -> e.kind() == NodeEventKind.UNMOUNT);
        assertTrue(events("waited", start).stream().noneMatch(e -> e.kind() == NodeEventKind.RESTORE
                && Boolean.FALSE.equals(e.success())), "no restore failure: " + events("waited", start));
        assertFalse(mounted(staging));
    }

    /**
     * The plugin stays not ready past restore-plugin-timeout: the worker still starts and answers
     * commands, reports the volume as not restored (a RESTORE node event naming the timeout), keeps
     * its record, and restores it when the plugin becomes ready (the healer).
     */
    @Test
    void aPluginNotReadyWithinTheRestoreTimeoutIsReportedAndTheVolumeRestoredWhenItComes() throws Exception {
        awaitPluginHealthy();
        String ext = mounted("late", "alloc-l");
        VolumeKey key = new VolumeKey(NS, "late");
        Path staging = paths().stagingPath(NS, "late");
        Path target = paths().targetPath("alloc-l", NS, "late");

        worker.stop();
        unmount(target);
        unmount(staging);
        plugin.faults("probe-not-ready\n");
        Instant start = Instant.now();
        worker.start();

        NodeEvent timedOut = awaitEvent("late", start, e -> e.kind() == NodeEventKind.RESTORE);
        assertEquals(Boolean.FALSE, timedOut.success(), timedOut.toString());
        assertTrue(timedOut.error().contains("did not become healthy within " + RESTORE_TIMEOUT), timedOut.error());
        assertTrue(worker.started());
        assertFalse(worker.restoring());
        assertFalse(mounted(staging), "nothing was restored without the plugin");
        assertFalse(mounted(target));
        assertEquals(PublishState.PUBLISHED, record(key).usage("alloc-l").orElseThrow().state(), "the record is kept");

        Instant ready = Instant.now();
        plugin.faults("");
        NodeEvent healed = awaitEvent("late", ready, e -> e.kind() == NodeEventKind.HEAL
                && Boolean.TRUE.equals(e.success()));
        assertEquals(Boolean.TRUE, healed.success(), healed.toString());
        assertTrue(mounted(staging));
        assertTrue(mounted(target));
        assertReleasedAndClean("late", ext, "alloc-l");
    }

    /**
     * NodeStageVolume fails during the restore (the staging was lost): the failure is a RESTORE
     * node event, the record keeps the usage, and the heal after the plugin's restart stages and
     * publishes again.
     */
    @Test
    void aStageFailingDuringTheRestoreIsReportedAndHealedLater() throws Exception {
        awaitPluginHealthy();
        String ext = mounted("stagefail", "alloc-s");
        VolumeKey key = new VolumeKey(NS, "stagefail");
        Path staging = paths().stagingPath(NS, "stagefail");
        Path target = paths().targetPath("alloc-s", NS, "stagefail");

        worker.stop();
        unmount(target);
        unmount(staging);
        plugin.faults("NodeStageVolume INTERNAL * injected stage failure\n");
        Instant start = Instant.now();
        worker.start();

        NodeEvent failed = awaitEvent("stagefail", start, e -> e.kind() == NodeEventKind.RESTORE);
        assertEquals(Boolean.FALSE, failed.success(), failed.toString());
        assertTrue(failed.error().contains("stage: ") && failed.error().contains("injected stage failure"),
                failed.error());
        await().atMost(WAIT).until(() -> !worker.restoring());
        assertFalse(mounted(staging));
        assertTrue(record(key).usage("alloc-s").isPresent(), "the record keeps the usage");

        plugin.faults("");
        Instant healStart = Instant.now();
        restartPlugin();
        NodeEvent healed = awaitEvent("stagefail", healStart, e -> e.kind() == NodeEventKind.HEAL
                && Boolean.TRUE.equals(e.success()));
        assertEquals(Boolean.TRUE, healed.success(), healed.toString());
        assertTrue(mounted(staging));
        assertTrue(mounted(target));
        assertEquals(StageState.STAGED, record(key).stage());
        assertEquals(PublishState.PUBLISHED, record(key).usage("alloc-s").orElseThrow().state());
        assertReleasedAndClean("stagefail", ext, "alloc-s");
    }

    /**
     * NodePublishVolume fails during the restore (the publication was lost, the staging is
     * intact): the failure is a RESTORE node event naming the allocation, the record keeps the
     * usage, and the heal after the plugin's restart publishes again.
     */
    @Test
    void aPublishFailingDuringTheRestoreIsReportedAndHealedLater() throws Exception {
        awaitPluginHealthy();
        String ext = mounted("pubfail", "alloc-p");
        VolumeKey key = new VolumeKey(NS, "pubfail");
        Path staging = paths().stagingPath(NS, "pubfail");
        Path target = paths().targetPath("alloc-p", NS, "pubfail");

        worker.stop();
        unmount(target);
        plugin.faults("NodePublishVolume INTERNAL * injected publish failure\n");
        Instant start = Instant.now();
        worker.start();

        NodeEvent failed = awaitEvent("pubfail", start, e -> e.kind() == NodeEventKind.RESTORE);
        assertEquals(Boolean.FALSE, failed.success(), failed.toString());
        assertTrue(failed.error().contains("publish for allocation alloc-p")
                && failed.error().contains("injected publish failure"), failed.error());
        await().atMost(WAIT).until(() -> !worker.restoring());
        assertTrue(mounted(staging));
        assertFalse(mounted(target));
        assertTrue(record(key).usage("alloc-p").isPresent(), "the record keeps the usage");

        plugin.faults("");
        Instant healStart = Instant.now();
        restartPlugin();
        NodeEvent healed = awaitEvent("pubfail", healStart, e -> e.kind() == NodeEventKind.HEAL
                && Boolean.TRUE.equals(e.success()));
        assertEquals(Boolean.TRUE, healed.success(), healed.toString());
        assertTrue(mounted(target));
        assertEquals(PublishState.PUBLISHED, record(key).usage("alloc-p").orElseThrow().state());
        assertReleasedAndClean("pubfail", ext, "alloc-p");
    }

    /**
     * NodeUnpublishVolume fails while the restore finishes an interrupted unmount (the usage is
     * recorded as UNPUBLISHING): the failure is a RESTORE node event, the usage stays UNPUBLISHING
     * (not published again), and the heal after the plugin's restart finishes the release:
     * unpublished, unstaged, the record idle.
     */
    @Test
    void anUnpublishFailingDuringTheRestoreIsReportedAndTheReleaseFinishedLater() throws Exception {
        awaitPluginHealthy();
        String ext = mounted("unpubfail", "alloc-u");
        VolumeKey key = new VolumeKey(NS, "unpubfail");
        Path staging = paths().stagingPath(NS, "unpubfail");
        Path target = paths().targetPath("alloc-u", NS, "unpubfail");

        worker.stop();
        interruptUnmount(key, "alloc-u");
        plugin.faults("NodeUnpublishVolume INTERNAL * injected unpublish failure\n");
        Instant start = Instant.now();
        worker.start();

        NodeEvent failed = awaitEvent("unpubfail", start, e -> e.kind() == NodeEventKind.RESTORE);
        assertEquals(Boolean.FALSE, failed.success(), failed.toString());
        assertTrue(failed.error().contains("unpublish for allocation alloc-u")
                && failed.error().contains("injected unpublish failure"), failed.error());
        await().atMost(WAIT).until(() -> !worker.restoring());
        assertEquals(PublishState.UNPUBLISHING, record(key).usage("alloc-u").orElseThrow().state(),
                "the interrupted unmount is still to finish");
        assertTrue(mounted(target));

        plugin.faults("");
        Instant healStart = Instant.now();
        long unpublishes = plugin.successfulCalls("NodeUnpublishVolume");
        restartPlugin();
        NodeEvent healed = awaitEvent("unpubfail", healStart, e -> e.kind() == NodeEventKind.HEAL
                && Boolean.TRUE.equals(e.success()));
        assertEquals(Boolean.TRUE, healed.success(), healed.toString());
        assertEquals("2", healed.details().get("released"), healed.toString());
        assertFalse(mounted(target));
        assertFalse(mounted(staging));
        assertTrue(worker.operations().record(key).map(VolumeRecord::idle).orElse(true), "released");
        assertEquals(unpublishes + 1, plugin.successfulCalls("NodeUnpublishVolume"));
        MountDone redelivered = run(command(NodeCommandKind.UNMOUNT, "unpubfail", ext, "alloc-u"));
        assertTrue(redelivered.succeeded(), "the unmount, redelivered, is answered: " + redelivered);
    }

    /**
     * NodeUnstageVolume fails while the restore finishes an interrupted unmount (the unpublish
     * works, the volume is then unused): the failure is a RESTORE node event, the record keeps the
     * staging (UNSTAGING, no usage), and the heal after the plugin's restart unstages it.
     */
    @Test
    void anUnstageFailingDuringTheRestoreIsReportedAndFinishedLater() throws Exception {
        awaitPluginHealthy();
        mounted("unstagefail", "alloc-n");
        VolumeKey key = new VolumeKey(NS, "unstagefail");
        Path staging = paths().stagingPath(NS, "unstagefail");
        Path target = paths().targetPath("alloc-n", NS, "unstagefail");

        worker.stop();
        interruptUnmount(key, "alloc-n");
        plugin.faults("NodeUnstageVolume INTERNAL * injected unstage failure\n");
        Instant start = Instant.now();
        worker.start();

        NodeEvent failed = awaitEvent("unstagefail", start, e -> e.kind() == NodeEventKind.RESTORE);
        assertEquals(Boolean.FALSE, failed.success(), failed.toString());
        assertTrue(failed.error().contains("unstage: ") && failed.error().contains("injected unstage failure"),
                failed.error());
        await().atMost(WAIT).until(() -> !worker.restoring());
        assertFalse(mounted(target), "the interrupted unpublish was finished");
        assertTrue(mounted(staging));
        assertTrue(record(key).usages().isEmpty());
        assertEquals(StageState.UNSTAGING, record(key).stage(), "the record keeps the staging to unstage");

        plugin.faults("");
        Instant healStart = Instant.now();
        restartPlugin();
        NodeEvent healed = awaitEvent("unstagefail", healStart, e -> e.kind() == NodeEventKind.HEAL
                && Boolean.TRUE.equals(e.success()));
        assertEquals("1", healed.details().get("released"), healed.toString());
        assertFalse(mounted(staging));
        assertTrue(worker.operations().record(key).map(VolumeRecord::idle).orElse(true), "released");
    }

    /**
     * An interrupted unmount (the usage recorded as UNPUBLISHING, the worker gone before the
     * plugin call) is finished at the next start against the real plugin: NodeUnpublishVolume and
     * NodeUnstageVolume, each once, no mount left, the record idle.
     */
    @Test
    void anInterruptedUnmountIsFinishedAgainstThePluginAtStart() throws Exception {
        awaitPluginHealthy();
        mounted("interrupted", "alloc-i");
        VolumeKey key = new VolumeKey(NS, "interrupted");
        Path staging = paths().stagingPath(NS, "interrupted");
        Path target = paths().targetPath("alloc-i", NS, "interrupted");

        worker.stop();
        interruptUnmount(key, "alloc-i");
        long unpublishes = plugin.successfulCalls("NodeUnpublishVolume");
        long unstages = plugin.successfulCalls("NodeUnstageVolume");
        long publishes = plugin.calls("NodePublishVolume");
        Instant start = Instant.now();
        worker.start();

        NodeEvent finished = awaitEvent("interrupted", start, e -> e.kind() == NodeEventKind.RESTORE
                || e.kind() == NodeEventKind.HEAL);
        assertEquals(Boolean.TRUE, finished.success(), finished.toString());
        assertEquals("2", finished.details().get("released"), "unpublished and unstaged: " + finished);
        await().atMost(WAIT).until(() -> !worker.restoring());
        assertFalse(mounted(target));
        assertFalse(mounted(staging));
        assertTrue(worker.operations().record(key).map(VolumeRecord::idle).orElse(true), "released");
        assertEquals(unpublishes + 1, plugin.successfulCalls("NodeUnpublishVolume"));
        assertEquals(unstages + 1, plugin.successfulCalls("NodeUnstageVolume"));
        assertEquals(publishes, plugin.calls("NodePublishVolume"), "not published again");
    }

    /** The state a crash between "record says unpublishing" and the NodeUnpublishVolume call leaves. */
    private void interruptUnmount(VolumeKey key, String alloc) throws Exception {
        MountRecordStore store = new MountRecordStore(paths());
        VolumeRecord record = store.load(key).orElseThrow();
        Usage usage = record.usage(alloc).orElseThrow();
        store.save(record.withUsage(usage.withState(PublishState.UNPUBLISHING)));
    }

    /**
     * Anti-entropy's actual state (node-state, every second in tests): a publication made by a mount command is
     * reported mounted with that command's id, its access mode, and its staging mounted; after its target is
     * unmounted behind the worker's back (a real umount) a report taken later says the publication is missing,
     * never mounted, while the record still says published. The reports carry valid CloudEvents headers and an
     * increasing sequence. Here, where the periodic stale-mount check is off: with it on, the healer may mount the
     * target again before the next report is taken.
     */
    @Test
    void theStateReportCarriesEachPublicationWithItsCommandAndReportsATargetUnmountedBehindItsBackAsMissing()
            throws Exception {
        awaitPluginHealthy();
        String ext = createVolume("state-vol");
        NodeCommand mount = command(NodeCommandKind.MOUNT, "state", ext, "alloc-s");
        assertTrue(run(mount).succeeded());
        Path target = paths().targetPath("alloc-s", NS, "state");
        Instant mountedAt = Instant.now();

        NodeStateReported before = awaitState(r -> !r.takenAt().isBefore(mountedAt));
        NodeStateReported.VolumeState volume = volumeOf(before, "state");
        assertEquals(PLUGIN, volume.pluginId());
        assertEquals(ext, volume.externalVolumeId());
        assertEquals(ReportedMount.MOUNTED, volume.staging());
        NodeStateReported.Publication publication = volume.publications().get(0);
        assertEquals("alloc-s", publication.allocationId());
        assertEquals(ReportedMount.MOUNTED, publication.state());
        assertEquals(mount.commandId(), publication.commandId());
        assertEquals(AccessMode.MULTI_NODE_MULTI_WRITER, publication.accessMode());
        assertEquals(Boolean.FALSE, publication.readOnly());

        unmount(target);
        Instant removed = Instant.now();

        NodeStateReported after = awaitState(r -> !r.takenAt().isBefore(removed));
        NodeStateReported.Publication missing = volumeOf(after, "state").publications().get(0);
        assertEquals(ReportedMount.MISSING, missing.state(), after.toString());
        assertEquals(ReportedMount.MOUNTED, volumeOf(after, "state").staging(), "only the target was removed");
        assertTrue(after.sequence() > before.sequence(), before.sequence() + " then " + after.sequence());
        assertEquals(PublishState.PUBLISHED, record(new VolumeKey(NS, "state")).usage("alloc-s").orElseThrow().state(),
                "the record still says published");

        assertTrue(run(command(NodeCommandKind.UNMOUNT, "state", ext, "alloc-s")).succeeded());
        Instant released = Instant.now();
        NodeStateReported gone = awaitState(r -> !r.takenAt().isBefore(released));
        assertTrue(gone.volumes().stream().noneMatch(v -> v.volumeId().equals("state")), "released: " + gone);
    }

    private static NodeStateReported awaitState(Predicate<NodeStateReported> predicate) {
        ConsumerRecord<String, String> record = kafka.awaitRecord("node-state", r -> NODE.equals(r.key())
                && predicate.test(EventCodec.decode(NodeStateReported.class, r.value())), WAIT);
        CloudEventHeaders.requireValid(record.headers(), EventType.NODE_STATE);
        return EventCodec.decode(NodeStateReported.class, record.value());
    }

    private static NodeStateReported.VolumeState volumeOf(NodeStateReported report, String volumeId) {
        return report.volumes().stream().filter(v -> v.namespace().equals(NS) && v.volumeId().equals(volumeId))
                .findFirst().orElseThrow(() -> new AssertionError("volume " + volumeId + " not in " + report));
    }

}
