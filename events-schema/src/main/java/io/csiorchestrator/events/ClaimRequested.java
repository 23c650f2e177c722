package io.csiorchestrator.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.time.Instant;
import java.util.List;
import java.util.Map;

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
 * @param mountOptions the fs type that replaces the volume's; optional. Its {@code mountFlags} must be
 *                     empty: flags may carry credentials and never travel in plain text, so a record
 *                     with plain flags is malformed (dead-lettered)
 * @param sealedMountFlags the mount flags that replace the volume's, sealed for claim-service's public key
 *                     for {@code namespace/volumeId} (a {@link SecretPayload} with no secrets, see
 *                     {@link #sealFlags}); optional
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
        SealedSecrets sealedMountFlags,
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
        // The fs type stays plain; flags only ever travel sealed (they may hold credentials).
        new MountOptions(mountOptions.fsType(), null).checkFields("mountOptions", v);
        if (!mountOptions.mountFlags().isEmpty()) {
            v.addRedacted("mountOptions.mountFlags", "must not carry mount flags in plain text ("
                    + mountOptions.mountFlags().size() + " given, values not shown): seal them into sealedMountFlags"
                    + " for claim-service's public key (ClaimRequested.sealFlags)");
        }
        if (sealedMountFlags != null) {
            sealedMountFlags.checkFields("sealedMountFlags", v);
        }
    }

    /**
     * Seals {@code mountFlags} for a claim-requested of volume {@code namespace/volumeId}: the value
     * of {@link #sealedMountFlags}. Null when there are no flags. Throws an
     * {@link IllegalArgumentException} naming the flag's index (never its value) if a flag is invalid.
     */
    public static SealedSecrets sealFlags(io.csiorchestrator.events.identity.TrustSet.Entry claimService, String namespace,
                                          String volumeId, List<String> mountFlags) {
        if (mountFlags == null || mountFlags.isEmpty()) {
            return null;
        }
        Violations v = new Violations();
        MountOptions.checkFlags("mountFlags", mountFlags, v);
        if (!v.isEmpty()) {
            throw new IllegalArgumentException("invalid mount flags for " + SecretSealer.associatedData(namespace, volumeId)
                    + ": " + v.list());
        }
        return SecretSealer.seal(new SecretPayload(Map.of(), mountFlags), claimService, namespace, volumeId);
    }

    /**
     * The mount flags of {@link #sealedMountFlags}, opened with {@code sealer}; empty without sealed
     * flags. Throws {@link SecretSealer.SecretUnsealException} (naming the key id, never material)
     * when they cannot be opened: unknown key, tampered, or sealed for another volume.
     */
    public List<String> openMountFlags(SecretSealer.Opener opener) {
        if (sealedMountFlags == null) {
            return List.of();
        }
        return opener.open(sealedMountFlags, namespace, volumeId).mountFlags();
    }
}
