package io.csiorchestrator.claims.provision;

import io.csiorchestrator.claims.domain.ProvisionMachine.Phase;
import io.csiorchestrator.claims.store.ProvisionEntity;
import io.csiorchestrator.claims.store.SnapshotEntity;
import io.csiorchestrator.events.VolumeState;
import io.csiorchestrator.events.VolumeStatus;
import java.time.Instant;

/**
 * The volume-status events of {@link io.csiorchestrator.claims.domain.ProvisionMachine.Report}s (issue 14): each
 * result of a create, delete or expansion, for schedulers. Written to the outbox in the transaction that records the
 * result, so a result is published exactly when it is committed (never lost to a crash, never published for a
 * rolled-back one), and once: the transition that reports it happens once (an answer is matched by its command id,
 * a redelivered one changes nothing).
 */
final class VolumeResults {

    /** volume-status' limit on {@code reason}. */
    static final int MAX_REASON = 4096;

    private VolumeResults() {
    }

    /** The result of a volume's create or delete. */
    static VolumeStatus of(ProvisionEntity p, Phase phase, String reason) {
        VolumeState state = state(phase);
        return new VolumeStatus(p.namespace, p.volumeId, null, p.pluginId, state,
                state == VolumeState.CREATED ? p.externalId : null, state == VolumeState.CREATED ? p.capacityBytes : null,
                reason(reason), Instant.now());
    }

    /**
     * The end of a volume's expansion: {@code expanded} (phase CREATED again; the plugin's id and the capacity it
     * reports now) or {@code expand-failed} (the reason; the capacity the controller last reported, when known).
     */
    static VolumeStatus expansion(ProvisionEntity p, Phase phase, String reason) {
        VolumeState state = switch (phase) {
            case CREATED -> VolumeState.EXPANDED;
            case EXPAND_FAILED -> VolumeState.EXPAND_FAILED;
            default -> throw new IllegalArgumentException(phase + " is not the end of an expansion");
        };
        Long capacity = p.capacityBytes != null ? p.capacityBytes : state == VolumeState.EXPANDED ? p.expandToBytes : null;
        return new VolumeStatus(p.namespace, p.volumeId, null, p.pluginId, state, p.externalId, capacity,
                reason(reason), Instant.now());
    }

    /** The result of a snapshot's create (created: ready to use) or delete, keyed by its source volume. */
    static VolumeStatus of(SnapshotEntity s, Phase phase, String reason) {
        VolumeState state = state(phase);
        String volumeId = s.sourceVolumeKey.substring(s.sourceVolumeKey.indexOf('/') + 1);
        return new VolumeStatus(s.namespace, volumeId, s.snapshotId, s.pluginId, state,
                state == VolumeState.CREATED ? s.externalId : null, state == VolumeState.CREATED ? s.sizeBytes : null,
                reason(reason), Instant.now());
    }

    static VolumeState state(Phase phase) {
        return switch (phase) {
            case CREATED -> VolumeState.CREATED;
            case CREATE_FAILED -> VolumeState.CREATE_FAILED;
            case DELETED -> VolumeState.DELETED;
            case DELETE_FAILED -> VolumeState.DELETE_FAILED;
            default -> throw new IllegalArgumentException(phase + " is not a result");
        };
    }

    /**
     * {@code reason} as the contract takes it: control characters (a plugin's message may hold a newline) become
     * spaces, and it is cut to {@link #MAX_REASON} characters; null or blank stays null.
     */
    static String reason(String reason) {
        if (reason == null || reason.isBlank()) {
            return null;
        }
        String printable = reason.replaceAll("\\p{Cntrl}", " ").strip();
        return printable.length() <= MAX_REASON ? printable : printable.substring(0, MAX_REASON - 1) + "…";
    }
}
