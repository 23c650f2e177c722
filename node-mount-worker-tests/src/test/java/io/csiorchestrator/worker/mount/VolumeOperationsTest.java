package io.csiorchestrator.worker.mount;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.worker.state.MountRecordStore;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.PublishState;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import io.csiorchestrator.worker.state.WorkerPaths;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The decisions of {@link VolumeOperations} (reference counting, idempotency, rollback, restore,
 * heal) against an in-memory plugin whose "mounts" feed the mount table. The real plugin, real
 * bind mounts and Kafka are exercised by the worker's integration tests.
 */
class VolumeOperationsTest {

    @TempDir
    Path temp;

    private FakePlugin plugin;
    private WorkerPaths paths;
    private final List<NodeEvent> events = new ArrayList<>();
    private int commandCounter;

    /** A node plugin that records calls and keeps a set of "mounted" paths. */
    static class FakePlugin implements NodeVolumePlugin {
        final List<String> calls = new ArrayList<>();
        final Set<String> mounted = new LinkedHashSet<>();
        final Set<String> readOnly = new LinkedHashSet<>();
        boolean stages = true;
        PluginCallFailure failNextPublish;
        PluginCallFailure failNextUnpublish;

        @Override
        public String pluginId() {
            return "hostpath";
        }

        @Override
        public boolean requiresStaging() {
            return stages;
        }

        @Override
        public void stage(VolumeRequest request) {
            calls.add("stage " + request.externalVolumeId());
            mounted.add(request.stagingPath().toString());
        }

        @Override
        public void unstage(String externalVolumeId, Path stagingPath) {
            calls.add("unstage " + externalVolumeId);
            mounted.remove(stagingPath.toString());
        }

        @Override
        public void publish(VolumeRequest request) {
            calls.add("publish " + request.targetPath().getParent().getParent().getFileName());
            if (failNextPublish != null) {
                PluginCallFailure f = failNextPublish;
                failNextPublish = null;
                throw f;
            }
            mounted.add(request.targetPath().toString());
            if (request.readOnly()) {
                readOnly.add(request.targetPath().toString());
            }
        }

        @Override
        public void unpublish(String externalVolumeId, Path targetPath) {
            calls.add("unpublish " + targetPath.getParent().getParent().getFileName());
            if (failNextUnpublish != null) {
                PluginCallFailure f = failNextUnpublish;
                failNextUnpublish = null;
                throw f;
            }
            mounted.remove(targetPath.toString());
        }

        MountTable table() {
            StringBuilder text = new StringBuilder("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n");
            int id = 2;
            for (String m : mounted) {
                text.append(id++).append(" 1 8:1 /x ").append(m.replace(" ", "\\040")).append(' ')
                        .append(readOnly.contains(m) ? "ro" : "rw").append(" - ext4 /dev/sda1 rw\n");
            }
            return MountTable.parse(text.toString());
        }

        long count(String prefix) {
            return calls.stream().filter(c -> c.startsWith(prefix)).count();
        }
    }

    @BeforeEach
    void setUp() {
        plugin = new FakePlugin();
        paths = new WorkerPaths(temp.resolve("root"), new PosixDirs());
    }

    /** Paths whose stat answers ENOTCONN, as a dead FUSE daemon's mount does. */
    private final Set<String> corrupted = new LinkedHashSet<>();

    private VolumeOperations operations(FakePlugin p, boolean pluginUp) {
        return operations(p, pluginUp, new MountRecordStore(paths));
    }

    private VolumeOperations operations(FakePlugin p, boolean pluginUp, MountRecordStore store) {
        PluginDirectory directory = new PluginDirectory() {
            @Override
            public Optional<NodeVolumePlugin> node(String pluginId) {
                return pluginUp && pluginId.equals("hostpath") ? Optional.of(p) : Optional.empty();
            }

            @Override
            public Optional<ControllerVolumePlugin> controller(String pluginId) {
                return Optional.empty();
            }
        };
        return new VolumeOperations("node-1", paths, store, directory, p::table,
                (sealed, ns, vol) -> SecretPayload.EMPTY, events::add, Clock.systemUTC(),
                new MountCheck(path -> corrupted.contains(path.toString())
                        ? Optional.of(jnr.constants.platform.Errno.ENOTCONN) : Optional.empty()));
    }

