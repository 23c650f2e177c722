package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.EnumSet;
import org.junit.jupiter.api.Test;

class EventRoundTripTest {

    @Test
    void everyEventTypeHasASample() {
        assertEquals(EnumSet.allOf(EventType.class), EnumSet.copyOf(SampleEvents.all().keySet()));
    }

    @Test
    void everyEventSurvivesEncodeAndDecode() {
        SampleEvents.all().forEach((type, event) -> {
            assertSame(type, event.eventType());
            ContractEvent back = EventCodec.decode(type, EventCodec.encode(event));
            assertEquals(event, back, type + " changed on the round trip");
        });
        MountDone failed = SampleEvents.mountFailed();
        assertEquals(failed, EventCodec.decode(MountDone.class, EventCodec.encode(failed)));
    }

    @Test
    void defaultsApplyWhenOptionalFieldsAreAbsent() {
        ClaimRequested claim = EventCodec.decode(ClaimRequested.class, """
                {"requestId":"r","namespace":"default","volumeId":"v","allocationId":"a","nodeId":"n",
                 "mode":"read","accessMode":"multi-node-reader-only","attachmentMode":"file-system"}""");
        assertEquals(MountSupport.ALL, claim.mountSupport(), "absent mount support means all");
        assertEquals(false, claim.readOnly());
        assertEquals(MountOptions.NONE, claim.mountOptions());
    }

    @Test
    void unknownFieldsAreTolerated() {
        ClaimRequested claim = EventCodec.decode(ClaimRequested.class, """
                {"requestId":"r","namespace":"default","volumeId":"v","allocationId":"a","mode":"release",
                 "addedInV2":{"x":1}}""");
        assertEquals(ClaimMode.RELEASE, claim.mode());
    }

    @Test
    void recordKeysFollowTheTopicRules() {
        assertEquals("vol-1", SampleEvents.claimRequested().recordKey());
        assertEquals("vol-1", SampleEvents.claimStatus().recordKey());
        assertEquals("node-1", SampleEvents.nodeCommand().recordKey());
        assertEquals("node-1", SampleEvents.mountDone().recordKey());
        assertEquals("hostpath/node-1", SampleEvents.pluginHealth().recordKey());
        assertEquals("hostpath", SampleEvents.pluginStatus().recordKey());
        assertEquals("node-1", SampleEvents.nodeEvent().recordKey());
        assertEquals("node-1", SampleEvents.nodeLeaseRequested().recordKey());
        assertEquals("node-1", SampleEvents.nodeLease().recordKey());
    }
}
