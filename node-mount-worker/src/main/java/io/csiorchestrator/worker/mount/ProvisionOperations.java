package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.ProvisionSpec;
import io.csiorchestrator.events.ProvisionedSnapshot;
import io.csiorchestrator.events.ProvisionedVolume;
import io.csiorchestrator.events.SecretPayload;
import java.time.Clock;
import java.util.Map;
import java.util.Optional;

/**
 * The create-volume, delete-volume, create-snapshot, delete-snapshot and controller-expand-volume commands (issue 14)
 * on the node hosting a healthy controller instance of the plugin: CSI CreateVolume (idempotent by the command's CSI
 * name: a redelivered or re-sent command gets the same volume), DeleteVolume (NOT_FOUND is done) and
 * ControllerExpandVolume (idempotent: a volume already as large answers its capacity), and list-volumes, one page of
 * CSI ListVolumes for claim-service's reconciliation. They hold no node state: no record, no mount, nothing to restore;
 * claim-service records the request before it sends it and the answer when it comes.
 */
final class ProvisionOperations {

    /** A create-snapshot's answer while the plugin's snapshot is not ready_to_use: re-send it later (same name). */
    public static final String SNAPSHOT_NOT_READY = "SNAPSHOT_NOT_READY";

    private final String nodeId;
    private final PluginDirectory plugins;
    private final SecretOpener secrets;
    private final Clock clock;

    ProvisionOperations(String nodeId, PluginDirectory plugins, SecretOpener secrets, Clock clock) {
        this.nodeId = nodeId;
        this.plugins = plugins;
        this.secrets = secrets;
        this.clock = clock;
    }

    MountDone execute(NodeCommand command) {
        if (!nodeId.equals(command.nodeId())) {
            return failed(command, VolumeOperations.INVALID_COMMAND, "command for node '" + command.nodeId()
                    + "' reached the worker of node '" + nodeId + "'");
        }
        Optional<ControllerVolumePlugin> found = plugins.controller(command.pluginId());
        if (found.isEmpty()) {
            return failed(command, VolumeOperations.PLUGIN_NOT_FOUND, "CSI plugin '" + command.pluginId()
                    + "' has no healthy controller instance on node " + nodeId);
        }
        if (command.kind() == NodeCommandKind.LIST_VOLUMES) {
            // claim-service's reconciliation (issue 14): one page of the plugin's volumes; no secrets, no volume
            try {
                return MountDone.listed(command, nodeId, found.get().listVolumes(command.listing().startingToken(),
                        command.listing().maxEntries()), clock.instant());
            } catch (PluginCallFailure failure) {
                return failed(command, failure.code(), failure.getMessage());
            }
        }
        SecretPayload opened;
        try {
            opened = secrets.open(command.sealed(), command.namespace(), command.volumeId());
        } catch (RuntimeException e) {
            return failed(command, VolumeOperations.SECRETS_UNREADABLE, e.getMessage());
        }
        try {
            if (command.kind() == NodeCommandKind.CREATE_SNAPSHOT) {
                ProvisionedSnapshot snapshot = found.get().createSnapshot(command.provision().name(),
                        command.externalVolumeId(), command.provision().parameters(), opened.secrets());
                if (!Boolean.TRUE.equals(snapshot.readyToUse())) {
                    // CSI: poll CreateSnapshot (same name) until ready_to_use; claim-service re-sends it with backoff
                    return failed(command, SNAPSHOT_NOT_READY, "snapshot " + snapshot.externalSnapshotId()
                            + " of " + command.externalVolumeId() + " is not ready to use yet");
                }
                return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                        null, true, null, null, Map.of(), null, null, clock.instant(), null, null, null, snapshot);
            }
            if (command.kind() == NodeCommandKind.DELETE_SNAPSHOT) {
                found.get().deleteSnapshot(command.provision().sourceSnapshotId(), opened.secrets());
                return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                        null, true, null, null, Map.of(), null, null, clock.instant());
            }
            if (command.kind() == NodeCommandKind.CONTROLLER_EXPAND) {
                ProvisionSpec spec = command.provision();
                ProvisionedVolume expanded = found.get().controllerExpand(command.externalVolumeId(),
                        spec.capacityMinBytes(), spec.capacityMaxBytes() == null ? 0 : spec.capacityMaxBytes(),
                        opened.secrets());
                return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                        null, true, null, null, Map.of(), null, null, clock.instant(), null, null, expanded);
            }
            if (command.kind() == NodeCommandKind.CREATE_VOLUME) {
                VolumeRequest request = new VolumeRequest(null, command.accessMode(), command.attachmentMode(),
                        command.fsType(), opened.mountFlags(), opened.secrets(), Map.of(), Map.of(), false, null, null);
                ProvisionedVolume volume = found.get().createVolume(request, command.provision());
                return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                        null, true, null, null, Map.of(), null, null, clock.instant(), null, null, volume);
            }
            found.get().deleteVolume(command.externalVolumeId(), opened.secrets());
            return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                    null, true, null, null, Map.of(), null, null, clock.instant());
        } catch (PluginCallFailure failure) {
            return failed(command, failure.code(), failure.getMessage());
        }
    }

    private MountDone failed(NodeCommand command, String code, String message) {
        String text = message == null || message.isBlank() ? code : message;
        return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                null, false, code, text, Map.of(), null, null, clock.instant());
    }
}
