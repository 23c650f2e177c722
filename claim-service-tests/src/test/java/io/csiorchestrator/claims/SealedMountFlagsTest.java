package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountOptions;
import io.csiorchestrator.events.MountSupport;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.SealingKeys;
import io.csiorchestrator.events.identity.TrustSet;
import io.csiorchestrator.testkit.TestIdentities;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Mount flags on claim-requested travel only sealed (sealedMountFlags, for claim-service's public key): sealed flags
 * reach the worker inside NodeCommand.sealed, re-sealed for the target node only, and replace the volume's; plain flags
 * are dead-lettered without stalling the partition; flags the service cannot open reject the claim, naming the key id.
 */
@QuarkusTest
class SealedMountFlagsTest {

    /** What schedulers seal for: claim-service's sealing key as the tests' trust file publishes it (issue 20 item 4). */
    static final TrustSet.Entry CLAIM_SERVICE = TestIdentities.claimServiceSealingKey();

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    /** A file-system volume registered with fs type ext4 and one flag of its own (sealed at rest). */
    static String registerVolumeWithFlags(String vol, String plugin) {
        given().contentType(ContentType.JSON).body(Map.of("id", vol, "namespace", "ns1", "externalId", "ext-" + vol,
                        "pluginId", plugin, "accessMode", "single-node-writer", "attachmentMode", "file-system",
                        "mountOptions", Map.of("fsType", "ext4", "mountFlags", List.of("volume-flag"))))
                .post("/v1/volumes").then().statusCode(201);
        return vol;
    }

    static ClaimRequested write(String vol, String alloc, String fsType, SealedSecrets sealedFlags) {
        return new ClaimRequested(UUID.randomUUID().toString(), "ns1", vol, alloc, "node-a", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, new MountOptions(fsType, null), sealedFlags,
                MountSupport.ALL, Instant.now());
    }

    @Test
    void sealedFlagsReachTheWorkerSealedAndReplaceTheVolumesAndNeverTravelPlain() throws Exception {
        String canary = "password=CANARY-sealed-flag-" + UUID.randomUUID().toString().substring(0, 8);
        String plugin = ClaimFlowTest.unique("plug");
        String vol = registerVolumeWithFlags(ClaimFlowTest.unique("sealed"), plugin);
        bus.plugin(plugin, false, List.of(), List.of("node-a"));
        ClaimFlowTest.awaitSchedulable("ns1", vol);

        List<String> flags = List.of("noatime", canary);
        ClaimRequested claim = write(vol, "alloc-1", "xfs", ClaimRequested.sealFlags(CLAIM_SERVICE, "ns1", vol, flags));
        bus.send(claim);
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals("xfs", mount.fsType(), "the request's fs type replaces the volume's");
        assertNotNull(mount.sealed(), "the mount command carries the flags sealed");
        assertEquals("node:node-a", mount.sealed().recipient(), "re-sealed for the target node");
        SecretPayload opened = SecretSealer.open(mount.sealed(), TestIdentities.sealing(Principal.node("node-a")), "ns1", vol);
        assertEquals(flags, opened.mountFlags(), "the request's flags replace the volume's");
        SealingKeys otherNode = TestIdentities.sealing(Principal.node("node-b"));
        SecretSealer.SecretUnsealException notForB = org.junit.jupiter.api.Assertions.assertThrows(
                SecretSealer.SecretUnsealException.class, () -> SecretSealer.open(mount.sealed(), otherNode, "ns1", vol));
        assertTrue(notForB.getMessage().contains("node:node-a"), notForB.getMessage());
        org.junit.jupiter.api.Assertions.assertThrows(SecretSealer.SecretUnsealException.class,
                () -> SecretSealer.open(mount.sealed(), TestIdentities.sealing(TestIdentities.CLAIM_SERVICE), "ns1", vol),
                "not even claim-service's key opens the node's copy");
        bus.succeed(mount);
        bus.awaitStatus(claim.requestId(), ClaimState.READY);

        // No plain flag in any record (key, value, headers) of any topic of this test run.
        int scanned = bus.scanEveryRecord((where, text) -> assertNoFlag(canary, where, text));
        assertTrue(scanned >= 4, "records scanned: " + scanned);
        assertTrue(bus.kafka.readAll(Bus.topic(Topic.CLAIM_REQUESTED)).stream()
                .anyMatch(r -> r.value().contains(claim.requestId()) && r.value().contains("sealedMountFlags")),
                "the scan saw the sealed claim itself");
    }

    @Test
    void plainFlagsAreDeadLetteredAndThePartitionMovesOn() throws Exception {
        String secretFlag = "password=plain-" + UUID.randomUUID().toString().substring(0, 8);
        String vol = bus.schedulableVolume("ns1", "plain", AccessMode.SINGLE_NODE_WRITER, "node-a");

        // What an old scheduler sends: the flags in plain text (EventCodec.encode would refuse it, so written raw).
        ClaimRequested plain = new ClaimRequested("plain-" + vol, "ns1", vol, "alloc-plain", "node-a", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false,
                new MountOptions("ext4", List.of("noatime", secretFlag)), null, MountSupport.ALL, Instant.now());
        bus.sendRaw(Topic.CLAIM_REQUESTED, vol, EventCodec.mapper().writeValueAsString(plain));
        ClaimRequested after = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(after);
        bus.awaitStatus(after.requestId(), ClaimState.ACCEPTED);

        ConsumerRecord<String, String> dead = bus.kafka.awaitRecord(Bus.topic(Topic.CLAIM_REQUESTED) + "-dead-letter",
                r -> vol.equals(r.key()), Bus.WAIT);
        assertTrue(dead.value().contains("plain-" + vol), dead.value());
        assertFalse(dead.value().contains(secretFlag) || dead.value().contains("noatime"),
                "the dead-letter copy carries no plain flag: " + dead.value());
        assertTrue(dead.value().contains("\"mountFlags\":[\"(redacted)\",\"(redacted)\"]"), dead.value());
        String why = KafkaTestClient.header(dead, DeadLetters.REASON);
        assertNotNull(why, "dead-letter reason header");
        assertTrue(why.contains("mountOptions.mountFlags") && why.contains("sealedMountFlags") && why.contains("2 given"), why);
        assertFalse(why.contains(secretFlag) || why.contains("noatime"), "the reason never echoes a flag: " + why);
        assertTrue(bus.statuses("plain-" + vol).isEmpty(), "a dead-lettered request is not answered");
        assertTrue(bus.commands(vol).stream().noneMatch(c -> "alloc-plain".equals(c.allocationId())));
    }

    @Test
    void flagsTheServiceCannotOpenRejectTheClaimNamingTheKeyId() {
        String vol = bus.schedulableVolume("ns1", "unsealable", AccessMode.SINGLE_NODE_WRITER, "node-a");

        // Sealed for a claim-service key the service does not hold (retired, or never handed to it).
        SealingKeys stranger = SealingKeys.generate(TestIdentities.CLAIM_SERVICE, "rotated-away");
        ClaimRequested unknownKey = new ClaimRequested(UUID.randomUUID().toString(), "ns1", vol, "alloc-1", "node-a",
                ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                ClaimRequested.sealFlags(stranger.publicEntry(stranger.newest()), "ns1", vol, List.of("noatime")),
                MountSupport.ALL, Instant.now());
        bus.send(unknownKey);
        String reason = bus.awaitStatus(unknownKey.requestId(), ClaimState.REJECTED).reason();
        assertTrue(reason.contains("'rotated-away'") && reason.contains("sealedMountFlags") && reason.contains("alloc-1")
                && reason.contains(vol), reason);
        assertFalse(reason.contains("noatime"), reason);

        // Sealed for claim-service's key but for another volume: replayed here, it does not open.
        ClaimRequested replayed = new ClaimRequested(UUID.randomUUID().toString(), "ns1", vol, "alloc-2", "node-a",
                ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                ClaimRequested.sealFlags(CLAIM_SERVICE, "ns1", "some-other-volume", List.of("noatime")), MountSupport.ALL, Instant.now());
        bus.send(replayed);
        String replayReason = bus.awaitStatus(replayed.requestId(), ClaimState.REJECTED).reason();
        assertTrue(replayReason.contains("'" + CLAIM_SERVICE.kid() + "'") && replayReason.contains("ns1/" + vol)
                && replayReason.contains("another volume"), replayReason);

        // Sealed for a node's key (node-a's), not claim-service's: claim-service cannot open it.
        SealingKeys nodeA = TestIdentities.sealing(Principal.node("node-a"));
        ClaimRequested forNode = new ClaimRequested(UUID.randomUUID().toString(), "ns1", vol, "alloc-4", "node-a",
                ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null,
                ClaimRequested.sealFlags(nodeA.publicEntry(nodeA.newest()), "ns1", vol, List.of("noatime")), MountSupport.ALL, Instant.now());
        bus.send(forNode);
        String forNodeReason = bus.awaitStatus(forNode.requestId(), ClaimState.REJECTED).reason();
        assertTrue(forNodeReason.contains("sealed for node:node-a") && forNodeReason.contains("claim-service"), forNodeReason);

        // Neither rejected claim took the volume: the volume takes a single writer, so a writer after them is
        // accepted only if neither of them holds it; and no command was sent for them.
        ClaimRequested ok = Bus.claim("ns1", vol, "alloc-3", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(ok);
        bus.awaitStatus(ok.requestId(), ClaimState.ACCEPTED);
        assertTrue(bus.commands(vol).stream().noneMatch(c -> "alloc-1".equals(c.allocationId()) || "alloc-2".equals(c.allocationId())
                        || "alloc-4".equals(c.allocationId())),
                "no command for a rejected claim");
    }

    /**
     * A claim for a node the trust file has no sealing key for (its plugin reported, the node not joined): claim-service
     * sends no mount command and says why in the claim's lastError, naming the node; once the node joins (its sealing
     * key published in the trust file), the retried mount goes out sealed for that node and opens with its key.
     */
    @Test
    void aCommandForANodeWithoutASealingKeyWaitsForTheKeyThenGoesOutSealedForThatNode() throws Exception {
        String node = "node-late-" + UUID.randomUUID().toString().substring(0, 8);
        String plugin = ClaimFlowTest.unique("plug");
        String vol = registerVolumeWithFlags(ClaimFlowTest.unique("late"), plugin);
        // sent as is: Bus.send(PluginStatus) would have the node join first
        io.csiorchestrator.events.PluginStatus status = new io.csiorchestrator.events.PluginStatus(plugin, "test.csi", "1.0",
                false, 0, 0, 1, 1, List.of(), List.of(new io.csiorchestrator.events.PluginStatus.NodeInstance(node,
                "ext-" + node, 10L, Map.of(), true, "ok", Instant.now())), Instant.now());
        bus.sendRaw(Topic.PLUGIN_STATUS, status.recordKey(), EventCodec.encodeToString(status));
        ClaimFlowTest.awaitSchedulable("ns1", vol);
        ClaimRequested claim = new ClaimRequested(UUID.randomUUID().toString(), "ns1", vol, "alloc-late", node,
                ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null,
                MountSupport.ALL, Instant.now());
        bus.send(claim);
        org.awaitility.Awaitility.await().atMost(Bus.WAIT).until(() -> given().get("/v1/volumes/ns1/" + vol).then()
                .extract().asString().contains("for node:" + node + ": the trust file has no sealing (enc) key for it"));
        assertTrue(bus.commands(vol).stream().noneMatch(c -> c.kind() == NodeCommandKind.MOUNT),
                "no mount command before the node's key is published");

        SealingKeys joined = TestIdentities.sealing(Principal.node(node));
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        assertEquals("node:" + node, mount.sealed().recipient());
        assertEquals(List.of("volume-flag"), SecretSealer.open(mount.sealed(), joined, "ns1", vol).mountFlags());
    }

    static void assertNoFlag(String flag, String where, String text) {
        if (text != null) {
            assertFalse(text.contains(flag), "plain mount flag in " + where + ": " + text);
        }
    }
}
