package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.Map;

/**
 * A command for the worker of one node. Topic {@code node-commands}, key: node id; every command
 * for a node goes through this one topic, so their order per node is kept.
 *
 * @param commandId        unique per command; a redelivery carries the same id
 * @param nodeId           the node whose worker runs the command (for controller commands: the node
 *                         hosting the healthy controller instance)
 * @param kind             mount, unmount, controller-publish, controller-unpublish, create-volume, delete-volume,
 *                         create-snapshot, delete-snapshot, controller-expand-volume or node-expand-volume
 * @param externalVolumeId the volume's id in the storage provider; absent for create-volume
 * @param allocationId     required for mount and unmount
 * @param accessMode       required for mount and controller-publish
 * @param attachmentMode   required for mount and controller-publish
 * @param fsType           the file-system type to mount; flags travel only in {@code sealed}
 * @param externalNodeId   the claiming node's id in the storage provider; required for
 *                         controller commands
 * @param volumeContext    the volume's context for the plugin
 * @param publishContext   what the controller publish returned, for the node's stage/publish
 * @param sealed           secrets and mount flags, encrypted; optional
 * @param leaseEpoch       the node's lease epoch the sender knew when it issued the command (the fencing token); the
 *                         worker refuses a command of an older epoch than its own; null from a sender that predates
 *                         leases
 * @param claimGeneration  the volume's write generation of the claim this command serves (echoed in mount-done)
 * @param fenceOnLapse     for a mount: true = the worker unmounts it when its lease lapses (every mount, a reader's
 *                         too, of a volume whose failover is "fence"); absent means false
 * @param provision        for create-volume: the CSI name, capacity, parameters, topology and content source;
 *                         for create-snapshot: the snapshot's CSI name and parameters only (its source volume is
 *                         externalVolumeId); for delete-snapshot: sourceSnapshotId, the plugin's id of the snapshot
 * @param listing          for list-volumes (required): the page of CSI ListVolumes to read (issue 14)
 * @param withController   one node command per attach and per detach (issue 36), only when the claim's controller
 *                         instance runs on the claiming node itself (node-local drivers): for a mount, the worker
 *                         first makes the controller publication of the volume to {@code externalNodeId} on its own
 *                         controller instance of the plugin (CSI ControllerPublishVolume; skipped when its record
 *                         holds that publication already) and stages and publishes with the publish context it
 *                         returned; for an unmount, after NodeUnpublish and NodeUnstage it ends the publication
 *                         (ControllerUnpublishVolume) when no other allocation on the node uses the volume. Each
 *                         step is checkpointed in the worker's record, so a redelivery resumes at the first step not
 *                         done. Absent means false (the controller steps are commands of their own).
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record NodeCommand(
        String commandId,
        String nodeId,
        NodeCommandKind kind,
        String namespace,
        String volumeId,
        String pluginId,
        String externalVolumeId,
        String allocationId,
        AccessMode accessMode,
        AttachmentMode attachmentMode,
        Boolean readOnly,
        String fsType,
        String externalNodeId,
        Map<String, String> volumeContext,
        Map<String, String> publishContext,
        SealedSecrets sealed,
        Instant issuedAt,
        Long leaseEpoch,
        Long claimGeneration,
        Boolean fenceOnLapse,
        ProvisionSpec provision,
        VolumeListing listing,
        Boolean withController) implements ContractEvent {

    public NodeCommand {
        readOnly = readOnly != null && readOnly;
        volumeContext = Copies.map(volumeContext);
        publishContext = Copies.map(publishContext);
        fenceOnLapse = Boolean.TRUE.equals(fenceOnLapse) ? Boolean.TRUE : null;
        withController = Boolean.TRUE.equals(withController) ? Boolean.TRUE : null;
    }

    /** A command without the combined controller steps (every command before issue 36). */
    public NodeCommand(String commandId, String nodeId, NodeCommandKind kind, String namespace, String volumeId,
                       String pluginId, String externalVolumeId, String allocationId, AccessMode accessMode,
                       AttachmentMode attachmentMode, Boolean readOnly, String fsType, String externalNodeId,
                       Map<String, String> volumeContext, Map<String, String> publishContext, SealedSecrets sealed,
                       Instant issuedAt, Long leaseEpoch, Long claimGeneration, Boolean fenceOnLapse,
                       ProvisionSpec provision, VolumeListing listing) {
        this(commandId, nodeId, kind, namespace, volumeId, pluginId, externalVolumeId, allocationId, accessMode,
                attachmentMode, readOnly, fsType, externalNodeId, volumeContext, publishContext, sealed, issuedAt,
                leaseEpoch, claimGeneration, fenceOnLapse, provision, listing, null);
    }

    /** A command without listing (every kind but list-volumes). */
    public NodeCommand(String commandId, String nodeId, NodeCommandKind kind, String namespace, String volumeId,
                       String pluginId, String externalVolumeId, String allocationId, AccessMode accessMode,
                       AttachmentMode attachmentMode, Boolean readOnly, String fsType, String externalNodeId,
                       Map<String, String> volumeContext, Map<String, String> publishContext, SealedSecrets sealed,
                       Instant issuedAt, Long leaseEpoch, Long claimGeneration, Boolean fenceOnLapse,
                       ProvisionSpec provision) {
        this(commandId, nodeId, kind, namespace, volumeId, pluginId, externalVolumeId, allocationId, accessMode,
                attachmentMode, readOnly, fsType, externalNodeId, volumeContext, publishContext, sealed, issuedAt,
                leaseEpoch, claimGeneration, fenceOnLapse, provision, null);
    }

    /**
     * A list-volumes command (issue 14): CSI ListVolumes of {@code pluginId}, the page {@code listing}, on
     * {@code nodeId}'s controller instance; namespace {@link NodeCommandKind#LISTING_NAMESPACE}, volumeId the plugin.
     */
    public static NodeCommand listVolumes(String commandId, String nodeId, String pluginId, VolumeListing listing,
                                          Instant issuedAt) {
        return new NodeCommand(commandId, nodeId, NodeCommandKind.LIST_VOLUMES, NodeCommandKind.LISTING_NAMESPACE,
                pluginId, pluginId, null, null, null, null, false, null, null, Map.of(), Map.of(), null, issuedAt, null,
                null, null, null, listing);
    }

    /** A command without provision spec (every kind but create-volume). */
    public NodeCommand(String commandId, String nodeId, NodeCommandKind kind, String namespace, String volumeId,
                       String pluginId, String externalVolumeId, String allocationId, AccessMode accessMode,
                       AttachmentMode attachmentMode, Boolean readOnly, String fsType, String externalNodeId,
                       Map<String, String> volumeContext, Map<String, String> publishContext, SealedSecrets sealed,
                       Instant issuedAt, Long leaseEpoch, Long claimGeneration, Boolean fenceOnLapse) {
        this(commandId, nodeId, kind, namespace, volumeId, pluginId, externalVolumeId, allocationId, accessMode,
                attachmentMode, readOnly, fsType, externalNodeId, volumeContext, publishContext, sealed, issuedAt,
                leaseEpoch, claimGeneration, fenceOnLapse, null);
    }

    /** A command without fencing token (leaseEpoch, claimGeneration, fenceOnLapse absent). */
    public NodeCommand(String commandId, String nodeId, NodeCommandKind kind, String namespace, String volumeId,
                       String pluginId, String externalVolumeId, String allocationId, AccessMode accessMode,
                       AttachmentMode attachmentMode, Boolean readOnly, String fsType, String externalNodeId,
                       Map<String, String> volumeContext, Map<String, String> publishContext, SealedSecrets sealed,
                       Instant issuedAt) {
        this(commandId, nodeId, kind, namespace, volumeId, pluginId, externalVolumeId, allocationId, accessMode,
                attachmentMode, readOnly, fsType, externalNodeId, volumeContext, publishContext, sealed, issuedAt,
                null, null, null, null);
    }

    /** This command with the given fencing token and fence-on-lapse flag. */
    public NodeCommand withFencing(Long leaseEpoch, Long claimGeneration, Boolean fenceOnLapse) {
        return new NodeCommand(commandId, nodeId, kind, namespace, volumeId, pluginId, externalVolumeId, allocationId,
                accessMode, attachmentMode, readOnly, fsType, externalNodeId, volumeContext, publishContext, sealed,
                issuedAt, leaseEpoch, claimGeneration, fenceOnLapse, provision, listing, withController);
    }

    /** This command with the given provision spec (a create-volume). */
    public NodeCommand withProvision(ProvisionSpec spec) {
        return new NodeCommand(commandId, nodeId, kind, namespace, volumeId, pluginId, externalVolumeId, allocationId,
                accessMode, attachmentMode, readOnly, fsType, externalNodeId, volumeContext, publishContext, sealed,
                issuedAt, leaseEpoch, claimGeneration, fenceOnLapse, spec, listing, withController);
    }

    /**
     * This mount or unmount with the controller steps run by the worker itself ({@code withController}): the claim's
     * controller instance is on the claiming node.
     */
    public NodeCommand withControllerSteps() {
        return new NodeCommand(commandId, nodeId, kind, namespace, volumeId, pluginId, externalVolumeId, allocationId,
                accessMode, attachmentMode, readOnly, fsType, externalNodeId, volumeContext, publishContext, sealed,
                issuedAt, leaseEpoch, claimGeneration, fenceOnLapse, provision, listing, Boolean.TRUE);
    }

    /** Whether the worker runs the controller steps of this mount or unmount itself ({@code withController}). */
    public boolean controllerSteps() {
        return Boolean.TRUE.equals(withController);
    }

    /** Whether the worker must unmount this mount when its lease lapses. */
    public boolean fencesOnLapse() {
        return Boolean.TRUE.equals(fenceOnLapse);
    }

    @Override
    public EventType eventType() {
        return EventType.NODE_COMMAND;
    }

    @Override
    public String recordKey() {
        return nodeId;
    }

    @Override
    public void checkFields(Violations v) {
        v.text("commandId", commandId, 200);
        v.id("nodeId", nodeId);
        v.required("kind", kind);
        v.id("namespace", namespace);
        v.id("volumeId", volumeId);
        v.id("pluginId", pluginId);
        if (kind == NodeCommandKind.LIST_VOLUMES) {
            if (!NodeCommandKind.LISTING_NAMESPACE.equals(namespace)) {
                v.add("namespace", namespace, "a list-volumes command's namespace is " + NodeCommandKind.LISTING_NAMESPACE);
            }
            if (volumeId != null && !volumeId.equals(pluginId)) {
                v.add("volumeId", volumeId, "a list-volumes command's volumeId is its plugin id");
            }
            if (externalVolumeId != null) {
                v.add("externalVolumeId", externalVolumeId, "a list-volumes command names no volume");
            }
            v.required("listing", listing);
        } else if (listing != null) {
            v.add("listing", listing.maxEntries(), "only a list-volumes command carries a listing");
        }
        if (listing != null) {
            listing.checkFields("listing.", v);
        }
        if (kind == NodeCommandKind.LIST_VOLUMES) {
            // no volume: nothing more to check about one
        } else if (kind == NodeCommandKind.CREATE_VOLUME) {
            v.optionalText("externalVolumeId", externalVolumeId, 1024);
            v.required("provision", provision);
            v.required("accessMode", accessMode);
            v.required("attachmentMode", attachmentMode);
        } else {
            v.text("externalVolumeId", externalVolumeId, 1024);
        }
        if (provision != null) {
            provision.checkFields("provision.", v);
        }
        if (kind == NodeCommandKind.CREATE_SNAPSHOT) {
            v.required("provision", provision);
            if (provision != null && (provision.sourceSnapshotId() != null || provision.sourceVolumeId() != null
                    || !provision.topology().isEmpty() || provision.capacityMinBytes() != null
                    || provision.capacityMaxBytes() != null)) {
                v.add("provision", provision.name(), "a create-snapshot carries only the snapshot's name and parameters");
            }
        }
        if (kind == NodeCommandKind.DELETE_SNAPSHOT) {
            v.required("provision", provision);
            if (provision != null) {
                v.text("provision.sourceSnapshotId", provision.sourceSnapshotId(), 1024);
            }
        }
        if (kind != null && kind.expanding()) {
            v.required("provision", provision);
            if (provision != null && (provision.capacityMinBytes() == null || provision.capacityMinBytes() < 1)) {
                v.add("provision.capacityMinBytes", provision.capacityMinBytes(), "an expansion needs the new capacity (at least 1 byte)");
            }
            if (provision != null && (provision.sourceSnapshotId() != null || provision.sourceVolumeId() != null
                    || !provision.topology().isEmpty())) {
                v.add("provision", provision.name(), "an expansion carries only the volume's name and capacity");
            }
        }
        if (kind == NodeCommandKind.MOUNT || kind == NodeCommandKind.UNMOUNT) {
            v.id("allocationId", allocationId);
        } else {
            v.optionalId("allocationId", allocationId);
        }
        if (kind == NodeCommandKind.MOUNT || kind == NodeCommandKind.CONTROLLER_PUBLISH) {
            v.required("accessMode", accessMode);
            v.required("attachmentMode", attachmentMode);
        }
        if (Boolean.TRUE.equals(withController) && kind != NodeCommandKind.MOUNT && kind != NodeCommandKind.UNMOUNT) {
            v.add("withController", withController, "only a mount or an unmount runs the controller steps itself");
        }
        if (kind == NodeCommandKind.CONTROLLER_PUBLISH || kind == NodeCommandKind.CONTROLLER_UNPUBLISH
                || Boolean.TRUE.equals(withController)) {
            v.text("externalNodeId", externalNodeId, 1024);
        } else {
            v.optionalText("externalNodeId", externalNodeId, 1024);
        }
        if (fsType != null) {
            new MountOptions(fsType, null).checkFields("", v);
        }
        v.stringMap("volumeContext", volumeContext, 256);
        v.stringMap("publishContext", publishContext, 256);
        if (sealed != null) {
            sealed.checkFields("sealed", v);
        }
        v.required("issuedAt", issuedAt);
        if (leaseEpoch != null && leaseEpoch < 1) {
            v.add("leaseEpoch", leaseEpoch, "must be at least 1");
        }
        if (claimGeneration != null && claimGeneration < 0) {
            v.add("claimGeneration", claimGeneration, "must not be negative");
        }
    }
}
