package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.csi.CsiClientOptions;
import io.csiorchestrator.csi.CsiPluginClient;
import io.csiorchestrator.csi.v1.ListSnapshotsRequest;
import io.csiorchestrator.csi.v1.ListVolumesRequest;
import io.csiorchestrator.csi.v1.ListVolumesResponse;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Issue 14: volumes created and deleted through the services, across separate processes (Kafka, PostgreSQL,
 * claim-service, plugin-registry-service, the hostpath plugin of node-1 with its controller, node-1's worker, real
 * bind mounts). The plugin's volumes are read with CSI ListVolumes; faults are injected through its faults file.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(SharedSystem.Shared.class)
@Order(2)
class ProvisioningIT {

    private static final Duration START = Duration.ofSeconds(180);
    private static final String NS = "default";
    private static final String NODE = "node-1";

    private Cluster cluster;
    private Http claims;
    private ClaimClient client;

    @BeforeAll
    void up(SharedSystem system) {
        // the system these ITs share (SharedSystem.Shape.ONE_NODE): started by the first of them, stopped after the last
        cluster = system.cluster();
        claims = system.claims();
        client = system.client();
    }

    private Http.Response create(String id, String capacity) throws Exception {
        return claims.post("/v1/provisioned-volumes", Http.MAPPER.writeValueAsString(Map.of("id", id, "namespace", NS,
                "pluginId", Cluster.PLUGIN_ID, "accessMode", AccessMode.SINGLE_NODE_WRITER.wire(),
                "attachmentMode", AttachmentMode.FILE_SYSTEM.wire(), "capacityMin", capacity)));
    }

    /** Waits until the provision of {@code id} leaves {@code phase}; returns it. */
    private JsonNode awaitPast(String id, String phase) {
        return Wait.until("volume " + id + " past " + phase, START, null, () -> {
            Http.Response r = claims.get("/v1/provisioned-volumes/" + NS + "/" + id);
            return r.ok() && !r.body().path("phase").asText().equals(phase) ? Optional.of(r.body()) : Optional.empty();
        });
    }

    private void awaitGone(String id) {
        Wait.until("volume " + id + " deleted and deregistered", START, null, () ->
                claims.get("/v1/provisioned-volumes/" + NS + "/" + id).status() == 404
                        && claims.get("/v1/volumes/" + NS + "/" + id).status() == 404 ? Optional.of(true) : Optional.empty());
    }

    private Set<String> pluginVolumes() {
        try (CsiPluginClient plugin = CsiPluginClient.connect(cluster.pluginSocket(NODE), CsiClientOptions.defaults())
                .await().atMost(Duration.ofSeconds(30))) {
            Set<String> ids = new TreeSet<>();
            String token = "";
            do {
                ListVolumesResponse page = plugin.listVolumes(ListVolumesRequest.newBuilder().setStartingToken(token).build())
                        .await().atMost(Duration.ofSeconds(30));
                page.getEntriesList().forEach(e -> ids.add(e.getVolume().getVolumeId()));
                token = page.getNextToken();
            } while (!token.isEmpty());
            return ids;
        }
    }

    /** Replaces the plugin's fault rules, atomically (the plugin re-reads the file on every call). */
    private void faults(String... rules) throws java.io.IOException {
        Path file = cluster.nodeDir(NODE).resolve("hostpath-state").resolve("faults");
        Path tmp = file.resolveSibling("faults.tmp");
        Files.writeString(tmp, String.join("\n", rules) + "\n");
        Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }

