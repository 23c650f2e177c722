package io.csiorchestrator.events;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/** One complete, valid sample of every event type. */
final class SampleEvents {

    static final Instant T = Instant.parse("2026-11-22T10:15:30.123Z");

    private SampleEvents() {
    }

    static ClaimRequested claimRequested() {
        return new ClaimRequested("req-1", "default", "vol-1", "alloc-1", "node-1", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false,
                new MountOptions("ext4", List.of()),
                new SealedSecrets("k1", SealedSecrets.ALGORITHM, "node:node-1", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAA", "c2VjcmV0"), MountSupport.ALL, T);
    }

    static ClaimStatus claimStatus() {
        return new ClaimStatus("req-1", "default", "vol-1", "alloc-1", "node-1", ClaimMode.WRITE, ClaimState.READY,
                null, "/var/lib/csi/per-alloc/alloc-1/vol-1", T);
    }

    static NodeCommand nodeCommand() {
        return new NodeCommand("cmd-1", "node-1", NodeCommandKind.MOUNT, "default", "vol-1", "hostpath",
                "ext-vol-1", "alloc-1", AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, "ext4",
                "ext-node-1", Map.of("ctx", "v"), Map.of("device", "/dev/x"),
                new SealedSecrets("k1", SealedSecrets.ALGORITHM, "node:node-1", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAA", "c2VjcmV0"), T)
                .withFencing(3L, 7L, true);
    }

    static MountDone mountDone() {
        return new MountDone("cmd-1", "node-1", NodeCommandKind.MOUNT, "default", "vol-1", "alloc-1", true, null, null,
                Map.of(), "/var/lib/csi/per-alloc/alloc-1/vol-1", "/var/lib/csi/staging/vol-1", T).withFencing(3L, 7L);
    }

    static MountDone mountFailed() {
        return new MountDone("cmd-2", "node-1", NodeCommandKind.MOUNT, "default", "vol-1", "alloc-1", false,
                "RESOURCE_EXHAUSTED", "node node-1 has reached the maximum number of attached volumes", Map.of(), null, null, T);
    }

    static PluginHealth pluginHealth() {
        return new PluginHealth("hostpath", "node-1", PluginType.MONOLITH, true, "probe ok",
                "hostpath.csi.csiorchestrator.io", "0.1.0", List.of("CONTROLLER_SERVICE"),
                List.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"), List.of("STAGE_UNSTAGE_VOLUME"),
                new NodeInfo("ext-node-1", 16L, Map.of("zone", "a")), false, T).withLeaseEpoch(3L);
    }

    static PluginStatus pluginStatus() {
        return new PluginStatus("hostpath", "hostpath.csi.csiorchestrator.io", "0.1.0", true, 1, 1, 2, 2,
                List.of(new PluginStatus.ControllerInstance("node-1", true, null, T)),
                List.of(new PluginStatus.NodeInstance("node-1", "ext-node-1", 16L, Map.of("zone", "a"), true, null, T),
                        new PluginStatus.NodeInstance("node-2", "ext-node-2", 0L, Map.of(), true, null, T)),
                T, true, true, VolumeExpansionMode.OFFLINE);
    }

    static NodeEvent nodeEvent() {
        return new NodeEvent("node-1", NodeEvent.SUBSYSTEM_CSI, NodeEventKind.MOUNT, "Mount volume", "hostpath",
                "default", "vol-1", "alloc-1", true, null, Map.of("hostPath", "/x"), T).withLeaseEpoch(3L);
    }

    static NodeStateReported nodeState() {
        return new NodeStateReported("node-1", 7L, T, List.of(new NodeStateReported.VolumeState("default", "vol-1",
                "hostpath", "ext-vol-1", ReportedMount.MOUNTED,
                List.of(new NodeStateReported.Publication("alloc-1", AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM,
                        false, ReportedMount.MISSING, "cmd-1")), List.of("ext-node-1"))), 3L);
    }

    static NodeLeaseRequested nodeLeaseRequested() {
        return new NodeLeaseRequested("lease-req-1", "node-1", 3L, T);
    }

    static NodeLease nodeLease() {
        return new NodeLease("node-1", 3L, NodeLeaseState.VALID, "lease-req-1", 30_000L, 10_000L, T);
    }

    static VolumeStatus volumeStatus() {
        return new VolumeStatus("default", "vol-1", null, "hostpath", VolumeState.CREATED, "ext-vol-1", 1L << 20, null, T);
    }

    static VolumeStatus snapshotFailed() {
        return new VolumeStatus("default", "vol-1", "snap-1", "hostpath", VolumeState.CREATE_FAILED, null, null,
                "CreateSnapshot failed with INVALID_ARGUMENT: plugin says: no", T);
    }

    static Placement placement() {
        return Placement.node("hostpath", "node-1", Map.of("zone", "a"), 2, 1, true, T);
    }

    /** One sample per event type, in contract order. */
    static Map<EventType, ContractEvent> all() {
        return Map.ofEntries(
                Map.entry(EventType.CLAIM_REQUESTED, claimRequested()),
                Map.entry(EventType.CLAIM_STATUS, claimStatus()),
                Map.entry(EventType.NODE_COMMAND, nodeCommand()),
                Map.entry(EventType.MOUNT_DONE, mountDone()),
                Map.entry(EventType.PLUGIN_HEALTH, pluginHealth()),
                Map.entry(EventType.PLUGIN_STATUS, pluginStatus()),
                Map.entry(EventType.NODE_EVENT, nodeEvent()),
                Map.entry(EventType.NODE_STATE, nodeState()),
                Map.entry(EventType.NODE_LEASE_REQUESTED, nodeLeaseRequested()),
                Map.entry(EventType.NODE_LEASE, nodeLease()),
                Map.entry(EventType.VOLUME_STATUS, volumeStatus()),
                Map.entry(EventType.PLACEMENT, placement()));
    }
}