    private NodeCommand mount(String alloc, boolean readOnly) {
        return new NodeCommand("c" + (++commandCounter), "node-1", NodeCommandKind.MOUNT, "ns", "vol1", "hostpath",
                "ext-vol1", alloc, AccessMode.values()[0], AttachmentMode.values()[0], readOnly, null, null, Map.of(),
                Map.of(), null, Instant.now());
    }

    private NodeCommand unmount(String alloc) {
        return new NodeCommand("c" + (++commandCounter), "node-1", NodeCommandKind.UNMOUNT, "ns", "vol1", "hostpath",
                "ext-vol1", alloc, null, null, false, null, null, Map.of(), Map.of(), null, Instant.now());
    }

    @Test
    void twoAllocationsShareOneStagingAndTheLastReleaseUnstages() {
        VolumeOperations ops = operations(plugin, true);
        MountDone a1 = ops.execute(mount("a1", false));
        MountDone a2 = ops.execute(mount("a2", true));
        assertTrue(a1.succeeded(), a1.toString());
        assertTrue(a2.succeeded(), a2.toString());
        assertEquals(paths.targetPath("a1", "ns", "vol1").toString(), a1.hostPath());
        assertEquals(paths.stagingPath("ns", "vol1").toString(), a1.stagingPath());
        assertEquals(List.of("stage ext-vol1", "publish a1", "publish a2"), plugin.calls);

        assertTrue(ops.execute(unmount("a1")).succeeded());
        assertEquals(0, plugin.count("unstage"), "a2 still uses the volume");
        assertFalse(Files.exists(paths.allocationDir("a1")), "a1's directories are gone");
        assertTrue(ops.execute(unmount("a2")).succeeded());
        assertEquals(List.of("stage ext-vol1", "publish a1", "publish a2", "unpublish a1", "unpublish a2",
                "unstage ext-vol1"), plugin.calls);
        VolumeRecord record = ops.record(new VolumeKey("ns", "vol1")).orElseThrow();
        assertEquals(StageState.UNSTAGED, record.stage());
        assertTrue(record.usages().isEmpty());
        assertEquals(4, events.stream().filter(e -> e.kind() == NodeEventKind.MOUNT || e.kind() == NodeEventKind.UNMOUNT)
                .filter(e -> Boolean.TRUE.equals(e.success())).count());
    }

    /**
     * A second allocation's mount of a staged volume leaves the staging mount alone: the worker never changes
     * the permissions of what the plugin mounted there (the volume's own root, here 0755). Found by
     * {@code ./csi chaos}: chmod-ing it to 0700 failed with EROFS on a read-only staging mount, so every
     * second claim on a node of a multi-node-reader-only volume failed (WORKER_IO_ERROR, errno 30).
     */
    @Test
    void aSecondAllocationDoesNotChmodTheStagingMount() throws Exception {
        FakePlugin volumeRootModes = new FakePlugin() {
            @Override
            public void stage(VolumeRequest request) {
                super.stage(request);
                try {
                    // what a mount of the volume shows at the staging path: the volume's root directory
                    Files.setPosixFilePermissions(request.stagingPath(), PosixFilePermissions.fromString("rwxr-xr-x"));
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }
        };
        VolumeOperations ops = operations(volumeRootModes, true);
        assertTrue(ops.execute(mount("a1", true)).succeeded());
        MountDone second = ops.execute(mount("a2", true));
        assertTrue(second.succeeded(), second.toString());
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(
                Files.getPosixFilePermissions(paths.stagingPath("ns", "vol1"))));
        assertEquals(List.of("stage ext-vol1", "publish a1", "publish a2"), volumeRootModes.calls);
    }