    /**
     * create (1MiB) through claim-service → the plugin's controller on node-1 created it (ListVolumes lists the
     * registered externalId, capacity at least 1MiB) and it is registered → a write claim on node-1 is READY and
     * takes a file → release → delete → the plugin lists it no more and it is deregistered; every volume the plugin
     * lists at the end it listed at the start (no leak).
     */
    @Test
    void aVolumeIsCreatedClaimedReleasedAndDeletedThroughTheServices() throws Exception {
        Set<String> before = pluginVolumes();
        assertEquals(202, create("pv-flow", "1MiB").status());
        JsonNode created = awaitPast("pv-flow", "creating");
        assertEquals("created", created.path("phase").asText(), created.toString());
        String externalId = created.path("externalId").asText();
        assertTrue(created.path("capacityBytes").asLong() >= 1 << 20, created.toString());
        assertTrue(pluginVolumes().contains(externalId), pluginVolumes() + " lacks " + externalId);
        assertEquals(externalId, claims.get("/v1/volumes/" + NS + "/pv-flow").body().path("externalId").asText());

        ClaimClient.Outcome ready = client.request(ClaimClient.claim(NS, "pv-flow", "alloc-w", NODE, ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM), START, s -> { });
        assertTrue(ready.is(ClaimState.READY), ready.describe());
        Path hostPath = Path.of(ready.last().hostPath());
        Files.writeString(hostPath.resolve("data.txt"), "written through a created volume");
        assertEquals(409, claims.delete("/v1/provisioned-volumes/" + NS + "/pv-flow").status());
        ClaimClient.Outcome released = client.request(ClaimClient.release(NS, "pv-flow", "alloc-w"), START, s -> { });
        assertTrue(released.is(ClaimState.RELEASED), released.describe());

        assertEquals(202, claims.delete("/v1/provisioned-volumes/" + NS + "/pv-flow").status());
        awaitGone("pv-flow");
        assertEquals(before, pluginVolumes());
    }

    /**
     * The plugin's faults through the whole chain: ABORTED on every attempt the worker's CSI client makes (3) reaches
     * claim-service, which sends CreateVolume again with the same name after its backoff: the volume is created once
     * (one new id in ListVolumes). INVALID_ARGUMENT fails the create with the plugin's message and leaves nothing in
     * the plugin; its record is then deleted. After deleting the first, the plugin lists what it listed at the start.
     */
    @Test
    void pluginFaultsGiveTheCsiRetryOrAClearErrorAndLeakNothing() throws Exception {
        Set<String> before = pluginVolumes();
        faults("CreateVolume ABORTED 3 an operation on this volume is pending");
        assertEquals(202, create("pv-aborted", "1MiB").status());
        JsonNode created = awaitPast("pv-aborted", "creating");
        assertEquals("created", created.path("phase").asText(), created.toString());
        assertTrue(created.path("attempt").asInt() >= 2, created.toString());
        List<String> added = new ArrayList<>(pluginVolumes());
        added.removeAll(before);
        assertEquals(List.of(created.path("externalId").asText()), added);

        faults("CreateVolume INVALID_ARGUMENT 1 parameter 'tier' is not known");
        assertEquals(202, create("pv-invalid", "1MiB").status());
        JsonNode failed = awaitPast("pv-invalid", "creating");
        assertEquals("create-failed", failed.path("phase").asText(), failed.toString());
        String lastError = failed.path("lastError").asText();
        assertTrue(lastError.contains("INVALID_ARGUMENT") && lastError.contains("plugin says: parameter 'tier' is not known"),
                failed.toString());
        assertEquals(404, claims.get("/v1/volumes/" + NS + "/pv-invalid").status());
        assertEquals(202, claims.delete("/v1/provisioned-volumes/" + NS + "/pv-invalid").status());
        awaitGone("pv-invalid");

        assertEquals(202, claims.delete("/v1/provisioned-volumes/" + NS + "/pv-aborted").status());
        awaitGone("pv-aborted");
        assertEquals(before, pluginVolumes());
    }

