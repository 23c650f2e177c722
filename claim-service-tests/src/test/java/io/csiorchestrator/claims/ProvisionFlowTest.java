package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.ProvisionedVolume;
import io.csiorchestrator.events.VolumeState;
import io.csiorchestrator.events.VolumeStatus;
import io.restassured.http.ContentType;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Volumes created and deleted through claim-service (issue 14) end to end through Kafka and PostgreSQL; the test
 * answers the create-volume / delete-volume commands as the controller node's worker would (the worker's side
 * with the real plugin is NodeMountWorkerTest's, the whole chain cli's ProvisioningIT).
 */
@QuarkusTest
class ProvisionFlowTest {

    final Bus bus = new Bus();

    @jakarta.inject.Inject
    io.csiorchestrator.claims.provision.VolumeListings listings;

    @AfterEach
    void close() {
        bus.close();
    }

    private static String unique(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    private static Map<String, Object> createBody(String ns, String vol, String plugin, Object capacityMin) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("id", vol);
        body.put("namespace", ns);
        body.put("pluginId", plugin);
        body.put("accessMode", "single-node-writer");
        body.put("attachmentMode", "file-system");
        body.put("mountOptions", Map.of("fsType", "ext4"));
        body.put("parameters", Map.of("tier", "fast"));
        body.put("secrets", Map.of("password", "s3cret-value"));
        body.put("capacityMin", capacityMin);
        return body;
    }

    private static void answerCreated(Bus bus, NodeCommand c, String externalId) {
        bus.send(new MountDone(c.commandId(), c.nodeId(), c.kind(), c.namespace(), c.volumeId(), null, true, null, null,
                Map.of(), null, null, Instant.now(), null, null,
                new ProvisionedVolume(externalId, 1L << 30, Map.of("created-by", "test"), List.of())));
    }

    /**
     * Create: 202 "creating"; the create-volume command goes to the plugin's healthy controller node with the CSI
     * name namespace.id, the capacity asked (1GiB = 2^30 bytes), the parameters and the secrets sealed (never in
     * plain text on the topic); nothing is registered before the answer. The plugin's answer registers the volume
     * with its id and context (schedulable); the same request again answers 200 with the same state, another
     * capacity 409. A delete while claimed is 409 naming the allocation; after the release it sends delete-volume
     * with the plugin's id to the controller node and new claims are rejected; its answer deregisters the volume.
     * Schedulers read each result on volume-status, keyed ns1/volume: created (the plugin's id and capacity), then
     * deleted, in that order, and nothing else; no secret is in them.
     */
    @Test
    void aVolumeCreatedThroughTheServiceIsRegisteredClaimedReleasedAndDeleted() {
        String plugin = unique("prov");
        String vol = unique("pv");
        bus.plugin(plugin, false, List.of("node-ctl"), List.of("node-a"));
        awaitPluginKnown(plugin);

        given().contentType(ContentType.JSON).body(createBody("ns1", vol, plugin, "1GiB")).post("/v1/provisioned-volumes")
                .then().statusCode(202).body("phase", equalTo("creating")).body("csiName", equalTo("ns1." + vol));
        NodeCommand create = bus.awaitCommand(vol, NodeCommandKind.CREATE_VOLUME);
        assertEquals("node-ctl", create.nodeId());
        assertEquals("ns1." + vol, create.provision().name());
        assertEquals(1L << 30, create.provision().capacityMinBytes());
        assertEquals(Map.of("tier", "fast"), create.provision().parameters());
        assertNull(create.externalVolumeId());
        assertTrue(create.sealed() != null && !EventCodec.encodeToString(create).contains("s3cret-value"),
                "the secrets travel sealed only");
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(404);

        assertEquals(List.of(), bus.volumeResults("ns1", vol), "no result before the plugin's answer");
        answerCreated(bus, create, "ext-" + vol);
        VolumeStatus created = bus.awaitVolumeResult("ns1", vol, null, VolumeState.CREATED);
        // read again now that the answer's result is on volume-status (the outbox publishes in commit order): a result
        // sent before the plugin's answer, but published after the read above, would be here before it
        assertEquals(List.of(created), bus.volumeResults("ns1", vol), "no result before the plugin's answer, only its own");
        assertEquals("ext-" + vol, created.externalId());
        assertEquals(1L << 30, created.capacityBytes());
        assertEquals(plugin, created.pluginId());
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("externalId", equalTo("ext-" + vol))
                .body("context.created-by", equalTo("test")).body("secrets.password", equalTo("[redacted]"));
        given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("created"))
                .body("capacityBytes", equalTo(1 << 30));
        given().contentType(ContentType.JSON).body(createBody("ns1", vol, plugin, "1GiB")).post("/v1/provisioned-volumes")
                .then().statusCode(200).body("phase", equalTo("created"));
        given().contentType(ContentType.JSON).body(createBody("ns1", vol, plugin, "2GiB")).post("/v1/provisioned-volumes")
                .then().statusCode(409).body("problems[0].message", containsString("another spec"));