    /** The mount command's fenceOnLapse is kept on its publication in the record (and absent means false). */
    @Test
    void theRecordKeepsFenceOnLapseOfEachMountCommand() throws Exception {
        VolumeOperations ops = operations(plugin, true);
        assertTrue(ops.execute(mount("w1", false).withFencing(1L, 1L, true)).succeeded());
        assertTrue(ops.execute(mount("r1", true)).succeeded());
        VolumeOperations restarted = operations(plugin, true);
        restarted.load();
        VolumeRecord record = restarted.record(new VolumeKey("ns", "vol1")).orElseThrow();
        assertTrue(record.usage("w1").orElseThrow().fencesOnLapse());
        assertFalse(record.usage("r1").orElseThrow().fencesOnLapse());
    }

    /**
     * Issue 19: a new mount fenced on a lapse is in the fence guard's plan (target and staging) before the plugin is
     * asked to stage or publish anything, so a freeze right after the mount cannot leave a mount the guard does not
     * know (FencingIT saw one: mounted 76 ms before the SIGSTOP, between two feeds). A mount not fenced on a lapse
     * does not wait for the guard; a guard that cannot be fed refuses the mount, and nothing of it is left.
     */
    @Test
    void aFencedMountIsInTheGuardsPlanBeforeThePluginMountsAndAnUnfedGuardRefusesIt() throws Exception {
        VolumeOperations ops = operations(plugin, true);
        List<List<String>> planAtFeed = new ArrayList<>();
        List<Integer> pluginCallsAtFeed = new ArrayList<>();
        boolean[] guardTakesIt = {true};
        List<List<String>> requiredAtFeed = new ArrayList<>();
        ops.feedGuardBeforeMountsWith(required -> {
            requiredAtFeed.add(required);
            planAtFeed.add(io.csiorchestrator.worker.lease.FencePlan.of(ops.records().values()).paths());
            pluginCallsAtFeed.add(plugin.calls.size());
            return guardTakesIt[0];
        });

        MountDone w1 = ops.execute(mount("w1", false).withFencing(1L, 1L, true));
        assertTrue(w1.succeeded(), w1.toString());
        assertEquals(List.of(List.of(paths.targetPath("w1", "ns", "vol1").toString(),
                paths.stagingPath("ns", "vol1").toString())), planAtFeed, "the guard's plan when it was fed");
        assertEquals(planAtFeed, requiredAtFeed, "the mount asks the guard for its volume's paths: the target and the staging");
        assertEquals(List.of(0), pluginCallsAtFeed, "fed before the plugin staged or published anything");

        assertTrue(ops.execute(mount("r1", true)).succeeded());
        assertEquals(1, planAtFeed.size(), "a mount not fenced on a lapse does not feed the guard");

        guardTakesIt[0] = false;
        MountDone w2 = ops.execute(mount("w2", false).withFencing(1L, 1L, true));
        assertFalse(w2.succeeded(), w2.toString());
        assertEquals("FENCE_GUARD_UNFED", w2.errorCode());
        assertTrue(w2.errorMessage().contains("fence guard"), w2.errorMessage());
        assertEquals(0, plugin.count("publish w2"), plugin.calls.toString());
        assertTrue(ops.record(new VolumeKey("ns", "vol1")).orElseThrow().usage("w2").isEmpty(), "nothing of w2 is left");
    }

