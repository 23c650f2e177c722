package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.SealingKeyFile;
import java.nio.file.Path;

/**
 * Opens sealed secrets for one volume (namespace/volume id) with this node's own sealing keys (issue 20 item 4): only
 * what claim-service sealed for {@code node:<this node>}; a value sealed for another node is refused naming its
 * recipient and key id.
 */
@FunctionalInterface
public interface SecretOpener {

    SecretPayload open(SealedSecrets sealed, String namespace, String volumeId);

    /**
     * Opens with node {@code nodeId}'s sealing key file ({@code csi.worker.seal-key-file}; a file of another node is
     * refused here); without one (null), a command without sealed secrets passes and one with them fails.
     */
    static SecretOpener forNode(String nodeId, Path sealKeyFile) {
        if (sealKeyFile == null) {
            return none();
        }
        SealingKeyFile keys = new SealingKeyFile(sealKeyFile, Principal.node(nodeId));
        return keys::open;
    }

    /** Opens nothing: a command with sealed secrets fails (no sealing key configured on this node). */
    static SecretOpener none() {
        return (sealed, ns, vol) -> {
            if (sealed == null) {
                return SecretPayload.EMPTY;
            }
            throw new IllegalStateException("the command carries secrets sealed for " + sealed.recipient() + " (key '"
                    + sealed.keyId() + "') but no sealing key (csi.worker.seal-key-file) is configured on this node");
        };
    }
}
