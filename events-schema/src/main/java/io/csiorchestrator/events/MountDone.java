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
        Instant completedAt) implements ContractEvent {

    public MountDone {
        publishContext = Copies.map(publishContext);
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
    }
}