    /**
     * A mount writes its record twice (the intent before any plugin call, then the state after the last call together
     * with the command's result), an unmount three times (UNPUBLISHING, UNSTAGING, then UNSTAGED with the result): the
     * states between plugin calls are checkpoints that the next write carries. What is on disk after each command is
     * the whole truth: a new worker loading it answers the redelivered command and sees the same state.
     */
    @Test
    void eachCommandEndsWithOneWriteOfItsStateAndResult() throws Exception {
        List<String> writes = new java.util.ArrayList<>();
        MountRecordStore counting = new MountRecordStore(paths) {
            @Override
            public void save(VolumeRecord record) throws IOException {
                writes.add(record.stage() + " " + record.usages().values().stream().map(u -> u.allocationId() + ":" + u.state())
                        .toList());
                super.save(record);
            }
        };
        VolumeOperations ops = operations(plugin, true, counting);
        NodeCommand mount = mount("a1", false);
        assertTrue(ops.execute(mount).succeeded());
        assertEquals(List.of("STAGING [a1:PUBLISHING]", "STAGED [a1:PUBLISHED]"), writes);
        VolumeRecord onDisk = new MountRecordStore(paths).load(new VolumeKey("ns", "vol1")).orElseThrow();
        assertEquals(StageState.STAGED, onDisk.stage());
        assertEquals(PublishState.PUBLISHED, onDisk.usage("a1").orElseThrow().state());
        assertTrue(onDisk.resultFor(mount.commandId()).orElseThrow().succeeded());

        writes.clear();
        NodeCommand unmount = unmount("a1");
        assertTrue(ops.execute(unmount).succeeded());
        assertEquals(List.of("STAGED [a1:UNPUBLISHING]", "UNSTAGING []", "UNSTAGED []"), writes);
        VolumeOperations restarted = operations(plugin, true);
        restarted.load();
        VolumeRecord loaded = restarted.record(new VolumeKey("ns", "vol1")).orElseThrow();
        assertEquals(StageState.UNSTAGED, loaded.stage());
        assertTrue(loaded.usages().isEmpty());
        int calls = plugin.calls.size();
        assertTrue(restarted.execute(unmount).succeeded(), "the redelivery is answered from the record");
        assertEquals(calls, plugin.calls.size());
    }

    /**
     * When the write that carries the state after the plugin calls fails, the answer is WORKER_IO_ERROR (as when a
     * write inside the command fails), and the record on disk still says the mount is in progress, so the restart's
     * convergence publishes it again (idempotently) instead of trusting a state that was never written.
     */
    @Test
    void aFailedFinalWriteFailsTheCommandAndLeavesTheIntentOnDisk() throws Exception {
        java.util.concurrent.atomic.AtomicInteger saves = new java.util.concurrent.atomic.AtomicInteger();
        MountRecordStore failingSecond = new MountRecordStore(paths) {
            @Override
            public void save(VolumeRecord record) throws IOException {
                if (saves.incrementAndGet() == 2) {
                    throw new IOException("disk full");
                }
                super.save(record);
            }
        };
        VolumeOperations ops = operations(plugin, true, failingSecond);
        MountDone done = ops.execute(mount("a1", false));
        assertFalse(done.succeeded(), done.toString());
        assertEquals("WORKER_IO_ERROR", done.errorCode());
        assertTrue(done.errorMessage().contains("disk full"), done.errorMessage());
        VolumeRecord onDisk = new MountRecordStore(paths).load(new VolumeKey("ns", "vol1")).orElseThrow();
        assertEquals(StageState.STAGING, onDisk.stage());
        assertEquals(PublishState.PUBLISHING, onDisk.usage("a1").orElseThrow().state());
    }

    @Test
    void aRedeliveredCommandIsAnsweredFromTheRecord() throws Exception {
        VolumeOperations ops = operations(plugin, true);
        NodeCommand command = mount("a1", false);
        MountDone first = ops.execute(command);
        MountDone again = ops.execute(command);
        assertEquals(first, again);
        // also after a restart of the worker
        VolumeOperations restarted = operations(plugin, true);
        restarted.load();
        assertEquals(first, restarted.execute(command));
        assertEquals(2, plugin.calls.size());
    }

    @Test
    void anExistingMountIsReused() {
        VolumeOperations ops = operations(plugin, true);
        plugin.mounted.add(paths.stagingPath("ns", "vol1").toString());
        plugin.mounted.add(paths.targetPath("a1", "ns", "vol1").toString());
        assertTrue(ops.execute(mount("a1", false)).succeeded());
        assertTrue(plugin.calls.isEmpty(), plugin.calls.toString());
    }

