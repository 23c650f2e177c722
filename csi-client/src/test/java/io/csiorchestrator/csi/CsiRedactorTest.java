package io.csiorchestrator.csi;

import com.google.protobuf.ByteString;
import io.csiorchestrator.csi.testmessages.Credentials;
import io.csiorchestrator.csi.testmessages.Envelope;
import io.csiorchestrator.csi.v1.CreateVolumeRequest;
import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.csiorchestrator.csi.v1.ValidateVolumeCapabilitiesResponse;
import io.csiorchestrator.csi.v1.VolumeCapability;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CsiRedactorTest {

    private static final String SECRET = "canary-secret-4711";
    private static final String FLAG = "password=canary-flag-0815";

    private static VolumeCapability capabilityWithFlags() {
        return VolumeCapability.newBuilder()
                .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4")
                        .addMountFlags(FLAG).addMountFlags("noatime-canary"))
                .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                        .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
                .build();
    }

    private static NodeStageVolumeRequest stageRequest() {
        return NodeStageVolumeRequest.newBuilder()
                .setVolumeId("vol-1")
                .setStagingTargetPath("/staging/vol-1")
                .putSecrets("password", SECRET)
                .putSecrets("user", "admin-canary")
                .putVolumeContext("share", "//server/share")
                .putPublishContext("device", "/dev/nbd3")
                .setVolumeCapability(capabilityWithFlags())
                .build();
    }

    @Test
    void blanksSecretMapValuesAndMountFlagsAndKeepsTheRest() {
        String safe = CsiRedactor.toSafeString(stageRequest());

        assertFalse(safe.contains(SECRET), safe);
        assertFalse(safe.contains("admin-canary"), safe);
        assertFalse(safe.contains("canary-flag"), safe);
        assertFalse(safe.contains("noatime-canary"), safe);
        assertTrue(safe.startsWith("NodeStageVolumeRequest {"), safe);
        assertTrue(safe.contains("vol-1"), safe);
        assertTrue(safe.contains("/staging/vol-1"), safe);
        assertTrue(safe.contains("//server/share"), safe);
        assertTrue(safe.contains("/dev/nbd3"), safe);
        assertTrue(safe.contains("ext4"), safe);
        assertTrue(safe.contains("SINGLE_NODE_WRITER"), safe);
        assertTrue(safe.contains("password"), "secret keys are kept: " + safe);
    }

    @Test
    void redactedCopyKeepsStructureAndLeavesTheOriginalAlone() {
        NodeStageVolumeRequest original = stageRequest();
        NodeStageVolumeRequest redacted = (NodeStageVolumeRequest) CsiRedactor.redact(original);

        assertEquals(Map.of("password", CsiRedactor.REDACTED, "user", CsiRedactor.REDACTED), redacted.getSecretsMap());
        assertEquals(List.of(CsiRedactor.REDACTED, CsiRedactor.REDACTED),
                redacted.getVolumeCapability().getMount().getMountFlagsList());
        assertEquals(original.getVolumeContextMap(), redacted.getVolumeContextMap());
        assertEquals(SECRET, original.getSecretsOrThrow("password"));
    }

    @Test
    void walksRepeatedCapabilitiesInCsiMessages() {
        CreateVolumeRequest create = CreateVolumeRequest.newBuilder().setName("data")
                .addVolumeCapabilities(capabilityWithFlags()).addVolumeCapabilities(capabilityWithFlags())
                .putSecrets("key", SECRET).build();
        ValidateVolumeCapabilitiesResponse validation = ValidateVolumeCapabilitiesResponse.newBuilder()
                .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
                        .addVolumeCapabilities(capabilityWithFlags()))
                .build();

        for (String safe : List.of(CsiRedactor.toSafeString(create), CsiRedactor.toSafeString(validation))) {
            assertFalse(safe.contains(SECRET), safe);
            assertFalse(safe.contains("canary-flag"), safe);
            assertTrue(safe.contains("ext4"), safe);
        }
    }

    @Test
    void blanksSecretsNestedInMapsListsAndMessagesAtAnyDepth() {
        Credentials deepest = Credentials.newBuilder().setOwner("owner-3").setToken("token-canary-3")
                .putSecrets("k", "map-canary-3").build();
        Credentials nested = Credentials.newBuilder()
                .setOwner("owner-1")
                .setToken("token-canary-1")
                .setKey(ByteString.copyFromUtf8("bytes-canary-1"))
                .putSecrets("k", "map-canary-1")
                .addScopes("scope-canary-1")
                .setDelegate(Credentials.newBuilder().setOwner("owner-2").putSecrets("k", "map-canary-2")
                        .setDelegate(deepest))
                .setSecretChild(Credentials.newBuilder().setOwner("hidden-owner-canary"))
                .build();
        Envelope envelope = Envelope.newBuilder()
                .setLabel("envelope-label")
                .addStageRequests(stageRequest())
                .putCredentialsByName("first", nested)
                .setCredentials(nested)
                .build();

        String safe = CsiRedactor.toSafeString(envelope);

        assertFalse(safe.contains("canary"), safe);
        for (String kept : List.of("envelope-label", "first", "owner-1", "owner-2", "owner-3", "vol-1")) {
            assertTrue(safe.contains(kept), kept + " missing from " + safe);
        }
    }

    @Test
    void dropsUnknownFields() {
        NodeStageVolumeRequest withUnknown = NodeStageVolumeRequest.newBuilder().setVolumeId("v")
                .setUnknownFields(com.google.protobuf.UnknownFieldSet.newBuilder()
                        .addField(99, com.google.protobuf.UnknownFieldSet.Field.newBuilder()
                                .addLengthDelimited(ByteString.copyFromUtf8("future-secret-canary")).build())
                        .build())
                .build();
        assertFalse(CsiRedactor.toSafeString(withUnknown).contains("canary"));
    }

    @Test
    void scrubsSecretsAndFlagValuesOutOfFreeText() {
        String pluginMessage = "mount -o " + FLAG + " failed for user admin-canary with " + SECRET
                + "; flag value canary-flag-0815 rejected on vol-1";

        String scrubbed = CsiRedactor.scrub(pluginMessage, stageRequest());

        assertFalse(scrubbed.contains("canary"), scrubbed);
        assertTrue(scrubbed.contains("vol-1"), scrubbed);
        assertTrue(scrubbed.startsWith("mount -o ***"), scrubbed);
    }

    /**
     * The lifecycle requests (CreateSnapshot, DeleteSnapshot, ListSnapshots, ControllerExpandVolume,
     * NodeExpandVolume) carry secrets, and NodeExpandVolume/ControllerExpandVolume a capability with mount
     * flags: their safe text holds neither the secret values nor the flags, and keeps the ids.
     */
    @Test
    void lifecycleRequestsLoseTheirSecretsAndMountFlagsAndKeepTheirIds() {
        List<com.google.protobuf.MessageOrBuilder> requests = List.of(
                io.csiorchestrator.csi.v1.CreateSnapshotRequest.newBuilder().setName("snap-name")
                        .setSourceVolumeId("vol-src").putSecrets("password", SECRET).build(),
                io.csiorchestrator.csi.v1.DeleteSnapshotRequest.newBuilder().setSnapshotId("snap-id")
                        .putSecrets("password", SECRET).build(),
                io.csiorchestrator.csi.v1.ListSnapshotsRequest.newBuilder().setSnapshotId("snap-id")
                        .putSecrets("password", SECRET).build(),
                io.csiorchestrator.csi.v1.ControllerExpandVolumeRequest.newBuilder().setVolumeId("vol-x")
                        .putSecrets("password", SECRET).setVolumeCapability(capabilityWithFlags()).build(),
                io.csiorchestrator.csi.v1.NodeExpandVolumeRequest.newBuilder().setVolumeId("vol-x")
                        .setVolumePath("/target/vol-x").putSecrets("password", SECRET)
                        .setVolumeCapability(capabilityWithFlags()).build());
        for (com.google.protobuf.MessageOrBuilder request : requests) {
            String safe = CsiRedactor.toSafeString(request);
            assertFalse(safe.contains(SECRET), safe);
            assertFalse(safe.contains("canary-flag"), safe);
            assertTrue(safe.contains("snap-id") || safe.contains("vol-src") || safe.contains("vol-x"), safe);
        }
    }

    /**
     * The direct printer writes exactly what protobuf's single-line TextFormat printer writes for the redacted copy
     * (what toSafeString printed before, at a tenth of the cost): secrets in maps, lists and messages at any depth,
     * mount flags, bytes, enums, escapes in strings (quotes, backslashes, a newline, non-ASCII), empty messages,
     * unknown fields, and every lifecycle request.
     */
    @Test
    void printsWhatTextFormatPrintsForTheRedactedCopy() {
        Credentials deep = Credentials.newBuilder().setOwner("o\"w\\n\ner-ü").setToken("t")
                .setKey(ByteString.copyFrom(new byte[] {0, 1, (byte) 0xff, 'a', '"'}))
                .putSecrets("k", "v").putSecrets("", "empty-key").putSecrets("empty-value", "")
                .addScopes("s1").addScopes("s2").setSecretChild(Credentials.newBuilder().setOwner("x"))
                .setDelegate(Credentials.newBuilder()).build();
        Envelope envelope = Envelope.newBuilder().setLabel("l").addStageRequests(stageRequest())
                .addStageRequests(NodeStageVolumeRequest.newBuilder()).putCredentialsByName("b", deep)
                .putCredentialsByName("a", Credentials.newBuilder().build()).setCredentials(deep).build();
        NodeStageVolumeRequest unknown = NodeStageVolumeRequest.newBuilder().setVolumeId("v")
                .setUnknownFields(com.google.protobuf.UnknownFieldSet.newBuilder()
                        .addField(99, com.google.protobuf.UnknownFieldSet.Field.newBuilder().addVarint(7).build()).build())
                .build();
        List<com.google.protobuf.MessageOrBuilder> messages = new java.util.ArrayList<>(List.of(stageRequest(), envelope,
                deep, unknown, NodeStageVolumeRequest.getDefaultInstance(), capabilityWithFlags(),
                CreateVolumeRequest.newBuilder().setName("n").putParameters("z", "1").putParameters("a", "2")
                        .addVolumeCapabilities(capabilityWithFlags()).putSecrets("key", SECRET)
                        .setCapacityRange(io.csiorchestrator.csi.v1.CapacityRange.newBuilder().setRequiredBytes(1L << 40))
                        .build(),
                io.csiorchestrator.csi.v1.NodePublishVolumeRequest.newBuilder().setVolumeId("v").setReadonly(true)
                        .setTargetPath("/t").putSecrets("p", SECRET).setVolumeCapability(capabilityWithFlags()).build(),
                NodeStageVolumeRequest.newBuilder().setVolumeId("v"))); // a builder, as a caller may log one
        com.google.protobuf.TextFormat.Printer textFormat = com.google.protobuf.TextFormat.printer().emittingSingleLine(true);
        for (com.google.protobuf.MessageOrBuilder message : messages) {
            String expected = textFormat.printToString(CsiRedactor.redact(message));
            assertEquals(expected, CsiRedactor.singleLineOfRedacted(message));
            assertEquals(message.getDescriptorForType().getName() + " {" + expected.trim() + "}",
                    CsiRedactor.toSafeString(message));
        }
    }
}
