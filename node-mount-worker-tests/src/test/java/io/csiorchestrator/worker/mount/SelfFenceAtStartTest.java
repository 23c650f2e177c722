package io.csiorchestrator.worker.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.worker.lease.FenceMarker;
import io.csiorchestrator.worker.lease.LeaseGate;
import io.csiorchestrator.worker.lease.SelfFence;
import io.csiorchestrator.worker.state.FenceRecord;
import io.csiorchestrator.worker.state.FenceRecordStore;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SelfFence#atStart} (issue 19 item 2, 3, 5): what a restarted worker does, before its restore, with the guard's
 * marker and with a fence its previous process did not finish, against the in-memory plugin of
 * {@link VolumeOperationsTest} (no plugin registered yet at start: paths are detached lazily).
 */
class SelfFenceAtStartTest {

    private static final VolumeKey VOL1 = new VolumeKey("ns", "vol1");

    @TempDir
    Path temp;

    private VolumeOperationsTest.FakePlugin plugin;
    private WorkerPaths paths;
    private final List<NodeEvent> sent = new ArrayList<>();
    private final List<String> detached = new ArrayList<>();
    /** Whether Kafka acknowledges what is sent (else it stays in flight, as when the broker is away). */
    private boolean acked = true;

    @BeforeEach
    void setUp() {
        plugin = new VolumeOperationsTest.FakePlugin();
        paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
    }

    private VolumeOperations operations(boolean pluginUp) throws Exception {
        PluginDirectory directory = new PluginDirectory() {
            @Override
            public Optional<NodeVolumePlugin> node(String pluginId) {
                return pluginUp ? Optional.of(plugin) : Optional.empty();
            }

            @Override
            public Optional<ControllerVolumePlugin> controller(String pluginId) {
                return Optional.empty();
            }
        };
        VolumeOperations ops = new VolumeOperations("node-1", paths, new MountRecordStore(paths), directory,
                plugin::table, (sealed, ns, vol) -> SecretPayload.EMPTY, e -> { }, Clock.systemUTC());
        ops.load();
        return ops;
    }

    private SelfFence selfFence(VolumeOperations ops, LeaseGate gate) {
        LazyUnmount lazy = path -> {
            detached.add(path.toString());
            plugin.mounted.remove(path.toString());
            return Optional.empty();
        };
        return new SelfFence("node-1", gate, ops, new VolumeSerializer(Runnable::run), new FenceRecordStore(paths),
                paths.root().resolve(FenceMarker.FILE_NAME), lazy, e -> {
                    sent.add(e);
                    return acked ? CompletableFuture.completedFuture(null) : new CompletableFuture<>();
                }, Clock.systemUTC());
    }

    private static NodeCommand mount(String alloc, boolean fenceOnLapse) {
        return new NodeCommand("c-" + alloc, "node-1", NodeCommandKind.MOUNT, "ns", "vol1", "hostpath", "ext-vol1", alloc,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, Map.of(), Map.of(), null,
                Instant.now()).withFencing(2L, 1L, fenceOnLapse);
    }

    /**
     * The guard detached the fenced target while the worker was down and left its marker: at start (no plugin yet) the
     * publication is recorded as being released before the restore, FENCED by guard is sent with it as lazily
     * detached, the fence is recorded and marked reported, the lease knows epoch 3 was fenced, the marker is gone; the
     * restore then tells the plugin (NodeUnpublish, then NodeUnstage of the unused staging), publishes nothing, and the
     * publication leaves the record.
     */
    @Test
    void theGuardsMarkerAtStartReleasesItsPublicationAndTheRestoreTellsThePlugin() throws Exception {
        assertTrue(operations(true).execute(mount("w1", true)).succeeded());
        Path target = paths.targetPath("w1", "ns", "vol1");
        plugin.mounted.remove(target.toString()); // the guard's umount -l
        Path marker = paths.root().resolve(FenceMarker.FILE_NAME);
        Files.writeString(marker, "epoch 3\nlazy " + target + "\n");

        VolumeOperations ops = operations(false);
        LeaseGate gate = LeaseGate.enabled("node-1", System::nanoTime);
        assertEquals(List.of(), selfFence(ops, gate).atStart());
        assertEquals(1, sent.size());
        NodeEvent fenced = sent.get(0);
        assertEquals(NodeEventKind.FENCED, fenced.kind());
        assertEquals("3", fenced.details().get("epoch"));
        assertEquals("guard", fenced.details().get("fencedBy"));
        assertEquals("ns/vol1/w1", fenced.details().get("lazilyDetached"));
        assertFalse(Files.exists(marker));
        assertEquals(PublishState.UNPUBLISHING, ops.record(VOL1).orElseThrow().usage("w1").orElseThrow().state(),
                "the plugin not told yet: released, never published again");
        FenceRecord record = new FenceRecordStore(paths).load().orElseThrow();
        assertEquals(3, record.epoch());
        assertTrue(record.reported());
        assertEquals("node-1 has no valid lease (epoch 3 fenced)", gate.invalidReason());

        VolumeOperations restarted = operations(true);
        restarted.restore(VOL1);
        assertEquals(1, plugin.count("publish"), "the restore publishes nothing");
        assertEquals(List.of("unpublish w1", "unstage ext-vol1"), plugin.calls.subList(plugin.calls.size() - 2, plugin.calls.size()));
        assertTrue(restarted.record(VOL1).map(r -> r.usages().isEmpty()).orElse(true));
    }

