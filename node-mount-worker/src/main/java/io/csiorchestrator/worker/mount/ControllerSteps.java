package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.worker.state.StageState;
import io.csiorchestrator.worker.state.Usage;
import io.csiorchestrator.worker.state.VolumeKey;
import io.csiorchestrator.worker.state.VolumeRecord;
import java.io.IOException;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * The controller steps of a mount or unmount that carries them ({@code NodeCommand.withController}, issue 36): the
 * claim's controller instance runs on this node, so one node command makes the whole attach (ControllerPublishVolume,
 * NodeStageVolume, NodePublishVolume) or the whole detach (NodeUnpublishVolume, NodeUnstageVolume,
 * ControllerUnpublishVolume), in the CSI order. {@link VolumeOperations} runs the node steps and calls these two
 * around them, on the volume's own thread.
 *
 * <p>Crash safety as for the node steps: the controller publication (external node id -> publish context) is written
 * to the record durably before the node steps use it, so a redelivered command (a crash between two calls) or a
 * re-sent one (after a retryable failure) finds it and does not call ControllerPublishVolume again. Its removal
 * after ControllerUnpublishVolume is a checkpoint (made durable with the command's result): lost at a crash, the
 * redelivered unmount calls ControllerUnpublishVolume again, which is idempotent.
 */
final class ControllerSteps {

    private static final Logger LOG = Logger.getLogger(ControllerSteps.class.getName());

    /** How the steps read and keep the volume's record: {@link VolumeOperations}'s own. */
    interface Records {
        VolumeRecord get(VolumeKey key);

        /** Written durably (file and directory fsync-ed) before it returns. */
        VolumeRecord save(VolumeRecord record) throws IOException;

        /** Kept in memory; durable with the command's result. */
        VolumeRecord checkpoint(VolumeRecord record);
    }

    private final String nodeId;
    private final PluginDirectory plugins;
    private final SecretOpener secrets;
    private final Records records;

    ControllerSteps(String nodeId, PluginDirectory plugins, SecretOpener secrets, Records records) {
        this.nodeId = nodeId;
        this.plugins = plugins;
        this.secrets = secrets;
        this.records = records;
    }

    /**
     * The publish context a mount stages and publishes with: for a mount with controller steps whose record already
     * holds the controller publication to the command's external node, the context recorded with it; else the
     * command's own.
     */
    static Map<String, String> publishContext(VolumeRecord record, NodeCommand command) {
        if (command.controllerSteps()) {
            Map<String, String> recorded = record.controllerPublications().get(command.externalNodeId());
            if (recorded != null) {
                return recorded;
            }
        }
        return command.publishContext();
    }

    /**
     * The mount's controller step, after its usage reference is recorded and before anything is staged: unless the
     * record holds the controller publication of the volume to {@code command.externalNodeId()}, ControllerPublishVolume
     * on this node's controller instance of the plugin, then the publication and {@code usage} with the returned
     * context, written durably. Returns the usage to stage and publish with (the publish context in it). The
     * publication's read-only flag is the volume's access mode's (true only for the reader-only modes), as for a
     * controller-publish command: it is shared by every allocation of the volume on this node.
     *
     * @param unusedBefore nothing of the volume was in use or staged on this node before this mount: a recorded
     *                     publication is not trusted then (it may have been ended by a controller-unpublish sent to
     *                     another node's controller, e.g. after this node was fenced) and ControllerPublishVolume,
     *                     idempotent, is called again
     *
     * @throws PluginCallFailure the plugin's failure, or PLUGIN_NOT_FOUND without a healthy controller instance here;
     *                           nothing is recorded then
     */
    Usage publish(NodeCommand command, VolumeKey key, Usage usage, SecretPayload opened, boolean unusedBefore)
            throws IOException {
        VolumeRecord record = records.get(key);
        Map<String, String> recorded = record.controllerPublications().get(command.externalNodeId());
        if (recorded != null && !unusedBefore) {
            LOG.fine(() -> "volume " + key + " is published to node " + command.externalNodeId()
                    + " already (the record holds it); no ControllerPublishVolume");
            return usage;
        }
        ControllerVolumePlugin controller = controller(command, key, "published");
        VolumeRequest request = new VolumeRequest(record.externalVolumeId(), command.accessMode(),
                command.attachmentMode(), command.fsType(), opened.mountFlags(), opened.secrets(),
                command.volumeContext(), Map.of(), command.accessMode() != null && !command.accessMode().allowsWrite(),
                null, null);
        Map<String, String> context = controller.controllerPublish(request, command.externalNodeId());
        Usage published = new Usage(usage.allocationId(), usage.targetPath(), usage.readOnly(), usage.accessMode(),
                usage.attachmentMode(), usage.fsType(), usage.volumeContext(), context, usage.sealed(), usage.state(),
                usage.commandId(), usage.fenceOnLapse());
        records.save(records.get(key).withControllerPublication(command.externalNodeId(), context)
                .withUsage(published));
        return published;
    }

    /**
     * The unmount's controller step, after its node steps are done and recorded: when no allocation on this node
     * uses the volume any more (no usage in the record) and it is unstaged, ControllerUnpublishVolume of it from
     * {@code command.externalNodeId()} on this node's controller instance (also when the record does not hold the
     * publication: an uncertain earlier ControllerPublishVolume may have made it; NOT_FOUND counts as done), then the
     * publication leaves the record. Returns whether the call was made.
     *
     * @throws PluginCallFailure the plugin's failure, SECRETS_UNREADABLE, or PLUGIN_NOT_FOUND without a healthy
     *                           controller instance here; the record keeps the publication then
     */
    boolean unpublishIfUnused(NodeCommand command, VolumeKey key) {
        VolumeRecord record = records.get(key);
        if (record != null && (!record.usages().isEmpty() || record.stage() != StageState.UNSTAGED)) {
            LOG.fine(() -> "volume " + key + " is still used on node " + nodeId
                    + "; its controller publication stays");
            return false;
        }
        ControllerVolumePlugin controller = controller(command, key, "unpublished");
        SecretPayload opened;
        try {
            opened = secrets.open(command.sealed(), key.namespace(), key.volumeId());
        } catch (RuntimeException e) {
            throw new PluginCallFailure(VolumeOperations.SECRETS_UNREADABLE, e.getMessage(), false);
        }
        String externalVolumeId = record != null ? record.externalVolumeId() : command.externalVolumeId();
        try {
            controller.controllerUnpublish(externalVolumeId, command.externalNodeId(), opened.secrets());
        } catch (PluginCallFailure failure) {
            if (!"NOT_FOUND".equals(failure.code())) {
                throw failure;
            }
            // the csi-client already counts it as done; another implementation of the interface may not
        }
        VolumeRecord now = records.get(key);
        if (now != null) {
            records.checkpoint(now.withoutControllerPublication(command.externalNodeId()));
        }
        return true;
    }

    private ControllerVolumePlugin controller(NodeCommand command, VolumeKey key, String what) {
        Optional<ControllerVolumePlugin> found = plugins.controller(command.pluginId());
        if (found.isEmpty()) {
            throw new PluginCallFailure(VolumeOperations.PLUGIN_NOT_FOUND, "CSI plugin '" + command.pluginId()
                    + "' has no healthy controller instance on node " + nodeId + "; volume " + key + " cannot be "
                    + what + " to node " + command.externalNodeId() + " from here (the command carries the"
                    + " controller steps)", false);
        }
        return found.get();
    }
}
