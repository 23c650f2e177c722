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
    void mountFlagsAreNeverEchoedInErrors() {
        MalformedEventException e = reject("""
                {"requestId":"r","namespace":"d","volumeId":"v","allocationId":"a","mode":"release",
                 "mountOptions":{"mountFlags":["password=hunter2,uid=0"]}}""");
        assertEquals(Set.of("mountOptions.mountFlags[0]"), fields(e));
        assertFalse(e.getMessage().contains("hunter2"), e.getMessage());
        assertFalse(SampleEvents.claimRequested().toString().contains("noatime"), "toString must redact mount flags");
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