    @Test
    void aFailedPublishCarriesTheOperatorMessageAndIsRolledBack() {
        VolumeOperations ops = operations(plugin, true);
        plugin.failNextPublish = new PluginCallFailure("FAILED_PRECONDITION",
                "volume ext-vol1 is already published on another node", false);
        MountDone done = ops.execute(mount("a1", false));
        assertFalse(done.succeeded());
        assertEquals("FAILED_PRECONDITION", done.errorCode());
        assertEquals("volume ext-vol1 is already published on another node", done.errorMessage());
        assertEquals(List.of("stage ext-vol1", "publish a1", "unpublish a1", "unstage ext-vol1"), plugin.calls);
        VolumeRecord record = ops.record(new VolumeKey("ns", "vol1")).orElseThrow();
        assertTrue(record.usages().isEmpty());
        assertEquals(StageState.UNSTAGED, record.stage());
        NodeEvent event = events.get(events.size() - 1);
        assertEquals(Boolean.FALSE, event.success());
        assertEquals(done.errorMessage(), event.error());
    }

    @Test
    void aMissingPluginIsReportedWithoutTakingAReference() {
        VolumeOperations ops = operations(plugin, false);
        MountDone done = ops.execute(mount("a1", false));
        assertEquals(VolumeOperations.PLUGIN_NOT_FOUND, done.errorCode());
        assertTrue(done.errorMessage().contains("hostpath"), done.errorMessage());
        assertTrue(ops.record(new VolumeKey("ns", "vol1")).orElseThrow().usages().isEmpty());
    }

    @Test
    void restartWithIntactMountsCostsNoCall() throws Exception {
        VolumeOperations ops = operations(plugin, true);
        ops.execute(mount("a1", false));
        ops.execute(mount("a2", false));
        plugin.calls.clear();
        VolumeOperations restarted = operations(plugin, true);
        restarted.load();
        Convergence c = restarted.restore(new VolumeKey("ns", "vol1"));
        assertTrue(c.nothingToDo(), c.toString());
        assertTrue(plugin.calls.isEmpty(), plugin.calls.toString());
    }

    @Test
    void aCrashBetweenStageAndPublishConvergesOnRestore() throws Exception {
        // the state a kill -9 leaves after the stage call returned but before publish: the usage
        // reference is recorded as PUBLISHING, the staging is mounted, the record still says STAGING
        VolumeOperations ops = operations(plugin, true);
        ops.execute(mount("a1", false));
        VolumeKey key = new VolumeKey("ns", "vol1");
        VolumeRecord record = ops.record(key).orElseThrow();
        VolumeRecord crashed = record.withStage(StageState.STAGING)
                .withUsage(record.usage("a1").orElseThrow().withState(PublishState.PUBLISHING));
        new MountRecordStore(paths).save(crashed);
        plugin.mounted.remove(paths.targetPath("a1", "ns", "vol1").toString());
        plugin.calls.clear();

        VolumeOperations restarted = operations(plugin, true);
        restarted.load();
        Convergence c = restarted.restore(key);
        assertEquals(List.of("publish a1"), plugin.calls, "staging intact: no second stage; one publish");
        assertEquals(1, c.published());
        VolumeRecord after = restarted.record(key).orElseThrow();
        assertEquals(StageState.STAGED, after.stage());
        assertEquals(PublishState.PUBLISHED, after.usage("a1").orElseThrow().state());
        assertTrue(events.stream().anyMatch(e -> e.kind() == NodeEventKind.RESTORE));
    }

    @Test
    void theHealerStagesAgainAndRepublishesWhenTheStagingIsGone() {
        VolumeOperations ops = operations(plugin, true);
        ops.execute(mount("a1", false));
        ops.execute(mount("a2", false));
        plugin.mounted.remove(paths.stagingPath("ns", "vol1").toString());
        plugin.calls.clear();
        Convergence c = ops.heal(new VolumeKey("ns", "vol1"));
        assertEquals(List.of("stage ext-vol1", "publish a1", "publish a2"), plugin.calls);
        assertEquals(1, c.staged());
        assertTrue(events.stream().anyMatch(e -> e.kind() == NodeEventKind.HEAL && Boolean.TRUE.equals(e.success())));
        plugin.calls.clear();
        assertTrue(ops.heal(new VolumeKey("ns", "vol1")).nothingToDo(), "nothing to heal when the staging is there");
        assertTrue(plugin.calls.isEmpty());
    }