    /**
     * Issue 14 item 1, adoption by name against the real plugin: the plugin holds volume {@code default.pv-adopt} that
     * claim-service's failed record never learnt of (its create answered INVALID_ARGUMENT, injected; then the volume is
     * made on the plugin's socket with the same CSI name and spec, as an attempt whose answer was lost would have made
     * it). Deleting the failed record finds the volume by name (CreateVolume again gives the same id) and deletes it
     * with DeleteVolume: the plugin lists what it listed at the start, and nothing was ever registered.
     */
    @Test
    void theDeleteOfAFailedCreateFindsTheVolumeALostAttemptMadeAndDeletesIt() throws Exception {
        Set<String> before = pluginVolumes();
        faults("CreateVolume INVALID_ARGUMENT 1 injected: this attempt's answer stands for a lost one");
        assertEquals(202, create("pv-adopt", "1MiB").status());
        JsonNode failed = awaitPast("pv-adopt", "creating");
        assertEquals("create-failed", failed.path("phase").asText(), failed.toString());
        String made;
        try (CsiPluginClient plugin = CsiPluginClient.connect(cluster.pluginSocket(NODE), CsiClientOptions.defaults())
                .await().atMost(Duration.ofSeconds(30))) {
            made = plugin.createVolume(io.csiorchestrator.csi.v1.CreateVolumeRequest.newBuilder().setName(NS + ".pv-adopt")
                    .setCapacityRange(io.csiorchestrator.csi.v1.CapacityRange.newBuilder().setRequiredBytes(1 << 20))
                    .addVolumeCapabilities(io.csiorchestrator.csi.v1.VolumeCapability.newBuilder()
                            .setMount(io.csiorchestrator.csi.v1.VolumeCapability.MountVolume.getDefaultInstance())
                            .setAccessMode(io.csiorchestrator.csi.v1.VolumeCapability.AccessMode.newBuilder()
                                    .setMode(io.csiorchestrator.csi.v1.VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)))
                    .build()).await().atMost(Duration.ofSeconds(30)).getVolume().getVolumeId();
        }
        assertTrue(pluginVolumes().contains(made), pluginVolumes() + " lacks " + made);

        assertEquals(202, claims.delete("/v1/provisioned-volumes/" + NS + "/pv-adopt").status());
        awaitGone("pv-adopt");
        assertEquals(before, pluginVolumes(), "the volume " + made + " was left in the plugin");
    }

    private Set<String> pluginSnapshots() {
        try (CsiPluginClient plugin = CsiPluginClient.connect(cluster.pluginSocket(NODE), CsiClientOptions.defaults())
                .await().atMost(Duration.ofSeconds(30))) {
            Set<String> ids = new TreeSet<>();
            plugin.listSnapshots(ListSnapshotsRequest.getDefaultInstance()).await().atMost(Duration.ofSeconds(30))
                    .getEntriesList().forEach(e -> ids.add(e.getSnapshot().getSnapshotId()));
            return ids;
        }
    }

    /** Writes {@code text} to data.txt through a write claim of {@code id} on node-1 (or reads it when null); releases. */
    private String throughAClaim(String id, String allocation, String text) throws Exception {
        ClaimClient.Outcome ready = client.request(ClaimClient.claim(NS, id, allocation, NODE, ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM), START, s -> { });
        assertTrue(ready.is(ClaimState.READY), ready.describe());
        Path data = Path.of(ready.last().hostPath()).resolve("data.txt");
        String read = null;
        if (text != null) {
            Files.writeString(data, text);
        } else {
            read = Files.readString(data);
        }
        ClaimClient.Outcome released = client.request(ClaimClient.release(NS, id, allocation), START, s -> { });
        assertTrue(released.is(ClaimState.RELEASED), released.describe());
        return read;
    }

    /** What a {@code ./csi} command run in this JVM answered. */
    private record CsiRun(int code, String out, String err) {
    }

    /** A {@code ./csi} command run in this JVM against the cluster's claim-service; asserts exit 0, returns stdout. */
    private String csi(String... command) throws java.io.IOException {
        CsiRun run = csiRun(command);
        assertEquals(0, run.code(), String.join(" ", command) + ": " + run.err());
        return run.out();
    }