        ClaimRequested write = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(write.requestId(), ClaimState.READY);
        given().delete("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(409)
                .body("problems[0].message", containsString("alloc-1"));
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT));
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);

        given().delete("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(202).body("phase", equalTo("deleting"));
        NodeCommand delete = bus.awaitCommand(vol, NodeCommandKind.DELETE_VOLUME);
        assertEquals("node-ctl", delete.nodeId());
        assertEquals("ext-" + vol, delete.externalVolumeId());
        ClaimRequested late = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(late);
        bus.awaitStatus(late.requestId(), ClaimState.REJECTED);

        bus.succeed(delete);
        bus.awaitVolumeResult("ns1", vol, null, VolumeState.DELETED);
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/volumes/ns1/" + vol).then().statusCode(404));
        given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(404);
        List<VolumeStatus> results = bus.volumeResults("ns1", vol);
        assertEquals(List.of(VolumeState.CREATED, VolumeState.DELETED), results.stream().map(VolumeStatus::state).toList());
        assertFalse(results.toString().contains("s3cret-value"));
    }

    /**
     * The CSI error table through the service: ABORTED is retried after the backoff with the same CSI name (a new
     * command id), INVALID_ARGUMENT fails the create with the plugin's message and registers nothing; the failed
     * record's delete then finds the volume by name (FINDING: CreateVolume again with the same CSI name, in case an
     * earlier attempt made it); the plugin answers with a volume, which is deleted by its id (adopted, not leaked).
     * A delete answered UNAVAILABLE is retried; NOT_FOUND (the worker's success) deregisters. volume-status tells
     * schedulers create-failed with the plugin's code and message (not the retried ABORTED), then deleted.
     */
    @Test
    void retryableErrorsAreRetriedWithTheSameNameAndFatalOnesFailWithThePluginsMessage() {
        String plugin = unique("prov");
        String vol = unique("pv");
        bus.plugin(plugin, false, List.of("node-ctl"), List.of("node-a"));
        awaitPluginKnown(plugin);

        given().contentType(ContentType.JSON).body(createBody("ns1", vol, plugin, 1048576)).post("/v1/provisioned-volumes")
                .then().statusCode(202);
        NodeCommand first = bus.awaitCommand(vol, NodeCommandKind.CREATE_VOLUME);
        bus.fail(first, "ABORTED", "an operation on ns1." + vol + " is pending");
        NodeCommand second = bus.awaitCommand(vol, NodeCommandKind.CREATE_VOLUME);
        assertNotEquals(first.commandId(), second.commandId());
        assertEquals(first.provision().name(), second.provision().name());
        bus.fail(second, "INVALID_ARGUMENT", "parameter 'tier' is unknown");
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("create-failed"))
                        .body("lastError", containsString("INVALID_ARGUMENT: parameter 'tier' is unknown")));
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(404);
        VolumeStatus failed = bus.awaitVolumeResult("ns1", vol, null, VolumeState.CREATE_FAILED);
        assertTrue(failed.reason().contains("INVALID_ARGUMENT: parameter 'tier' is unknown"), failed.reason());
        assertNull(failed.externalId());
        given().delete("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(202).body("phase", equalTo("finding"));
        NodeCommand find = bus.awaitCommand(vol, NodeCommandKind.CREATE_VOLUME);
        assertEquals(first.provision().name(), find.provision().name());
        answerCreated(bus, find, "ext-made-by-an-earlier-attempt");
        NodeCommand adopted = bus.awaitCommand(vol, NodeCommandKind.DELETE_VOLUME);
        assertEquals("ext-made-by-an-earlier-attempt", adopted.externalVolumeId());
        given().get("/v1/volumes/ns1/" + vol).then().statusCode(404);
        bus.succeed(adopted);
        bus.awaitVolumeResult("ns1", vol, null, VolumeState.DELETED);
        given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(404);
        assertEquals(List.of(VolumeState.CREATE_FAILED, VolumeState.DELETED),
                bus.volumeResults("ns1", vol).stream().map(VolumeStatus::state).toList());

        String other = unique("pv");
        given().contentType(ContentType.JSON).body(createBody("ns1", other, plugin, 1048576)).post("/v1/provisioned-volumes")
                .then().statusCode(202);
        answerCreated(bus, bus.awaitCommand(other, NodeCommandKind.CREATE_VOLUME), "ext-" + other);
        ClaimFlowTest.awaitSchedulable("ns1", other);
        given().delete("/v1/provisioned-volumes/ns1/" + other).then().statusCode(202);
        bus.fail(bus.awaitCommand(other, NodeCommandKind.DELETE_VOLUME), "UNAVAILABLE", "the plugin is restarting");
        NodeCommand retried = bus.awaitCommand(other, NodeCommandKind.DELETE_VOLUME);
        given().get("/v1/volumes/ns1/" + other).then().statusCode(200).body("deleting", equalTo(true));
        bus.succeed(retried);
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/volumes/ns1/" + other).then().statusCode(404));
        assertFalse(bus.commands(other).stream().anyMatch(c -> c.kind() == NodeCommandKind.MOUNT));
    }

    /**
     * Snapshots and restore (issue 14 item 2): POST /v1/snapshots of a created volume is 202 "creating" and sends
     * create-snapshot to the controller node with the volume's plugin id and the CSI name namespace.id;
     * SNAPSHOT_NOT_READY (not ready_to_use yet) re-sends it with the same name (a new command id); the ready answer
     * makes it "created" with the plugin's id, listed in the namespace; the same request again is 200, another source
     * 409. A volume created with source {"snapshot": id} carries the snapshot's plugin id as content source; while
     * that restore is creating, the snapshot's delete is 409 naming the volume; after it, the delete sends
     * delete-snapshot with the snapshot's plugin id and its answer forgets the snapshot. A restore from an unknown
     * snapshot is 409 and sends nothing. The snapshot's secrets travel sealed (bound to the source volume) on both
     * create-snapshot and delete-snapshot, and open to what was posted. volume-status carries the snapshot's results keyed by its source volume:
     * created (ready, with the plugin's id and size; not for the not-ready poll), then deleted.
     */
    @Test
    void aSnapshotIsPolledUntilReadyRestoredAndNotDeletedWhileARestoreIsInFlight() throws Exception {
        String plugin = unique("prov");
        String src = unique("pv");
        String snap = unique("snap");
        String restored = unique("pv");
        bus.plugin(plugin, false, List.of("node-ctl"), List.of("node-a"));
        awaitPluginKnown(plugin);
        given().contentType(ContentType.JSON).body(createBody("ns1", src, plugin, "1MiB")).post("/v1/provisioned-volumes")
                .then().statusCode(202);
        answerCreated(bus, bus.awaitCommand(src, NodeCommandKind.CREATE_VOLUME), "ext-" + src);
        ClaimFlowTest.awaitSchedulable("ns1", src);

        Map<String, Object> snapBody = Map.of("namespace", "ns1", "id", snap, "sourceVolume", src,
                "secrets", Map.of("snapshot-token", "snap-s3cret"));
        given().contentType(ContentType.JSON).body(snapBody).post("/v1/snapshots").then().statusCode(202)
                .body("phase", equalTo("creating")).body("csiName", equalTo("ns1." + snap));
        NodeCommand first = bus.awaitCommand(src, NodeCommandKind.CREATE_SNAPSHOT);
        assertEquals("node-ctl", first.nodeId());
        assertEquals("ext-" + src, first.externalVolumeId());
        assertEquals("ns1." + snap, first.provision().name());
        assertFalse(EventCodec.encodeToString(first).contains("snap-s3cret"), "the snapshot's secrets travel sealed only");
        assertEquals(Map.of("snapshot-token", "snap-s3cret"), opened(first, src).secrets());
        bus.fail(first, "SNAPSHOT_NOT_READY", "snapshot ext-snap is not ready to use yet");
        NodeCommand second = bus.awaitCommand(src, NodeCommandKind.CREATE_SNAPSHOT);
        assertNotEquals(first.commandId(), second.commandId());
        assertEquals(first.provision().name(), second.provision().name());
        bus.send(new MountDone(second.commandId(), second.nodeId(), second.kind(), second.namespace(), second.volumeId(),
                null, true, null, null, Map.of(), null, null, Instant.now(), null, null, null,
                new io.csiorchestrator.events.ProvisionedSnapshot("ext-" + snap, "ext-" + src, 1048576L, true)));
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/snapshots/ns1/" + snap).then().statusCode(200).body("phase", equalTo("created"))
                        .body("externalId", equalTo("ext-" + snap)).body("sourceVolume", equalTo(src)));
        VolumeStatus ready = bus.awaitVolumeResult("ns1", src, snap, VolumeState.CREATED);
        assertEquals("ext-" + snap, ready.externalId());
        assertEquals(1048576L, ready.capacityBytes());
        given().get("/v1/snapshots/ns1").then().statusCode(200).body("id", hasItem(snap));
        given().contentType(ContentType.JSON).body(snapBody).post("/v1/snapshots").then().statusCode(200)
                .body("phase", equalTo("created"));
        given().contentType(ContentType.JSON).body(Map.of("namespace", "ns1", "id", snap, "sourceVolume", restored))
                .post("/v1/snapshots").then().statusCode(409);

        Map<String, Object> restore = createBody("ns1", restored, plugin, "1MiB");
        restore.put("source", Map.of("snapshot", snap));
        given().contentType(ContentType.JSON).body(restore).post("/v1/provisioned-volumes").then().statusCode(202);
        NodeCommand create = bus.awaitCommand(restored, NodeCommandKind.CREATE_VOLUME);
        assertEquals("ext-" + snap, create.provision().sourceSnapshotId());
        given().delete("/v1/snapshots/ns1/" + snap).then().statusCode(409)
                .body("problems[0].message", containsString("ns1/" + restored));
        answerCreated(bus, create, "ext-" + restored);
        ClaimFlowTest.awaitSchedulable("ns1", restored);

        given().delete("/v1/snapshots/ns1/" + snap).then().statusCode(202).body("phase", equalTo("deleting"));
        NodeCommand delete = bus.awaitCommand(src, NodeCommandKind.DELETE_SNAPSHOT);
        assertEquals("ext-" + snap, delete.provision().sourceSnapshotId());
        assertEquals(Map.of("snapshot-token", "snap-s3cret"), opened(delete, src).secrets(), "DeleteSnapshot gets them too");
        bus.succeed(delete);
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/snapshots/ns1/" + snap).then().statusCode(404));
        bus.awaitVolumeResult("ns1", src, snap, VolumeState.DELETED);
        assertEquals(List.of("null created", snap + " created", snap + " deleted"), bus.volumeResults("ns1", src).stream()
                .map(r -> r.snapshotId() + " " + r.state().wire()).toList());

        String orphan = unique("pv");
        Map<String, Object> unknown = createBody("ns1", orphan, plugin, "1MiB");
        unknown.put("source", Map.of("snapshot", snap));
        given().contentType(ContentType.JSON).body(unknown).post("/v1/provisioned-volumes").then().statusCode(409)
                .body("problems[0].message", containsString("does not exist"));
        assertTrue(bus.commands(orphan).isEmpty());
    }

    /**
     * A clone: the create names a registered volume of the same namespace as its source; the create-volume command
     * carries that volume's plugin id as its content source, and a failed precondition (the source busy) is retried
     * for a create from a source. A source that is not registered is refused (409) and nothing is sent.
     */
    @Test
    void aCloneCarriesItsSourcesPluginIdAndAnUnknownSourceIsRefused() {
        String plugin = unique("prov");
        String src = unique("pv");
        String clone = unique("pv");
        bus.plugin(plugin, false, List.of("node-ctl"), List.of("node-a"));
        awaitPluginKnown(plugin);
        given().contentType(ContentType.JSON).body(createBody("ns1", src, plugin, "1MiB")).post("/v1/provisioned-volumes")
                .then().statusCode(202);
        answerCreated(bus, bus.awaitCommand(src, NodeCommandKind.CREATE_VOLUME), "ext-" + src);
        ClaimFlowTest.awaitSchedulable("ns1", src);

        Map<String, Object> body = createBody("ns1", clone, plugin, "1MiB");
        body.put("source", Map.of("volume", src));
        given().contentType(ContentType.JSON).body(body).post("/v1/provisioned-volumes").then().statusCode(202);
        NodeCommand first = bus.awaitCommand(clone, NodeCommandKind.CREATE_VOLUME);
        assertEquals("ext-" + src, first.provision().sourceVolumeId());
        bus.fail(first, "FAILED_PRECONDITION", "the source volume is being copied");
        NodeCommand second = bus.awaitCommand(clone, NodeCommandKind.CREATE_VOLUME);
        assertEquals("ext-" + src, second.provision().sourceVolumeId());
        answerCreated(bus, second, "ext-" + clone);
        ClaimFlowTest.awaitSchedulable("ns1", clone);

        String orphan = unique("pv");
        Map<String, Object> unknown = createBody("ns1", orphan, plugin, "1MiB");
        unknown.put("source", Map.of("volume", "no-such-volume"));
        given().contentType(ContentType.JSON).body(unknown).post("/v1/provisioned-volumes").then().statusCode(409)
                .body("problems[0].message", containsString("ns1/no-such-volume is not registered"));
        given().get("/v1/provisioned-volumes/ns1/" + orphan).then().statusCode(404);
    }

    /**
     * Expansion (issue 14 item 3) of a volume claimed on two nodes: a capacity below the volume's is 400 naming the
     * field and value, as is a volume of a plugin without EXPAND_VOLUME; 2GiB is 202 "expanding" and sends
     * controller-expand-volume with the plugin's id and the new capacity to the controller node; another expansion
     * meanwhile is 409. The controller's answer (node expansion required) records its capacity and sends
     * node-expand-volume to node-a, then (after an ABORTED retried to node-a) to node-b; FAILED_PRECONDITION from
     * node-b ends in "expand-failed" with the plugin's message and "not retried", no retry scheduled. The operator's
     * new request sends controller-expand again; answered without node expansion, the volume is "created" with the
     * new capacity (the same capacity again: 200), node-b got exactly one node-expand, and the claims were never
     * unmounted. Schedulers read each end on volume-status: expand-failed with the plugin's message, then expanded
     * with the plugin's id and the new capacity.
     */
    @Test
    void anExpansionRunsTheControllerThenEachClaimedNodeAndNeverRetriesANodesFailedPrecondition() {
        String plugin = unique("prov");
        String vol = unique("pv");
        bus.plugin(plugin, false, List.of("node-ctl"), List.of("node-a", "node-b"), true);
        awaitPluginKnown(plugin);
        Map<String, Object> body = createBody("ns1", vol, plugin, "1GiB");
        body.put("accessMode", "multi-node-multi-writer");
        given().contentType(ContentType.JSON).body(body).post("/v1/provisioned-volumes").then().statusCode(202);
        answerCreated(bus, bus.awaitCommand(vol, NodeCommandKind.CREATE_VOLUME), "ext-" + vol);
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        for (String node : List.of("node-b", "node-a")) {
            ClaimRequested write = Bus.claim("ns1", vol, "alloc-" + node, node, ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
            bus.send(write);
            bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
            bus.awaitStatus(write.requestId(), ClaimState.READY);
        }

        given().contentType(ContentType.JSON).body(Map.of("capacity", "512MiB")).post("/v1/provisioned-volumes/ns1/" + vol + "/expand")
                .then().statusCode(400).body("problems[0].field", equalTo("capacity"))
                .body("problems[0].value", equalTo("'536870912'")).body("problems[0].message", containsString("smaller"));
        given().contentType(ContentType.JSON).body(Map.of("capacity", "2GiB")).post("/v1/provisioned-volumes/ns1/" + vol + "/expand")
                .then().statusCode(202).body("phase", equalTo("expanding")).body("expandToBytes", equalTo(2L << 30));
        NodeCommand controller = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_EXPAND);
        assertEquals("node-ctl", controller.nodeId());
        assertEquals("ext-" + vol, controller.externalVolumeId());
        assertEquals(2L << 30, controller.provision().capacityMinBytes());
        given().contentType(ContentType.JSON).body(Map.of("capacity", "3GiB")).post("/v1/provisioned-volumes/ns1/" + vol + "/expand")
                .then().statusCode(409).body("problems[0].message", containsString("expanding"));
        bus.send(expandedAnswer(controller, 2L << 30, true));

        NodeCommand nodeA = bus.awaitCommand(vol, NodeCommandKind.NODE_EXPAND);
        assertEquals("node-a", nodeA.nodeId());
        assertEquals("ext-" + vol, nodeA.externalVolumeId());
        assertEquals(2L << 30, nodeA.provision().capacityMinBytes());
        given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("node-expanding"))
                .body("capacityBytes", equalTo(2L << 30)).body("expandNodes", equalTo(List.of("node-a", "node-b")));
        bus.fail(nodeA, "ABORTED", "an operation on the volume is pending");
        NodeCommand nodeAAgain = bus.awaitCommand(vol, NodeCommandKind.NODE_EXPAND);
        assertEquals("node-a", nodeAAgain.nodeId(), "the same node's call is retried");
        bus.send(expandedAnswer(nodeAAgain, 2L << 30, false));
        NodeCommand nodeB = bus.awaitCommand(vol, NodeCommandKind.NODE_EXPAND);
        assertEquals("node-b", nodeB.nodeId());
        bus.fail(nodeB, "FAILED_PRECONDITION", "the file system is busy");
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("expand-failed"))
                        .body("lastError", containsString("NodeExpandVolume on node node-b failed with FAILED_PRECONDITION: "
                                + "the file system is busy"))
                        .body("lastError", containsString("not retried")).body("retryAt", equalTo(null)));
        VolumeStatus failed = bus.awaitVolumeResult("ns1", vol, null, VolumeState.EXPAND_FAILED);
        assertTrue(failed.reason().contains("NodeExpandVolume on node node-b failed with FAILED_PRECONDITION: the file"
                + " system is busy"), failed.reason());

        given().contentType(ContentType.JSON).body(Map.of("capacity", 2L << 30)).post("/v1/provisioned-volumes/ns1/" + vol + "/expand")
                .then().statusCode(202).body("phase", equalTo("expanding"));
        NodeCommand again = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_EXPAND);
        bus.send(expandedAnswer(again, 2L << 30, false));
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("created"))
                        .body("capacityBytes", equalTo(2L << 30)).body("lastError", equalTo(null)));
        given().contentType(ContentType.JSON).body(Map.of("capacity", "2GiB")).post("/v1/provisioned-volumes/ns1/" + vol + "/expand")
                .then().statusCode(200).body("phase", equalTo("created"));
        VolumeStatus expanded = bus.awaitVolumeResult("ns1", vol, null, VolumeState.EXPANDED);
        assertEquals("ext-" + vol, expanded.externalId());
        assertEquals(2L << 30, expanded.capacityBytes());
        assertEquals(List.of(VolumeState.CREATED, VolumeState.EXPAND_FAILED, VolumeState.EXPANDED),
                bus.volumeResults("ns1", vol).stream().map(VolumeStatus::state).toList());
        assertFalse(bus.commands(vol).stream().anyMatch(c -> c.kind() == NodeCommandKind.UNMOUNT), "the claims stayed");
        assertEquals(1, bus.commands(vol).stream().filter(c -> c.kind() == NodeCommandKind.NODE_EXPAND
                && "node-b".equals(c.nodeId())).count(), "node-b's FAILED_PRECONDITION was not retried");

        String fixed = unique("prov");
        String other = unique("pv");
        bus.plugin(fixed, false, List.of("node-ctl"), List.of("node-a"));
        awaitPluginKnown(fixed);
        given().contentType(ContentType.JSON).body(createBody("ns1", other, fixed, "1GiB")).post("/v1/provisioned-volumes")
                .then().statusCode(202);
        answerCreated(bus, bus.awaitCommand(other, NodeCommandKind.CREATE_VOLUME), "ext-" + other);
        ClaimFlowTest.awaitSchedulable("ns1", other);
        given().contentType(ContentType.JSON).body(Map.of("capacity", "2GiB")).post("/v1/provisioned-volumes/ns1/" + other + "/expand")
                .then().statusCode(400).body("problems[0].field", equalTo("plugin"))
                .body("problems[0].value", equalTo("'" + fixed + "'")).body("problems[0].message", containsString("EXPAND_VOLUME"));
        assertFalse(bus.commands(other).stream().anyMatch(c -> c.kind().expanding()));
    }

    /**
     * Issue 14: resize on mount and the ends of expansions on volume-status. A claim becomes ready on node-b while the
     * controller expands (claimed on node-a): nothing is sent for it until the controller answers (node expansion
     * required), then node-a and node-b are expanded one after the other with the controller's capacity; a claim that
     * becomes ready on node-c during that run is queued behind them (one NodeExpandVolume in flight per volume); after
     * the last, schedulers read "expanded" (the plugin's id, 2GiB) once, a redelivered answer changing nothing. A
     * claim ready on node-d afterwards is expanded there (phase node-expanding, node-d only) and reported "expanded"
     * (resize on mount); a second claim on node-a, already expanded, sends nothing. The REST view shows the capacity
     * nodes must reach and what each reached; each node got exactly one NodeExpandVolume, none while a claim mounted.
     */
    @Test
    void aClaimReadyOnANodeNotYetExpandedIsExpandedThereAndEachExpansionsEndIsPublishedOnce() {
        String plugin = unique("prov");
        String vol = unique("pv");
        bus.plugin(plugin, false, List.of("node-ctl"), List.of("node-a", "node-b", "node-c", "node-d"), true);
        awaitPluginKnown(plugin);
        Map<String, Object> body = createBody("ns1", vol, plugin, "1GiB");
        body.put("accessMode", "multi-node-multi-writer");
        given().contentType(ContentType.JSON).body(body).post("/v1/provisioned-volumes").then().statusCode(202);
        answerCreated(bus, bus.awaitCommand(vol, NodeCommandKind.CREATE_VOLUME), "ext-" + vol);
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ready(vol, "alloc-a", "node-a");

        given().contentType(ContentType.JSON).body(Map.of("capacity", "2GiB")).post("/v1/provisioned-volumes/ns1/" + vol + "/expand")
                .then().statusCode(202);
        NodeCommand controller = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_EXPAND);
        ready(vol, "alloc-b", "node-b");
        bus.send(expandedAnswer(controller, 2L << 30, true));
        NodeCommand a = bus.awaitCommand(vol, NodeCommandKind.NODE_EXPAND);
        assertEquals("node-a", a.nodeId(), "nothing was sent for node-b while the controller expanded");
        assertEquals(2L << 30, a.provision().capacityMinBytes());
        ready(vol, "alloc-c", "node-c");
        given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("node-expanding"))
                .body("expandNodes", equalTo(List.of("node-a", "node-b", "node-c"))).body("nodeExpandBytes", equalTo(2L << 30));
        bus.send(expandedAnswer(a, 2L << 30, false));
        NodeCommand b = bus.awaitCommand(vol, NodeCommandKind.NODE_EXPAND);
        assertEquals("node-b", b.nodeId());
        bus.send(expandedAnswer(b, 2L << 30, false));
        NodeCommand c = bus.awaitCommand(vol, NodeCommandKind.NODE_EXPAND);
        assertEquals("node-c", c.nodeId());
        assertEquals(2L << 30, c.provision().capacityMinBytes());
        bus.send(expandedAnswer(c, 2L << 30, false));
        VolumeStatus expanded = bus.awaitVolumeResult("ns1", vol, null, VolumeState.EXPANDED);
        assertEquals("ext-" + vol, expanded.externalId());
        assertEquals(2L << 30, expanded.capacityBytes());
        assertTrue(expanded.reason().contains("on every node where it is published"), expanded.reason());
        bus.send(expandedAnswer(c, 2L << 30, false)); // redelivered: matches no pending command
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("created"))
                        .body("nodeExpandedBytes.'node-a'", equalTo(2L << 30)).body("nodeExpandedBytes.'node-c'", equalTo(2L << 30)));

        ready(vol, "alloc-d", "node-d");
        NodeCommand d = bus.awaitCommand(vol, NodeCommandKind.NODE_EXPAND);
        assertEquals("node-d", d.nodeId());
        assertEquals(2L << 30, d.provision().capacityMinBytes());
        given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("node-expanding"))
                .body("expandNodes", equalTo(List.of("node-d")));
        bus.send(expandedAnswer(d, 2L << 30, false));
        VolumeStatus onMount = EventCodec.decode(VolumeStatus.class, bus.kafka.awaitRecord(Bus.topic(
                io.csiorchestrator.events.Topic.VOLUME_STATUS), r -> r.value().contains("resize on mount")
                && r.value().contains(vol), Bus.WAIT).value());
        assertEquals(VolumeState.EXPANDED, onMount.state());
        assertEquals(2L << 30, onMount.capacityBytes());

        ready(vol, "alloc-a2", "node-a");
        ClaimRequested release = Bus.release("ns1", vol, "alloc-a2");
        bus.send(release);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT)); // after alloc-a2's ready: its commands are out
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        List<NodeCommand> commands = bus.commands(vol);
        assertEquals(Map.of("node-a", 1L, "node-b", 1L, "node-c", 1L, "node-d", 1L), commands.stream()
                .filter(x -> x.kind() == NodeCommandKind.NODE_EXPAND).collect(java.util.stream.Collectors.groupingBy(
                        NodeCommand::nodeId, java.util.stream.Collectors.counting())));
        assertEquals(List.of(VolumeState.CREATED, VolumeState.EXPANDED, VolumeState.EXPANDED),
                bus.volumeResults("ns1", vol).stream().map(VolumeStatus::state).toList());
    }

    /**
     * Issue 14: a plugin whose VolumeExpansion capability is OFFLINE (plugin-status volumeExpansion "offline") cannot
     * expand a claimed volume: 409 naming the plugin, the volume, the claim and its node, and to release the claims
     * first; nothing is sent. Once the claim is released, the same request is 202 and ControllerExpandVolume goes out
     * (the only one), its answer ends in "expanded".
     */
    @Test
    void aPluginThatExpandsOfflineOnlyRefusesAClaimedVolumesExpansionUntilTheClaimsAreReleased() {
        String plugin = unique("prov");
        String vol = unique("pv");
        bus.plugin(plugin, false, List.of("node-ctl"), List.of("node-a"), true,
                io.csiorchestrator.events.VolumeExpansionMode.OFFLINE);
        awaitPluginKnown(plugin);
        Map<String, Object> body = createBody("ns1", vol, plugin, "1GiB");
        body.put("accessMode", "multi-node-multi-writer");
        given().contentType(ContentType.JSON).body(body).post("/v1/provisioned-volumes").then().statusCode(202);
        answerCreated(bus, bus.awaitCommand(vol, NodeCommandKind.CREATE_VOLUME), "ext-" + vol);
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ready(vol, "alloc-1", "node-a");

        given().contentType(ContentType.JSON).body(Map.of("capacity", "2GiB")).post("/v1/provisioned-volumes/ns1/" + vol + "/expand")
                .then().statusCode(409).body("problems[0].field", equalTo("volume"))
                .body("problems[0].message", containsString("plugin " + plugin + " expands volumes offline only"))
                .body("problems[0].message", containsString("volume ns1/" + vol + " is claimed by alloc-1 on node node-a"))
                .body("problems[0].message", containsString("release the claims first"));
        given().get("/v1/provisioned-volumes/ns1/" + vol).then().statusCode(200).body("phase", equalTo("created"));

        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT));
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        given().contentType(ContentType.JSON).body(Map.of("capacity", "2GiB")).post("/v1/provisioned-volumes/ns1/" + vol + "/expand")
                .then().statusCode(202).body("phase", equalTo("expanding"));
        NodeCommand controller = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_EXPAND);
        assertEquals(1, bus.commands(vol).stream().filter(x -> x.kind() == NodeCommandKind.CONTROLLER_EXPAND).count(),
                "the refused request sent nothing");
        bus.send(expandedAnswer(controller, 2L << 30, false));
        assertEquals(2L << 30, bus.awaitVolumeResult("ns1", vol, null, VolumeState.EXPANDED).capacityBytes());
    }

    /**
     * Issue 14, a record without a volume: a listing of a plugin with LIST_VOLUMES (started here as the timer starts
     * it) sends list-volumes to the healthy controller's node (first page: no token, 500 entries); a second start while
     * a page is outstanding sends nothing. The first page lists volume A (and an id no record has) with a next token;
     * the second page, asked of the same node with that token, is the last and empty. Volume B, created through the
     * services and not listed, is then marked: GET of the provisioned and of the registered volume show "abnormal:
     * volume not listed by plugin P since T"; A is not marked; B stays registered and created (nothing deleted), and
     * the counter csi_claims_volumes_unlisted_total{change="marked"} counted it. A listing that fails (ABORTED: the
     * token went stale) changes no mark; the next one that lists B clears its mark. A plugin without LIST_VOLUMES is
     * never listed.
     */
    @Test
    void aVolumeThePluginNoLongerListsIsMarkedAbnormalUntilListedAgainAndNothingIsDeleted() {
        String plugin = unique("prov");
        String a = unique("pv");
        String b = unique("pv");
        bus.plugin(plugin, false, List.of("node-ctl"), List.of("node-a"), false, null, true);
        awaitPluginKnown(plugin);
        for (String vol : List.of(a, b)) {
            given().contentType(ContentType.JSON).body(createBody("ns1", vol, plugin, "1MiB")).post("/v1/provisioned-volumes")
                    .then().statusCode(202);
            answerCreated(bus, bus.awaitCommand(vol, NodeCommandKind.CREATE_VOLUME), "ext-" + vol);
            ClaimFlowTest.awaitSchedulable("ns1", vol);
        }

        assertTrue(startListing(plugin));
        NodeCommand first = bus.awaitCommand(plugin, NodeCommandKind.LIST_VOLUMES);
        assertEquals("node-ctl", first.nodeId());
        assertEquals(NodeCommandKind.LISTING_NAMESPACE, first.namespace());
        assertNull(first.listing().startingToken());
        assertEquals(500, first.listing().maxEntries());
        assertFalse(startListing(plugin), "a page is outstanding: no second listing");
        bus.send(listedAnswer(first, List.of("ext-" + a, "ext-of-no-record"), "page-2"));
        NodeCommand second = bus.awaitCommand(plugin, NodeCommandKind.LIST_VOLUMES);
        assertEquals("node-ctl", second.nodeId());
        assertEquals("page-2", second.listing().startingToken());
        bus.send(listedAnswer(second, List.of(), null));
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/provisioned-volumes/ns1/" + b).then().statusCode(200).body("phase", equalTo("created"))
                        .body("listing.condition", equalTo("abnormal"))
                        .body("listing.message", containsString("volume not listed by plugin " + plugin + " since ")));
        given().get("/v1/volumes/ns1/" + b).then().statusCode(200).body("schedulable", equalTo(true))
                .body("listing.condition", equalTo("abnormal")).body("listing.pluginId", equalTo(plugin))
                .body("listing.message", containsString("volume not listed by plugin " + plugin));
        given().get("/v1/provisioned-volumes/ns1/" + a).then().statusCode(200).body("listing", equalTo(null));
        given().get("/v1/volumes/ns1/" + a).then().statusCode(200).body("listing", equalTo(null));
        given().get("/q/metrics").then().statusCode(200)
                .body(containsString("csi_claims_volumes_unlisted_total{change=\"marked\"}"))
                .body(containsString("csi_claims_volume_listings_total{outcome=\"complete\"}"));

        assertTrue(startListing(plugin));
        bus.fail(bus.awaitCommand(plugin, NodeCommandKind.LIST_VOLUMES), "ABORTED", "starting_token is no longer valid");
        // the failed listing is given up once its answer is in: a new one starts
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).until(() -> startListing(plugin));
        bus.send(listedAnswer(bus.awaitCommand(plugin, NodeCommandKind.LIST_VOLUMES), List.of("ext-" + a, "ext-" + b), null));
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/provisioned-volumes/ns1/" + b).then().statusCode(200).body("listing", equalTo(null)));
        assertTrue(bus.commands(b).stream().noneMatch(c -> c.kind() == NodeCommandKind.DELETE_VOLUME), "nothing deleted");

        String unlisting = unique("prov");
        String c = unique("pv");
        bus.plugin(unlisting, false, List.of("node-ctl"), List.of("node-a"));
        awaitPluginKnown(unlisting);
        given().contentType(ContentType.JSON).body(createBody("ns1", c, unlisting, "1MiB")).post("/v1/provisioned-volumes")
                .then().statusCode(202);
        answerCreated(bus, bus.awaitCommand(c, NodeCommandKind.CREATE_VOLUME), "ext-" + c);
        ClaimFlowTest.awaitSchedulable("ns1", c);
        assertFalse(startListing(unlisting), "no LIST_VOLUMES: never listed");
    }

    /** Whether a listing of {@code plugin} started (the timer's call, made here on a Vert.x context as the timer's is). */
    private boolean startListing(String plugin) {
        try {
            return io.quarkus.vertx.VertxContextSupport.subscribeAndAwait(() -> listings.start(plugin));
        } catch (Throwable t) {
            throw new AssertionError("starting a listing of " + plugin + " failed", t);
        }
    }

    private static MountDone listedAnswer(NodeCommand c, List<String> ids, String nextToken) {
        return MountDone.listed(c, c.nodeId(), new io.csiorchestrator.events.ListedVolumes(ids, nextToken), Instant.now());
    }

    /** A write claim of {@code alloc} on {@code node}, mounted and ready. */
    private void ready(String vol, String alloc, String node) {
        ClaimRequested claim = Bus.claim("ns1", vol, alloc, node, ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER);
        bus.send(claim);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals(node, mount.nodeId());
        bus.succeed(mount);
        bus.awaitStatus(claim.requestId(), ClaimState.READY);
    }

    private static MountDone expandedAnswer(NodeCommand c, long bytes, boolean nodeExpansionRequired) {
        return new MountDone(c.commandId(), c.nodeId(), c.kind(), c.namespace(), c.volumeId(), null, true, null, null,
                Map.of(), null, null, Instant.now(), null, null,
                ProvisionedVolume.expanded(c.externalVolumeId(), bytes, nodeExpansionRequired));
    }

    /** A create body with an externalId, a bad capacity and a bad access mode is 400 naming all three. */
    @Test
    void aBadCreateBodyIsRefusedWithEveryProblem() {
        Map<String, Object> body = createBody("ns1", unique("pv"), "p", "lots");
        body.put("externalId", "mine");
        body.put("accessMode", "everyone");
        given().contentType(ContentType.JSON).body(body).post("/v1/provisioned-volumes").then().statusCode(400)
                .body("problems.field", org.hamcrest.Matchers.hasItems("externalId", "capacityMin", "accessMode"));
    }

    /**
     * The command's sealed secrets, opened as the worker would: with its target node's sealing key (re-sealed for that
     * node only, issue 20 item 4), bound to {@code namespace/volumeId} of the command.
     */
    private io.csiorchestrator.events.SecretPayload opened(NodeCommand command, String volumeId) throws Exception {
        assertTrue(command.sealed() != null, "no sealed secrets on " + command.kind().wire());
        assertEquals(volumeId, command.volumeId());
        assertEquals("node:" + command.nodeId(), command.sealed().recipient(), "re-sealed for the command's node");
        return io.csiorchestrator.events.SecretSealer.open(command.sealed(), io.csiorchestrator.testkit.TestIdentities.sealing(
                io.csiorchestrator.events.identity.Principal.node(command.nodeId())), command.namespace(), command.volumeId());
    }

    private static void awaitPluginKnown(String plugin) {
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).untilAsserted(() ->
                given().get("/v1/status/plugins").then().statusCode(200).body(containsString(plugin)));
    }
}