    @Test
    void anInterruptedUnmountIsFinishedOnRestore() throws Exception {
        VolumeOperations ops = operations(plugin, true);
        ops.execute(mount("a1", false));
        VolumeKey key = new VolumeKey("ns", "vol1");
        VolumeRecord record = ops.record(key).orElseThrow();
        new MountRecordStore(paths).save(record.withUsage(record.usage("a1").orElseThrow()
                .withState(PublishState.UNPUBLISHING)));
        plugin.calls.clear();
        VolumeOperations restarted = operations(plugin, true);
        restarted.load();
        restarted.restore(key);
        assertEquals(List.of("unpublish a1", "unstage ext-vol1"), plugin.calls);
        assertTrue(restarted.record(key).orElseThrow().idle());
    }

    @Test
    void aPluginWithoutStagingIsPublishedDirectly() {
        plugin.stages = false;
        VolumeOperations ops = operations(plugin, true);
        MountDone done = ops.execute(mount("a1", true));
        assertTrue(done.succeeded());
        assertEquals(null, done.stagingPath());
        assertTrue(ops.execute(unmount("a1")).succeeded());
        assertEquals(List.of("publish a1", "unpublish a1"), plugin.calls);
        assertFalse(Files.exists(paths.stagingPath("ns", "vol1")));
    }

    @Test
    void aCommandForAnotherNodeIsRefused() {
        VolumeOperations ops = operations(plugin, true);
        NodeCommand other = new NodeCommand("x", "node-2", NodeCommandKind.MOUNT, "ns", "vol1", "hostpath", "e", "a1",
                AccessMode.values()[0], AttachmentMode.values()[0], false, null, null, Map.of(), Map.of(), null,
                Instant.now());
        MountDone done = ops.execute(other);
        assertEquals(VolumeOperations.INVALID_COMMAND, done.errorCode());
        assertTrue(plugin.calls.isEmpty());
    }

    @Test
    void aCorruptedTargetIsUnpublishedThenPublishedAgainAndTheOthersAreLeftAlone() {
        VolumeOperations ops = operations(plugin, true);
        ops.execute(mount("a1", false));
        ops.execute(mount("a2", false));
        VolumeKey key = new VolumeKey("ns", "vol1");
        corrupted.add(paths.targetPath("a1", "ns", "vol1").toString());
        plugin.calls.clear();
        events.clear();

        Convergence c = ops.healDamaged(key);
        assertEquals(List.of("unpublish a1", "publish a1"), plugin.calls, "unmounted first, then published again");
        assertEquals(1, c.repairs().size(), c.toString());
        assertEquals(MountDamage.CORRUPTED, c.repairs().get(0).damage());
        assertEquals(PublishState.PUBLISHED, ops.record(key).orElseThrow().usage("a1").orElseThrow().state());
        NodeEvent heal = events.stream().filter(e -> e.kind() == NodeEventKind.HEAL).findFirst().orElseThrow();
        assertEquals("corrupted (ENOTCONN)", heal.details().get("target/a1"), heal.toString());
        assertEquals(Boolean.TRUE, heal.success());
    }

    @Test
    void aCorruptedStagingUnpublishesEveryTargetUnstagesThenStagesAndPublishesAgain() {
        VolumeOperations ops = operations(plugin, true);
        ops.execute(mount("a1", false));
        ops.execute(mount("a2", false));
        VolumeKey key = new VolumeKey("ns", "vol1");
        corrupted.add(paths.stagingPath("ns", "vol1").toString());
        plugin.calls.clear();

        Convergence c = ops.healDamaged(key);
        assertEquals(List.of("unpublish a1", "unpublish a2", "unstage ext-vol1", "stage ext-vol1", "publish a1",
                "publish a2"), plugin.calls);
        assertEquals(List.of("staging"), c.repairs().stream().map(Convergence.Repair::path).toList());
        assertEquals(StageState.STAGED, ops.record(key).orElseThrow().stage());
    }