    /** A {@code ./csi} command run in this JVM against the cluster's claim-service, whatever its exit code. */
    private CsiRun csiRun(String... command) throws java.io.IOException {
        Path token = cluster.workDir().resolve("snapshots-it.token");
        Files.writeString(token, cluster.adminToken());
        List<String> argv = new ArrayList<>(List.of(command));
        argv.addAll(List.of("--claims-url", cluster.claimsUrl(), "--token-file", token.toString()));
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        int code = Main.run(argv.toArray(String[]::new), new java.io.PrintStream(out, true, java.nio.charset.StandardCharsets.UTF_8),
                new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
        return new CsiRun(code, out.toString(java.nio.charset.StandardCharsets.UTF_8),
                err.toString(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** How many calls of {@code method} the plugin of node-1 answered (its calls.log). */
    private long pluginCalls(String method) throws java.io.IOException {
        Path log = cluster.nodeDir(NODE).resolve("hostpath-state").resolve("calls.log");
        if (!Files.exists(log)) {
            return 0;
        }
        try (java.util.stream.Stream<String> lines = Files.lines(log)) {
            return lines.filter(line -> line.startsWith(method + " ")).count();
        }
    }

    /** The capacity the plugin's ListVolumes reports for {@code externalId}; -1 when it does not list it. */
    private long pluginCapacity(String externalId) {
        try (CsiPluginClient plugin = CsiPluginClient.connect(cluster.pluginSocket(NODE), CsiClientOptions.defaults())
                .await().atMost(Duration.ofSeconds(30))) {
            return plugin.listVolumes(ListVolumesRequest.getDefaultInstance()).await().atMost(Duration.ofSeconds(30))
                    .getEntriesList().stream().filter(e -> e.getVolume().getVolumeId().equals(externalId))
                    .mapToLong(e -> e.getVolume().getCapacityBytes()).findFirst().orElse(-1);
        }
    }

    /** The total bytes the plugin's NodeGetVolumeStats reports for {@code externalId} published at {@code path}. */
    private long nodeReportedBytes(String externalId, Path path) {
        try (CsiPluginClient plugin = CsiPluginClient.connect(cluster.pluginSocket(NODE), CsiClientOptions.defaults())
                .await().atMost(Duration.ofSeconds(30))) {
            return plugin.nodeGetVolumeStats(io.csiorchestrator.csi.v1.NodeGetVolumeStatsRequest.newBuilder()
                    .setVolumeId(externalId).setVolumePath(path.toString()).build()).await().atMost(Duration.ofSeconds(30))
                    .getUsageList().stream().filter(u -> u.getUnit() == io.csiorchestrator.csi.v1.VolumeUsage.Unit.BYTES)
                    .mapToLong(io.csiorchestrator.csi.v1.VolumeUsage::getTotal).findFirst().orElse(-1);
        }
    }

    /**
     * Issue 14 item 3 through the whole chain, expand while published: a created volume is claimed for writing on
     * node-1 and takes a file; {@code ./csi volume expand --capacity 2MiB} (ControllerExpandVolume failing UNAVAILABLE on
     * every attempt of the worker's CSI client first: claim-service sends it again) prints the new capacity; the plugin
     * lists the volume with 2MiB and NodeGetVolumeStats at the claim's target path reports 2MiB (NodeExpandVolume ran
     * there); the claim stays: the file reads back and a new one is written. NodeExpandVolume failing
     * FAILED_PRECONDITION once makes {@code volume expand --capacity 3MiB} exit 1 naming the node, the code, the
     * plugin's message and "not retried", after exactly one NodeExpandVolume call; the same command again, without the
     * fault, expands to 3MiB. Resize on mount (issue 14): released, the volume is expanded to 4MiB (ControllerExpandVolume
     * only: published nowhere, so node-1 keeps its 3MiB file system); claimed again on node-1, claim-service sends node-1
     * NodeExpandVolume once the claim is ready: the plugin reports 4MiB at the new target, the provisioned view records
     * node-1 at 4MiB, the files are there. Release and delete leave the plugin's volumes as they were.
     */
    @Test
    void aVolumeIsExpandedWhilePublishedAndANodeExpandFailedPreconditionIsAClearErrorNotRetried() throws Exception {
        Set<String> before = pluginVolumes();
        assertEquals(202, create("pv-expand", "1MiB").status());
        JsonNode created = awaitPast("pv-expand", "creating");
        assertEquals("created", created.path("phase").asText(), created.toString());
        String externalId = created.path("externalId").asText();
        ClaimClient.Outcome ready = client.request(ClaimClient.claim(NS, "pv-expand", "alloc-exp", NODE, ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM), START, s -> { });
        assertTrue(ready.is(ClaimState.READY), ready.describe());
        Path hostPath = Path.of(ready.last().hostPath());
        Files.writeString(hostPath.resolve("data.txt"), "written before the expansion");
        assertEquals(1L << 20, nodeReportedBytes(externalId, hostPath));

        long controllerCalls = pluginCalls("ControllerExpandVolume");
        faults("ControllerExpandVolume UNAVAILABLE 3 the controller is restarting");
        String expanded = csi("volume", "expand", "pv-expand", "--capacity", "2MiB");
        assertTrue(expanded.contains("expanded volume default/pv-expand to 2097152 bytes"), expanded);
        assertTrue(pluginCalls("ControllerExpandVolume") >= controllerCalls + 4,
                "3 failed attempts of the worker's client, then claim-service's retry");
        assertEquals(2L << 20, pluginCapacity(externalId));
        assertEquals(2L << 20, nodeReportedBytes(externalId, hostPath), "NodeExpandVolume ran at the published path");
        assertEquals("written before the expansion", Files.readString(hostPath.resolve("data.txt")));
        Files.writeString(hostPath.resolve("after.txt"), "written after the expansion");
        assertEquals("written after the expansion", Files.readString(hostPath.resolve("after.txt")));

        long nodeCalls = pluginCalls("NodeExpandVolume");
        faults("NodeExpandVolume FAILED_PRECONDITION 1 the file system is busy");
        CsiRun refused = csiRun("volume", "expand", "pv-expand", "--capacity", "3MiB");
        assertEquals(1, refused.code(), refused.out() + refused.err());
        assertTrue(refused.err().contains("not expanded: NodeExpandVolume on node node-1 failed with FAILED_PRECONDITION")
                && refused.err().contains("the file system is busy") && refused.err().contains("not retried"), refused.err());
        assertEquals(nodeCalls + 1, pluginCalls("NodeExpandVolume"), "FAILED_PRECONDITION from NodeExpandVolume is never retried");
        assertEquals("expand-failed", claims.get("/v1/provisioned-volumes/" + NS + "/pv-expand").body().path("phase").asText());
        assertEquals("written before the expansion", Files.readString(hostPath.resolve("data.txt")), "the claim still works");

        faults();
        assertTrue(csi("volume", "expand", "pv-expand", "--capacity", "3MiB").contains("to 3145728 bytes"));
        assertEquals(3L << 20, nodeReportedBytes(externalId, hostPath));
        ClaimClient.Outcome released = client.request(ClaimClient.release(NS, "pv-expand", "alloc-exp"), START, s -> { });
        assertTrue(released.is(ClaimState.RELEASED), released.describe());

        assertTrue(csi("volume", "expand", "pv-expand", "--capacity", "4MiB").contains("to 4194304 bytes"));
        ClaimClient.Outcome again = client.request(ClaimClient.claim(NS, "pv-expand", "alloc-exp2", NODE, ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM), START, s -> { });
        assertTrue(again.is(ClaimState.READY), again.describe());
        Path target = Path.of(again.last().hostPath());
        Wait.until("NodeExpandVolume of the claim mounted after the expansion (resize on mount)", START, null, () ->
                nodeReportedBytes(externalId, target) == 4L << 20 ? Optional.of(true) : Optional.empty());
        assertEquals(4L << 20, claims.get("/v1/provisioned-volumes/" + NS + "/pv-expand").body()
                .path("nodeExpandedBytes").path(NODE).asLong());
        assertEquals("written after the expansion", Files.readString(target.resolve("after.txt")));
        released = client.request(ClaimClient.release(NS, "pv-expand", "alloc-exp2"), START, s -> { });
        assertTrue(released.is(ClaimState.RELEASED), released.describe());
        assertEquals(202, claims.delete("/v1/provisioned-volumes/" + NS + "/pv-expand").status());
        awaitGone("pv-expand");
        assertEquals(before, pluginVolumes());
    }

    /**
     * Issue 14 item 2 through the whole chain: create a volume, write a file through a claim, snapshot it with
     * {@code ./csi volume snapshot create} (it prints the plugin's snapshot id once created; the plugin lists it;
     * {@code volume snapshot list} shows it created), restore it into a new volume (source snapshot)
     * and read the same file through a claim of the restored volume; then delete the restored volume, the snapshot
     * ({@code ./csi volume snapshot delete}) and the source: the plugin lists the volumes and snapshots it listed at the start.
     */
    @Test
    void aSnapshotIsRestoredIntoANewVolumeWithTheSameDataAndAllIsDeleted() throws Exception {
        Set<String> volumesBefore = pluginVolumes();
        Set<String> snapshotsBefore = pluginSnapshots();
        assertEquals(202, create("pv-snap-src", "1MiB").status());
        assertEquals("created", awaitPast("pv-snap-src", "creating").path("phase").asText());
        throughAClaim("pv-snap-src", "alloc-snap-w", "the data the snapshot keeps");

        String made = csi("volume", "snapshot", "create", "snap-1", "--volume", "pv-snap-src");
        JsonNode snapshot = claims.get("/v1/snapshots/" + NS + "/snap-1").body();
        assertEquals("created", snapshot.path("phase").asText(), snapshot.toString());
        String snapshotId = snapshot.path("externalId").asText();
        assertTrue(made.contains("created snapshot default/snap-1 of volume pv-snap-src: externalId " + snapshotId), made);
        assertTrue(pluginSnapshots().contains(snapshotId), pluginSnapshots().toString());
        assertTrue(csi("volume", "snapshot", "list").contains("snap-1  volume=pv-snap-src  phase=created"));

        Map<String, Object> restore = new java.util.LinkedHashMap<>(Map.of("id", "pv-restored", "namespace", NS,
                "pluginId", Cluster.PLUGIN_ID, "accessMode", AccessMode.SINGLE_NODE_WRITER.wire(),
                "attachmentMode", AttachmentMode.FILE_SYSTEM.wire(), "capacityMin", "1MiB"));
        restore.put("source", Map.of("snapshot", "snap-1"));
        assertEquals(202, claims.post("/v1/provisioned-volumes", Http.MAPPER.writeValueAsString(restore)).status());
        JsonNode restored = awaitPast("pv-restored", "creating");
        assertEquals("created", restored.path("phase").asText(), restored.toString());
        assertEquals("the data the snapshot keeps", throughAClaim("pv-restored", "alloc-snap-r", null));

        assertEquals(202, claims.delete("/v1/provisioned-volumes/" + NS + "/pv-restored").status());
        awaitGone("pv-restored");
        assertTrue(csi("volume", "snapshot", "delete", "snap-1").contains("deleted snapshot default/snap-1"));
        assertEquals(404, claims.get("/v1/snapshots/" + NS + "/snap-1").status());
        assertEquals(202, claims.delete("/v1/provisioned-volumes/" + NS + "/pv-snap-src").status());
        awaitGone("pv-snap-src");
        assertEquals(volumesBefore, pluginVolumes());
        assertEquals(snapshotsBefore, pluginSnapshots());
    }
}