    /**
     * The chaos run's case (a worker killed and slow to start, its lease lapsed, the guard fenced): the guard unmounted
     * the target and the staging while no plugin was connected, so neither could be told. At start the record keeps
     * the publication as being released and the staging as being unstaged; a new publication of the volume stages it
     * again (the staging is not mounted) and publishes; the restore then tells the plugin of the fenced publication;
     * the new one's release then unstages the volume (the plugin holds no publication the node no longer has, so its
     * NodeUnstage is not refused "still published on the node" for ever).
     */
    @Test
    void aGuardsFenceThePluginCouldNotBeToldOfIsToldByTheRestoreAndTheVolumeIsStagedAgainForANewPublication()
            throws Exception {
        assertTrue(operations(true).execute(mount("w1", true)).succeeded());
        Path target = paths.targetPath("w1", "ns", "vol1");
        String staging = operations(true).record(VOL1).orElseThrow().stagingPath();
        plugin.mounted.remove(target.toString()); // the guard's umount of both
        plugin.mounted.remove(staging);
        Path marker = paths.root().resolve(FenceMarker.FILE_NAME);
        Files.writeString(marker, "epoch 3\nunmounted " + target + "\nunmounted " + staging + "\n");

        VolumeOperations ops = operations(false);
        assertEquals(List.of(), selfFence(ops, LeaseGate.enabled("node-1", System::nanoTime)).atStart());
        assertEquals("ns/vol1/w1", sent.get(0).details().get("unmounted"));
        VolumeRecord atStart = ops.record(VOL1).orElseThrow();
        assertEquals(PublishState.UNPUBLISHING, atStart.usage("w1").orElseThrow().state());
        assertEquals(StageState.UNSTAGING, atStart.stage(), "not mounted any more, its NodeUnstage owed");

        VolumeOperations restarted = operations(true);
        long stages = plugin.count("stage");
        assertTrue(restarted.execute(mount("w2", false)).succeeded());
        assertEquals(stages + 1, plugin.count("stage"), "staged again: " + plugin.calls);
        assertTrue(plugin.mounted.contains(staging));
        restarted.restore(VOL1);
        assertEquals("unpublish w1", plugin.calls.get(plugin.calls.size() - 1), "the plugin told by the restore");
        assertTrue(restarted.record(VOL1).orElseThrow().usage("w1").isEmpty());
        assertTrue(restarted.execute(unmount("w2")).succeeded());
        assertEquals(List.of("unpublish w2", "unstage ext-vol1"), plugin.calls.subList(plugin.calls.size() - 2, plugin.calls.size()));
        assertTrue(restarted.record(VOL1).map(r -> r.usages().isEmpty()).orElse(true));
    }

    private static NodeCommand unmount(String alloc) {
        return new NodeCommand("u-" + alloc, "node-1", NodeCommandKind.UNMOUNT, "ns", "vol1", "hostpath", "ext-vol1", alloc,
                null, null, false, null, null, Map.of(), Map.of(), null, Instant.now());
    }