    @Test
    void aTargetNoLongerMountedIsPublishedAgainButNeverOneBeingReleased() throws Exception {
        VolumeOperations ops = operations(plugin, true);
        ops.execute(mount("a1", false));
        ops.execute(mount("a2", false));
        VolumeKey key = new VolumeKey("ns", "vol1");
        // a2's release is under way and its unpublish keeps failing: the record says UNPUBLISHING
        VolumeRecord record = ops.record(key).orElseThrow();
        new MountRecordStore(paths).save(record.withUsage(record.usage("a2").orElseThrow()
                .withState(PublishState.UNPUBLISHING)));
        ops.load();
        plugin.mounted.remove(paths.targetPath("a1", "ns", "vol1").toString());
        plugin.mounted.remove(paths.targetPath("a2", "ns", "vol1").toString());
        plugin.failNextUnpublish = new PluginCallFailure("INTERNAL", "unpublish failed", false);
        plugin.calls.clear();

        Convergence c = ops.healDamaged(key);
        assertTrue(plugin.calls.contains("publish a1"), plugin.calls.toString());
        assertFalse(plugin.calls.contains("publish a2"), "a usage being released is never published again: "
                + plugin.calls);
        assertEquals(List.of("a1"), c.repairs().stream().map(Convergence.Repair::allocationId).toList());
        assertEquals(MountDamage.NOT_MOUNTED, c.repairs().get(0).damage());
        plugin.calls.clear();
        assertTrue(ops.healDamaged(key).repairs().isEmpty());
    }

    @Test
    void nothingDamagedCostsNoCallAndNoEvent() {
        VolumeOperations ops = operations(plugin, true);
        ops.execute(mount("a1", false));
        plugin.calls.clear();
        events.clear();
        assertTrue(ops.healDamaged(new VolumeKey("ns", "vol1")).nothingToDo());
        assertTrue(plugin.calls.isEmpty());
        assertTrue(events.isEmpty());
    }

    // ------------------------------------------------------------------ fence (issue 19)

    private static final VolumeKey VOL1 = new VolumeKey("ns", "vol1");

    /** A lazy unmount that detaches from the fake plugin's mounts (or fails with {@code error}). */
    private LazyUnmount lazy(List<String> detached, String error) {
        return path -> {
            detached.add(path.toString());
            if (error != null) {
                return Optional.of(error);
            }
            plugin.mounted.remove(path.toString());
            return Optional.empty();
        };
    }

    /** Through the plugin: the fenced publication is unpublished, a reader that is not fenced keeps it and its staging. */
    @Test
    void theFenceUnpublishesOnlyTheFencedPublicationAndAReaderKeepsTheStaging() {
        VolumeOperations ops = operations(plugin, true);
        assertTrue(ops.execute(mount("w1", false).withFencing(1L, 1L, true)).succeeded());
        assertTrue(ops.execute(mount("r1", true)).succeeded());
        List<String> detached = new ArrayList<>();
        io.csiorchestrator.worker.lease.FenceReport report = ops.fence(VOL1, lazy(detached, null));
        assertEquals(List.of("ns/vol1/w1"), report.unmounted);
        assertEquals(List.of(), report.lazilyDetached);
        assertEquals(List.of("stage ext-vol1", "publish w1", "publish r1", "unpublish w1"), plugin.calls);
        assertEquals(List.of(), detached);
        VolumeRecord record = ops.record(VOL1).orElseThrow();
        assertEquals(Set.of("r1"), record.usages().keySet());
        assertEquals(StageState.STAGED, record.stage());
        assertTrue(plugin.mounted.contains(paths.stagingPath("ns", "vol1").toString()));
    }

