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
 * {@code fenceOnLapse} comes from the mount command (issue 19): true = the worker unmounts this publication when its
 * lease lapses ({@link io.csiorchestrator.worker.lease.FencePlan}); absent (records written before it was kept, or
 * false) means false.
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
        String commandId,
        Boolean fenceOnLapse) {

    public Usage {
        volumeContext = volumeContext == null ? Map.of() : Map.copyOf(volumeContext);
        publishContext = publishContext == null ? Map.of() : Map.copyOf(publishContext);
        fenceOnLapse = Boolean.TRUE.equals(fenceOnLapse) ? Boolean.TRUE : null;
    }

    /** A usage not fenced on a lapse. */
    public Usage(String allocationId, String targetPath, boolean readOnly, AccessMode accessMode,
                 AttachmentMode attachmentMode, String fsType, Map<String, String> volumeContext,
                 Map<String, String> publishContext, SealedSecrets sealed, PublishState state, String commandId) {
        this(allocationId, targetPath, readOnly, accessMode, attachmentMode, fsType, volumeContext, publishContext,
                sealed, state, commandId, null);
    }

    /** Whether the worker unmounts this publication when its lease lapses. */
    @com.fasterxml.jackson.annotation.JsonIgnore
    public boolean fencesOnLapse() {
        return Boolean.TRUE.equals(fenceOnLapse);
    }

    public Usage withState(PublishState newState) {
        return new Usage(allocationId, targetPath, readOnly, accessMode, attachmentMode, fsType, volumeContext,
                publishContext, sealed, newState, commandId, fenceOnLapse);
    }
}
