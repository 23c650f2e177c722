package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class EventCodecTest {

    private static MalformedEventException reject(String json) {
        return assertThrows(MalformedEventException.class, () -> EventCodec.decode(ClaimRequested.class, json));
    }

    private static Set<String> fields(MalformedEventException e) {
        return e.violations().stream().map(Violation::field).collect(Collectors.toSet());
    }

    @Test
    void everyMissingRequiredFieldIsNamedAtOnce() {
        MalformedEventException e = reject("""
                {"requestId":"r","mode":"write"}""");
        assertEquals(Set.of("namespace", "volumeId", "allocationId", "nodeId", "accessMode", "attachmentMode"), fields(e));
        assertEquals("claim-requested", e.eventType());
        assertTrue(e.getMessage().contains("field 'volumeId' (absent): is required"), e.getMessage());
    }

    @Test
    void aHostileIdIsNamedWithItsValue() {
        MalformedEventException e = reject("""
                {"requestId":"r","namespace":"default","volumeId":"../../etc","allocationId":"a/b","mode":"release"}""");
        assertEquals(Set.of("volumeId", "allocationId"), fields(e));
        assertTrue(e.getMessage().contains("field 'volumeId' '../../etc'"), e.getMessage());
        assertTrue(e.getMessage().contains("field 'allocationId' 'a/b': must not contain a path separator"), e.getMessage());
    }

    @Test
    void anUnknownEnumValueNamesTheFieldAndTheAllowedValues() {
        MalformedEventException e = reject("""
                {"requestId":"r","namespace":"d","volumeId":"v","allocationId":"a","nodeId":"n","mode":"write",
                 "accessMode":"single-node-everything","attachmentMode":"file-system"}""");
        assertEquals(Set.of("accessMode"), fields(e));
        assertTrue(e.getMessage().contains("'single-node-everything' is not one of single-node-reader-only"), e.getMessage());
    }

    @Test
    void aWrongTypeIsNamed() {
        MalformedEventException e = assertThrows(MalformedEventException.class, () -> EventCodec.decode(MountDone.class, """
                {"commandId":"c","nodeId":"n","kind":"mount","namespace":"d","volumeId":"v","success":"maybe",
                 "completedAt":"2026-11-22T10:00:00Z"}"""));
        assertEquals(Set.of("success"), fields(e));
    }

    /** Issue 33 item 2: a value of the wrong JSON type is refused, never coerced ("volumeId": 12 is not "12"). */
    @Test
    void aValueOfTheWrongJsonTypeIsNeverCoerced() {
        String valid = """
                {"requestId":"r","namespace":"d","volumeId":"v","allocationId":"a","nodeId":"n","mode":"write",
                 "accessMode":"single-node-writer","attachmentMode":"file-system","readOnly":false,
                 "requestedAt":"2026-11-22T10:00:00Z"}""";
        EventCodec.decode(ClaimRequested.class, valid);
        for (String[] wrong : new String[][] {
                {"\"volumeId\":\"v\"", "\"volumeId\":12", "volumeId"},
                {"\"requestId\":\"r\"", "\"requestId\":1.5", "requestId"},
                {"\"namespace\":\"d\"", "\"namespace\":true", "namespace"},
                {"\"readOnly\":false", "\"readOnly\":\"false\"", "readOnly"},
                {"\"readOnly\":false", "\"readOnly\":0", "readOnly"},
                {"\"mode\":\"write\"", "\"mode\":1", "mode"},
                {"\"requestedAt\":\"2026-11-22T10:00:00Z\"", "\"requestedAt\":1764000000", "requestedAt"}}) {
            String json = valid.replace(wrong[0], wrong[1]);
            MalformedEventException e = assertThrows(MalformedEventException.class,
                    () -> EventCodec.decode(ClaimRequested.class, json), wrong[1] + " was accepted");
            assertTrue(fields(e).contains(wrong[2]), wrong[1] + " -> " + e.getMessage());
        }
        MalformedEventException e = assertThrows(MalformedEventException.class, () -> EventCodec.decode(MountDone.class, """
                {"commandId":"c","nodeId":"n","kind":"mount","namespace":"d","volumeId":"v","success":true,
                 "leaseEpoch":"3","completedAt":"2026-11-22T10:00:00Z"}"""));
        assertEquals(Set.of("leaseEpoch"), fields(e), e.getMessage());
        e = assertThrows(MalformedEventException.class, () -> EventCodec.decode(MountDone.class, """
                {"commandId":"c","nodeId":"n","kind":"mount","namespace":"d","volumeId":"v","success":true,
                 "leaseEpoch":3.7,"completedAt":"2026-11-22T10:00:00Z"}"""));
        assertEquals(Set.of("leaseEpoch"), fields(e), e.getMessage());
    }

    @Test
    void aBadTimestampIsNamed() {
        MalformedEventException e = assertThrows(MalformedEventException.class, () -> EventCodec.decode(NodeEvent.class, """
                {"nodeId":"n","kind":"heal","message":"m","occurredAt":"yesterday"}"""));
        assertEquals(Set.of("occurredAt"), fields(e));
        assertTrue(e.getMessage().contains("'yesterday'"), e.getMessage());
    }

    @Test
    void notJsonAndEmptyRecordsAreRejectedWithAReason() {
        assertTrue(reject("{not json").getMessage().contains("is not valid JSON"));
        assertTrue(reject("").getMessage().contains("the record has no value"));
        assertTrue(reject("null").getMessage().contains("must be a JSON object"));
        assertTrue(reject("[1,2]").getMessage().contains("claim-requested"));
    }

    @Test
    void plainMountFlagsAreAViolationThatNeverEchoesThem() {
        MalformedEventException e = reject("""
                {"requestId":"r","namespace":"d","volumeId":"v","allocationId":"a","nodeId":"n","mode":"write",
                 "accessMode":"single-node-writer","attachmentMode":"file-system",
                 "mountOptions":{"fsType":"ext4","mountFlags":["password=hunter2,uid=0","noatime"]}}""");
        assertEquals(Set.of("mountOptions.mountFlags"), fields(e));
        assertTrue(e.getMessage().contains("mountOptions.mountFlags") && e.getMessage().contains("sealedMountFlags")
                && e.getMessage().contains("2 given"), e.getMessage());
        assertFalse(e.getMessage().contains("hunter2") || e.getMessage().contains("noatime"), e.getMessage());
        // The fs type alone stays plain and valid.
        ClaimRequested fsOnly = EventCodec.decode(ClaimRequested.class, """
                {"requestId":"r","namespace":"d","volumeId":"v","allocationId":"a","nodeId":"n","mode":"write",
                 "accessMode":"single-node-writer","attachmentMode":"file-system","mountOptions":{"fsType":"xfs"}}""");
        assertEquals("xfs", fsOnly.mountOptions().fsType());
        MalformedEventException badFs = reject("""
                {"requestId":"r","namespace":"d","volumeId":"v","allocationId":"a","mode":"release",
                 "mountOptions":{"fsType":"EXT4 -o x"}}""");
        assertEquals(Set.of("mountOptions.fsType"), fields(badFs));
    }

    @Test
    void sealedMountFlagsTravelSealedAndOpenOnlyForTheirVolume() {
        io.csiorchestrator.events.identity.SealingKeys claimService = io.csiorchestrator.events.identity.SealingKeys.generate(
                io.csiorchestrator.events.identity.Principal.service("claim-service"), "k1");
        io.csiorchestrator.events.identity.TrustSet.Entry sealer = claimService.publicEntry(claimService.newest());
        SecretSealer.Opener opener = (sealed, ns, vol) -> SecretSealer.open(sealed, claimService, ns, vol);
        List<String> flags = List.of("noatime", "password=hunter2");
        ClaimRequested claim = new ClaimRequested("r", "d", "v", "a", "n", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER,
                AttachmentMode.FILE_SYSTEM, false, new MountOptions("ext4", null),
                ClaimRequested.sealFlags(sealer, "d", "v", flags), MountSupport.ALL, null);
        String wire = EventCodec.encodeToString(claim);
        assertFalse(wire.contains("hunter2") || wire.contains("noatime"), wire);
        assertFalse(claim.toString().contains("hunter2") || claim.toString().contains("noatime"), claim.toString());
        ClaimRequested back = EventCodec.decode(ClaimRequested.class, wire);
        assertEquals(flags, back.openMountFlags(opener));
        assertEquals(SecretPayload.EMPTY.secrets(), opener.open(back.sealedMountFlags(), "d", "v").secrets());

        ClaimRequested moved = new ClaimRequested("r", "d", "other", "a", "n", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER,
                AttachmentMode.FILE_SYSTEM, false, null, back.sealedMountFlags(), null, null);
        SecretSealer.SecretUnsealException wrongVolume = assertThrows(SecretSealer.SecretUnsealException.class,
                () -> moved.openMountFlags(opener));
        assertTrue(wrongVolume.getMessage().contains("'k1'") && wrongVolume.getMessage().contains("d/other"), wrongVolume.getMessage());
        io.csiorchestrator.events.identity.SealingKeys otherKeys = io.csiorchestrator.events.identity.SealingKeys.generate(
                io.csiorchestrator.events.identity.Principal.service("claim-service"), "k2");
        SecretSealer.SecretUnsealException unknownKey = assertThrows(SecretSealer.SecretUnsealException.class,
                () -> back.openMountFlags((sealed, ns, vol) -> SecretSealer.open(sealed, otherKeys, ns, vol)));
        assertTrue(unknownKey.getMessage().contains("'k1'"), unknownKey.getMessage());

        assertEquals(null, ClaimRequested.sealFlags(sealer, "d", "v", List.of()));
        assertEquals(List.of(), new ClaimRequested("r", "d", "v", "a", null, ClaimMode.RELEASE, null, null, null, null, null,
                null, null).openMountFlags(opener), "no sealed flags: none");
        IllegalArgumentException invalid = assertThrows(IllegalArgumentException.class,
                () -> ClaimRequested.sealFlags(sealer, "d", "v", List.of("ok", "pw=hunter2,uid=0")));
        assertTrue(invalid.getMessage().contains("mountFlags[1]"), invalid.getMessage());
        assertFalse(invalid.getMessage().contains("hunter2"), invalid.getMessage());
    }

    @Test
    void aBadSealedEnvelopeIsNamed() {
        MalformedEventException e = reject("""
                {"requestId":"r","namespace":"d","volumeId":"v","allocationId":"a","mode":"release",
                 "sealedMountFlags":{"keyId":"../k","algorithm":"ROT13","recipient":"x:y","epk":"AAAA","nonce":"AAAA","ciphertext":"%%"}}""");
        assertEquals(Set.of("sealedMountFlags.keyId", "sealedMountFlags.algorithm", "sealedMountFlags.recipient",
                "sealedMountFlags.epk", "sealedMountFlags.ciphertext"), fields(e));
    }

    @Test
    void conditionalRequirementsFollowTheKind() {
        MalformedEventException e = assertThrows(MalformedEventException.class, () -> EventCodec.decode(NodeCommand.class, """
                {"commandId":"c","nodeId":"n","kind":"controller-publish","namespace":"d","volumeId":"v",
                 "pluginId":"p","externalVolumeId":"x","issuedAt":"2026-11-22T10:00:00Z"}"""));
        assertEquals(Set.of("accessMode", "attachmentMode", "externalNodeId"), fields(e));
    }

    @Test
    void encodeRefusesAnInvalidEvent() {
        ClaimStatus noReason = new ClaimStatus("r", "d", "v", "a", null, ClaimMode.WRITE, ClaimState.REJECTED, null, null,
                SampleEvents.T);
        MalformedEventException e = assertThrows(MalformedEventException.class, () -> EventCodec.encode(noReason));
        assertEquals(List.of("reason"), e.violations().stream().map(Violation::field).toList());
    }
}
