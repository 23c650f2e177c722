package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.Map;

/**
 * The result of one node command. Topic {@code mount-done}, key: node id.
 *
 * @param commandId      the command answered
 * @param success        whether the command's effect is in place
 * @param errorCode      on failure: the CSI/gRPC status code name (e.g. RESOURCE_EXHAUSTED) or a
 *                       worker code (e.g. PLUGIN_NOT_FOUND, INVALID_COMMAND)
 * @param errorMessage   on failure: a message an operator understands, with the plugin's own
 * @param publishContext what a controller publish returned
 * @param hostPath       for a mount: the path on the host where the volume is mounted
 * @param stagingPath    for a mount: the volume's staging path on this node, when staged
 * @param leaseEpoch     the worker's lease epoch when it answered; null from a worker that predates leases
 * @param claimGeneration the command's claimGeneration, echoed
 * @param provisioned    for a successful create-volume: the plugin's volume (id, capacity, context, topology); for a
 *                       successful controller-expand-volume (required) or node-expand-volume: id and new capacity
 * @param snapshot       for a successful create-snapshot: the plugin's snapshot (id, source, size, ready)
 * @param listed         for a successful list-volumes (required): the page of CSI ListVolumes (issue 14)
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record MountDone(
        String commandId,
        String nodeId,
        NodeCommandKind kind,
        String namespace,
        String volumeId,
        String allocationId,
        Boolean success,
        String errorCode,
        String errorMessage,
        Map<String, String> publishContext,
        String hostPath,
        String stagingPath,
        Instant completedAt,
        Long leaseEpoch,
        Long claimGeneration,
        ProvisionedVolume provisioned,
        ProvisionedSnapshot snapshot,
        ListedVolumes listed) implements ContractEvent {

    public MountDone {
        publishContext = Copies.map(publishContext);
    }

    /** A result without a ListVolumes page (every kind but list-volumes). */
    public MountDone(String commandId, String nodeId, NodeCommandKind kind, String namespace, String volumeId,
                     String allocationId, Boolean success, String errorCode, String errorMessage,
                     Map<String, String> publishContext, String hostPath, String stagingPath, Instant completedAt,
                     Long leaseEpoch, Long claimGeneration, ProvisionedVolume provisioned, ProvisionedSnapshot snapshot) {
        this(commandId, nodeId, kind, namespace, volumeId, allocationId, success, errorCode, errorMessage,
                publishContext, hostPath, stagingPath, completedAt, leaseEpoch, claimGeneration, provisioned, snapshot,
                null);
    }

    /** The successful answer of list-volumes {@code command}: one page of ListVolumes. */
    public static MountDone listed(NodeCommand command, String nodeId, ListedVolumes page, Instant completedAt) {
        return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(), null,
                true, null, null, Map.of(), null, null, completedAt, null, null, null, null, page);
    }

    /** A result without provisioned volume (every kind but create-volume). */
    public MountDone(String commandId, String nodeId, NodeCommandKind kind, String namespace, String volumeId,
                     String allocationId, Boolean success, String errorCode, String errorMessage,
                     Map<String, String> publishContext, String hostPath, String stagingPath, Instant completedAt,
                     Long leaseEpoch, Long claimGeneration) {
        this(commandId, nodeId, kind, namespace, volumeId, allocationId, success, errorCode, errorMessage,
                publishContext, hostPath, stagingPath, completedAt, leaseEpoch, claimGeneration, null, null);
    }

    /** A result with a provisioned volume and no snapshot (create-volume). */
    public MountDone(String commandId, String nodeId, NodeCommandKind kind, String namespace, String volumeId,
                     String allocationId, Boolean success, String errorCode, String errorMessage,
                     Map<String, String> publishContext, String hostPath, String stagingPath, Instant completedAt,
                     Long leaseEpoch, Long claimGeneration, ProvisionedVolume provisioned) {
        this(commandId, nodeId, kind, namespace, volumeId, allocationId, success, errorCode, errorMessage,
                publishContext, hostPath, stagingPath, completedAt, leaseEpoch, claimGeneration, provisioned, null);
    }

    /** A result without fencing token (leaseEpoch and claimGeneration absent). */
    public MountDone(String commandId, String nodeId, NodeCommandKind kind, String namespace, String volumeId,
                     String allocationId, Boolean success, String errorCode, String errorMessage,
                     Map<String, String> publishContext, String hostPath, String stagingPath, Instant completedAt) {
        this(commandId, nodeId, kind, namespace, volumeId, allocationId, success, errorCode, errorMessage,
                publishContext, hostPath, stagingPath, completedAt, null, null);
    }

    /** This result with the worker's lease epoch and the command's claim generation. */
    public MountDone withFencing(Long leaseEpoch, Long claimGeneration) {
        return new MountDone(commandId, nodeId, kind, namespace, volumeId, allocationId, success, errorCode,
                errorMessage, publishContext, hostPath, stagingPath, completedAt, leaseEpoch, claimGeneration, provisioned,
                snapshot, listed);
    }

    @Override
    public EventType eventType() {
        return EventType.MOUNT_DONE;
    }

    @Override
    public String recordKey() {
        return nodeId;
    }

    public boolean succeeded() {
        return Boolean.TRUE.equals(success);
    }

    @Override
    public void checkFields(Violations v) {
        v.text("commandId", commandId, 200);
        v.id("nodeId", nodeId);
        v.required("kind", kind);
        v.id("namespace", namespace);
        v.id("volumeId", volumeId);
        v.optionalId("allocationId", allocationId);
        v.required("success", success);
        if (Boolean.FALSE.equals(success)) {
            v.text("errorCode", errorCode, 64);
            v.text("errorMessage", errorMessage, 8192);
        }
        v.stringMap("publishContext", publishContext, 256);
        v.optionalText("hostPath", hostPath, 4096);
        v.optionalText("stagingPath", stagingPath, 4096);
        v.required("completedAt", completedAt);
        if ((kind == NodeCommandKind.CREATE_VOLUME || kind == NodeCommandKind.CONTROLLER_EXPAND) && Boolean.TRUE.equals(success)) {
            v.required("provisioned", provisioned);
        }
        if (provisioned != null) {
            provisioned.checkFields("provisioned.", v);
        }
        if (kind == NodeCommandKind.CREATE_SNAPSHOT && Boolean.TRUE.equals(success)) {
            v.required("snapshot", snapshot);
        }
        if (snapshot != null) {
            snapshot.checkFields("snapshot.", v);
        }
        if (kind == NodeCommandKind.LIST_VOLUMES && Boolean.TRUE.equals(success)) {
            v.required("listed", listed);
        }
        if (listed != null) {
            listed.checkFields("listed.", v);
        }
        if (leaseEpoch != null && leaseEpoch < 1) {
            v.add("leaseEpoch", leaseEpoch, "must be at least 1");
        }
        if (claimGeneration != null && claimGeneration < 0) {
            v.add("claimGeneration", claimGeneration, "must not be negative");
        }
    }
}
