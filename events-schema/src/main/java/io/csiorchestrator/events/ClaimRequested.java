package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;

/**
 * An upstream scheduler asks to claim a volume for an allocation on a node (read or write), or
 * to release an allocation's claim. Topic {@code claim-requested}, key: volume id.
 *
 * @param requestId    the producer's id for this request; redeliveries carry the same id
 * @param mode         read, write or release
 * @param nodeId       the node the allocation runs on; required for read and write
 * @param accessMode   required for read and write
 * @param attachmentMode required for read and write
 * @param readOnly     mount read-only (a read claim is always mounted read-only)
 * @param mountOptions fs type and flags that replace the volume's; optional
 * @param mountSupport what the task driver can mount; absent means {@link MountSupport#ALL}
 * @param requestedAt  when the scheduler made the request; optional
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ClaimRequested(
        String requestId,
        String namespace,
        String volumeId,
        String allocationId,
        String nodeId,
        ClaimMode mode,
        AccessMode accessMode,
        AttachmentMode attachmentMode,
        Boolean readOnly,
        MountOptions mountOptions,
        MountSupport mountSupport,
        Instant requestedAt) implements ContractEvent {

    public ClaimRequested {
        readOnly = readOnly != null && readOnly;
        mountOptions = mountOptions == null ? MountOptions.NONE : mountOptions;
        mountSupport = mountSupport == null ? MountSupport.ALL : mountSupport;
    }

    @Override
    public EventType eventType() {
        return EventType.CLAIM_REQUESTED;
    }

    @Override
    public String recordKey() {
        return volumeId;
    }

    @Override
    public void checkFields(Violations v) {
        v.text("requestId", requestId, 200);
        v.id("namespace", namespace);
        v.id("volumeId", volumeId);
        v.id("allocationId", allocationId);
        v.required("mode", mode);
        if (mode == ClaimMode.READ || mode == ClaimMode.WRITE) {
            v.id("nodeId", nodeId);
            v.required("accessMode", accessMode);
            v.required("attachmentMode", attachmentMode);
        } else {
            v.optionalId("nodeId", nodeId);
        }
        mountOptions.checkFields("mountOptions", v);
    }
}
