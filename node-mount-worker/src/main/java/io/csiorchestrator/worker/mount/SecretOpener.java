package io.csiorchestrator.worker.mount;

import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretPayload;

/** Opens sealed secrets for one volume (namespace/volume id is the associated data). */
@FunctionalInterface
public interface SecretOpener {

    SecretPayload open(SealedSecrets sealed, String namespace, String volumeId);
}
