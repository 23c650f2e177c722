package io.csiorchestrator.claims.provision;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.domain.ProvisionMachine.Phase;
import io.csiorchestrator.claims.store.ProvisionEntity;
import io.csiorchestrator.claims.store.SnapshotEntity;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.VolumeState;
import io.csiorchestrator.events.VolumeStatus;
import org.junit.jupiter.api.Test;

/** The volume-status events built from the provision machine's reports: valid for the contract whatever the plugin said. */
class VolumeResultsTest {

    private static ProvisionEntity provision() {
        ProvisionEntity p = new ProvisionEntity();
        p.namespace = "ns1";
        p.volumeId = "pv-1";
        p.pluginId = "hostpath";
        p.externalId = "ext-1";
        p.capacityBytes = 1L << 20;
        return p;
    }

    /** created carries the plugin's id and capacity, keyed namespace/volume; a failure carries no id, only its reason. */
    @Test
    void aVolumesResultsCarryTheirIdCapacityAndReason() {
        VolumeStatus created = VolumeResults.of(provision(), Phase.CREATED, "created by the plugin and registered");
        assertEquals(VolumeState.CREATED, created.state());
        assertEquals("ext-1", created.externalId());
        assertEquals(1L << 20, created.capacityBytes());
        assertEquals("ns1/pv-1", created.recordKey());
        EventCodec.requireValid(created);

        VolumeStatus failed = VolumeResults.of(provision(), Phase.DELETE_FAILED, "DeleteVolume failed with INTERNAL: disk");
        assertNull(failed.externalId());
        assertNull(failed.capacityBytes());
        assertEquals("DeleteVolume failed with INTERNAL: disk", failed.reason());
        assertThrows(IllegalArgumentException.class, () -> VolumeResults.of(provision(), Phase.CREATING, "x"),
                "an in-between phase is not a result");
    }

    /**
     * The end of an expansion: expanded carries the plugin's id and the capacity it reports now; expand-failed its
     * reason (the plugin's message) and the capacity as far as the controller got; both valid, keyed namespace/volume.
     */
    @Test
    void anExpansionsEndIsExpandedWithTheNewCapacityOrExpandFailedWithItsReason() {
        ProvisionEntity p = provision();
        p.capacityBytes = 2L << 20;
        VolumeStatus expanded = VolumeResults.expansion(p, Phase.CREATED, "expanded by the controller and on every node");
        assertEquals(VolumeState.EXPANDED, expanded.state());
        assertEquals("ext-1", expanded.externalId());
        assertEquals(2L << 20, expanded.capacityBytes());
        assertEquals("ns1/pv-1", expanded.recordKey());
        EventCodec.requireValid(expanded);
        VolumeStatus failed = VolumeResults.expansion(p, Phase.EXPAND_FAILED,
                "NodeExpandVolume on node n1 failed with FAILED_PRECONDITION: busy");
        assertEquals(VolumeState.EXPAND_FAILED, failed.state());
        assertTrue(failed.reason().contains("FAILED_PRECONDITION: busy"));
        EventCodec.requireValid(failed);
        assertThrows(IllegalArgumentException.class, () -> VolumeResults.expansion(p, Phase.NODE_EXPANDING, "x"));
    }

    /** A snapshot's result names the snapshot and is keyed by its source volume. */
    @Test
    void aSnapshotsResultIsKeyedByItsSourceVolume() {
        SnapshotEntity s = new SnapshotEntity();
        s.namespace = "ns1";
        s.snapshotId = "snap-1";
        s.sourceVolumeKey = "ns1/pv-1";
        s.pluginId = "hostpath";
        s.externalId = "ext-snap";
        s.sizeBytes = 4096L;
        VolumeStatus ready = VolumeResults.of(s, Phase.CREATED, "created by the plugin, ready to use");
        assertEquals("pv-1", ready.volumeId());
        assertEquals("snap-1", ready.snapshotId());
        assertEquals("ns1/pv-1", ready.recordKey());
        assertEquals(4096L, ready.capacityBytes());
        EventCodec.requireValid(ready);
    }

    /**
     * A plugin's message may hold control characters or be very long: the reason is blanked and cut so the event
     * stays valid (an invalid one would fail the transaction that records the result).
     */
    @Test
    void aPluginsUnrulyMessageStillMakesAValidEvent() {
        String reason = "CreateVolume failed with INTERNAL: line one\nline two\t" + "x".repeat(10_000);
        VolumeStatus failed = VolumeResults.of(provision(), Phase.CREATE_FAILED, reason);
        EventCodec.requireValid(failed);
        assertEquals(VolumeResults.MAX_REASON, failed.reason().length());
        assertTrue(failed.reason().startsWith("CreateVolume failed with INTERNAL: line one line two "), failed.reason());
        assertNull(VolumeResults.reason(" \n "));
    }
}