    /**
     * The guard fenced with no mount to take down (the worker was stopped with none, e.g. {@code ./csi down}, and the
     * guard starved): its epoch is fenced all the same, so at start FENCED is recorded and sent (the registry ends that
     * epoch and grants the next; without it the registry renewed the fenced epoch and the worker never became ready);
     * a second start with the same marker left behind (a crash before its removal) sends nothing again.
     */
    @Test
    void anEmptyMarkerIsStillAFenceOfItsEpochReportedOnce() throws Exception {
        Path marker = paths.root().resolve(FenceMarker.FILE_NAME);
        Files.createDirectories(paths.root());
        Files.writeString(marker, "epoch 1\n");

        LeaseGate gate = LeaseGate.enabled("node-1", System::nanoTime);
        assertEquals(List.of(), selfFence(operations(false), gate).atStart());
        assertEquals(1, sent.size(), sent.toString());
        assertEquals(NodeEventKind.FENCED, sent.get(0).kind());
        assertEquals("1", sent.get(0).details().get("epoch"));
        assertEquals("", sent.get(0).details().get("unmounted"));
        assertEquals(1, new FenceRecordStore(paths).load().orElseThrow().epoch());
        assertFalse(Files.exists(marker));

        Files.writeString(marker, "epoch 1\n");
        assertEquals(List.of(), selfFence(operations(false), LeaseGate.enabled("node-1", System::nanoTime)).atStart());
        assertEquals(1, sent.size(), "reported once: " + sent);
        assertFalse(Files.exists(marker));
    }

    /**
     * The guard unmounted a target and the staging behind the plugin's back: taking its marker in with the plugin there
     * tells the plugin (NodeUnpublish of the target, NodeUnstage of the staging), so the plugin keeps no publication
     * the node no longer has (else a later NodeUnstage of the volume is refused "still published" for ever); FENCED by
     * guard is still sent with the target as unmounted.
     */
    @Test
    void theGuardsMarkerTakenInWithThePluginThereTellsThePluginOfTheUnmounts() throws Exception {
        assertTrue(operations(true).execute(mount("w1", true)).succeeded());
        Path target = paths.targetPath("w1", "ns", "vol1");
        VolumeOperations ops = operations(true);
        String staging = ops.record(VOL1).orElseThrow().stagingPath();
        plugin.mounted.remove(target.toString()); // the guard's umount
        plugin.mounted.remove(staging);
        Path marker = paths.root().resolve(FenceMarker.FILE_NAME);
        Files.writeString(marker, "epoch 3\nunmounted " + target + "\nunmounted " + staging + "\n");
        long unpublishes = plugin.count("unpublish");
        long unstages = plugin.count("unstage");

        assertEquals(List.of(), selfFence(ops, LeaseGate.enabled("node-1", System::nanoTime)).atStart());
        assertEquals(unpublishes + 1, plugin.count("unpublish"), plugin.calls.toString());
        assertEquals(unstages + 1, plugin.count("unstage"), plugin.calls.toString());
        assertEquals("ns/vol1/w1", sent.get(0).details().get("unmounted"));
        assertTrue(ops.record(VOL1).map(r -> r.usages().isEmpty()).orElse(true));
    }

    /**
     * A fence record "fencing at epoch 2" as a process that stopped before unmounting leaves it (written by the test
     * here, with no crash; SelfFenceKillIT leaves one with a real kill -9 of the packaged worker): at start the fence is done again
     * (no plugin yet: lazily), recorded FENCED and reported once (also while Kafka has not acknowledged it yet); the
     * restore then publishes nothing.
     */
    @Test
    void aFenceLeftUnfinishedIsDoneAgainAtStartAndReportedOnce() throws Exception {
        assertTrue(operations(true).execute(mount("w1", true)).succeeded());
        new FenceRecordStore(paths).save(FenceRecord.started(2, FenceRecord.BY_WORKER, Instant.now()));
        acked = false;

        VolumeOperations ops = operations(false);
        LeaseGate gate = LeaseGate.enabled("node-1", System::nanoTime);
        assertEquals(List.of(), selfFence(ops, gate).atStart());
        assertEquals(List.of(paths.targetPath("w1", "ns", "vol1").toString(), paths.stagingPath("ns", "vol1").toString()),
                detached);
        assertEquals(1, sent.size(), "reported once");
        assertEquals("ns/vol1/w1", sent.get(0).details().get("lazilyDetached"));
        assertEquals("worker", sent.get(0).details().get("fencedBy"));
        FenceRecord record = new FenceRecordStore(paths).load().orElseThrow();
        assertEquals(FenceRecord.Phase.FENCED, record.phase());
        assertEquals(2, record.epoch());
        assertFalse(record.reported(), "not acknowledged: reported again at the next start");

        VolumeOperations restarted = operations(true);
        restarted.restore(VOL1);
        assertEquals(1, plugin.count("publish"), "the restore publishes nothing");
    }
}
