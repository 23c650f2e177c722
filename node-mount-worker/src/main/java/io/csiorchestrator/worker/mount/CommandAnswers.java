package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import java.time.Clock;
import java.util.Map;

/** This node's answers ({@code mount-done}) to a command: succeeded, or failed with a code and a message. */
final class CommandAnswers {

    private final String nodeId;
    private final Clock clock;

    CommandAnswers(String nodeId, Clock clock) {
        this.nodeId = nodeId;
        this.clock = clock;
    }

    MountDone succeeded(NodeCommand command, String hostPath, String stagingPath) {
        return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                command.allocationId(), true, null, null, Map.of(), hostPath, stagingPath, clock.instant());
    }

    /** A failure; its message is {@code code} when the plugin gave none. */
    MountDone failed(NodeCommand command, String code, String message, String hostPath, String stagingPath) {
        String text = message == null || message.isBlank() ? code : message;
        return new MountDone(command.commandId(), nodeId, command.kind(), command.namespace(), command.volumeId(),
                command.allocationId(), false, code, text, Map.of(), hostPath, stagingPath, clock.instant());
    }
}
