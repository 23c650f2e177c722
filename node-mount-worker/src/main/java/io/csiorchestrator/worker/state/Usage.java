package io.csiorchestrator.worker.state;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.SealedSecrets;
import java.util.Map;

/**
 * One allocation using the volume on this node, with everything needed to publish it again
 * after a crash or a plugin restart (secrets only in their sealed form), and the id of the mount command that made
 * it ({@code commandId}; absent in records written before it was kept), reported in the node's actual state.
 */
@JsonInclude(JsonInclude.Include.NON_EMPTY)
public record Usage(
        String allocationId,
        String targetPath,
        boolean readOnly,
        AccessMode accessMode,
        AttachmentMode attachmentMode,
        String fsType,
        Map<String, String> volumeContext,
        Map<String, String> publishContext,
        SealedSecrets sealed,
        PublishState state,
        String commandId) {

    public Usage {
        volumeContext = volumeContext == null ? Map.of() : Map.copyOf(volumeContext);
        publishContext = publishContext == null ? Map.of() : Map.copyOf(publishContext);
    }

    public Usage withState(PublishState newState) {
        return new Usage(allocationId, targetPath, readOnly, accessMode, attachmentMode, fsType, volumeContext,
                publishContext, sealed, newState, commandId);
    }
}
