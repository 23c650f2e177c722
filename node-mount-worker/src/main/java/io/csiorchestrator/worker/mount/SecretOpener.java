package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretKeyring;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;

/** Opens sealed secrets for one volume (namespace/volume id is the associated data). */
@FunctionalInterface
public interface SecretOpener {

    SecretPayload open(SealedSecrets sealed, String namespace, String volumeId);

    /**
     * Opens with {@code keyring} ({@code csi.secrets.keyring}, {@code csi.secrets.active-key}); without a
     * keyring (null or blank) a command without sealed secrets passes and one with them fails.
     */
    static SecretOpener fromKeyring(String keyring, String activeKey) {
        if (keyring == null || keyring.isBlank()) {
            return (sealed, ns, vol) -> {
                if (sealed == null) {
                    return SecretPayload.EMPTY;
                }
                throw new IllegalStateException("the command carries sealed secrets but csi.secrets.keyring is not "
                        + "configured on this node");
            };
        }
        SecretSealer sealer = new SecretSealer(SecretKeyring.parse(keyring, activeKey));
        return (sealed, ns, vol) -> sealer.open(sealed, SecretSealer.associatedData(ns, vol));
    }
}