    /**
     * The only user fenced: unpublish and unstage; a busy target (the plugin's unpublish fails) is detached lazily
     * and still leaves the record, so neither a restart nor the healer publishes it again.
     */
    @Test
    void aBusyTargetIsDetachedLazilyAndTheStagingUnstagedAndARestartPublishesNothing() throws Exception {
        VolumeOperations ops = operations(plugin, true);
        assertTrue(ops.execute(mount("w1", false).withFencing(1L, 1L, true)).succeeded());
        plugin.failNextUnpublish = new PluginCallFailure("INTERNAL", "umount: target is busy", false);
        List<String> detached = new ArrayList<>();
        io.csiorchestrator.worker.lease.FenceReport report = ops.fence(VOL1, lazy(detached, null));
        assertEquals(List.of("ns/vol1/w1"), report.lazilyDetached);
        assertEquals(List.of(paths.targetPath("w1", "ns", "vol1").toString()), detached);
        assertTrue(report.problems.get(0).contains("target is busy"), report.problems.toString());
        assertEquals(List.of("stage ext-vol1", "publish w1", "unpublish w1", "unstage ext-vol1"), plugin.calls);
        VolumeOperations restarted = operations(plugin, true);
        restarted.load();
        VolumeRecord record = restarted.record(VOL1).orElseThrow();
        assertTrue(record.usages().isEmpty());
        assertEquals(StageState.UNSTAGED, record.stage());
        assertTrue(restarted.restore(VOL1).nothingToDo());
        assertEquals(1, plugin.count("publish"));
    }

    /**
     * Without the plugin the fence detaches target and staging lazily; a detach that fails leaves the publication
     * recorded as being released (UNPUBLISHING): a restart finishes the release through the plugin, never publishes.
     */
    @Test
    void withoutThePluginPathsAreDetachedLazilyAndOneThatCannotBeStaysReleasing() throws Exception {
        assertTrue(operations(plugin, true).execute(mount("w1", false).withFencing(1L, 1L, true)).succeeded());
        VolumeOperations down = operations(plugin, false);
        down.load();
        List<String> detached = new ArrayList<>();
        io.csiorchestrator.worker.lease.FenceReport report = down.fence(VOL1, lazy(detached, "EBUSY"));
        assertEquals(List.of("ns/vol1/w1"), report.failed);
        assertEquals(List.of(paths.targetPath("w1", "ns", "vol1").toString()), detached, "the staging waits for it");
        assertEquals(PublishState.UNPUBLISHING, down.record(VOL1).orElseThrow().usage("w1").orElseThrow().state());

        VolumeOperations restarted = operations(plugin, true);
        restarted.load();
        restarted.restore(VOL1);
        assertEquals(List.of("stage ext-vol1", "publish w1", "unpublish w1", "unstage ext-vol1"), plugin.calls);
        assertTrue(restarted.record(VOL1).orElseThrow().usages().isEmpty());

        assertTrue(operations(plugin, true).execute(mount("w2", false).withFencing(1L, 1L, true)).succeeded());
        VolumeOperations noPlugin = operations(plugin, false);
        noPlugin.load();
        detached.clear();
        report = noPlugin.fence(VOL1, lazy(detached, null));
        assertEquals(List.of("ns/vol1/w2"), report.lazilyDetached);
        assertEquals(List.of(paths.targetPath("w2", "ns", "vol1").toString(), paths.stagingPath("ns", "vol1").toString()),
                detached);
        assertEquals(StageState.UNSTAGED, noPlugin.record(VOL1).orElseThrow().stage());
    }

    /**
     * With fencing on, the healer (and the restore) publish a publication fenced on a lapse only while the lease is
     * valid: after a freeze or before the first grant a lost fenced target stays unmounted, a reader is healed.
     */
    @Test
    void aLostFencedPublicationIsPublishedAgainOnlyWithAValidLease() {
        VolumeOperations ops = operations(plugin, true);
        boolean[] valid = {false};
        ops.publishFencedOnlyWhile(() -> valid[0]);
        assertTrue(ops.execute(mount("w1", false).withFencing(1L, 1L, true)).succeeded());
        assertTrue(ops.execute(mount("r1", true)).succeeded());
        plugin.mounted.remove(paths.targetPath("w1", "ns", "vol1").toString());
        plugin.mounted.remove(paths.targetPath("r1", "ns", "vol1").toString());
        ops.healDamaged(VOL1);
        assertEquals(List.of("stage ext-vol1", "publish w1", "publish r1", "publish r1"), plugin.calls);
        assertTrue(ops.restore(VOL1).nothingToDo(), "the restore leaves the fenced target too");
        valid[0] = true;
        ops.healDamaged(VOL1);
        assertEquals(List.of("stage ext-vol1", "publish w1", "publish r1", "publish r1", "publish w1"), plugin.calls);
    }
}
