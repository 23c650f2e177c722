package io.csiorchestrator.claims;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretKeyring;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Seals volume secrets and mount flags with the configured keyring ({@code csi.secrets.keyring},
 * {@code csi.secrets.active-key}); the only form in which they are stored or sent.
 */
@ApplicationScoped
public class Secrets {

    private final SecretSealer sealer;

    public Secrets(@ConfigProperty(name = "csi.secrets.keyring") String keyring,
                   @ConfigProperty(name = "csi.secrets.active-key") Optional<String> activeKey) {
        this.sealer = new SecretSealer(SecretKeyring.parse(keyring, activeKey.orElse(null)));
    }

    /** The sealed payload as stored JSON, or null when there is nothing secret. */
    public String sealToJson(SecretPayload payload, String namespace, String volumeId) {
        if (payload == null || payload.isEmpty()) {
            return null;
        }
        SealedSecrets sealed = sealer.seal(payload, SecretSealer.associatedData(namespace, volumeId));
        try {
            return EventCodec.mapper().writeValueAsString(sealed);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("could not store sealed secrets", e);
        }
    }

    public SealedSecrets fromJson(String json) {
        if (json == null) {
            return null;
        }
        try {
            return EventCodec.mapper().readValue(json, SealedSecrets.class);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("stored sealed secrets are unreadable");
        }
    }

    /**
     * The mount flags a claim-requested carries sealed ({@link ClaimRequested#sealedMountFlags}), empty
     * without. Throws {@link SecretSealer.SecretUnsealException} naming the key id (never material)
     * when they cannot be opened here.
     */
    public List<String> mountFlagsOf(ClaimRequested request) {
        return request.openMountFlags(sealer);
    }

    public SecretPayload open(String json, String namespace, String volumeId) {
        SealedSecrets sealed = fromJson(json);
        return sealed == null ? SecretPayload.EMPTY : sealer.open(sealed, SecretSealer.associatedData(namespace, volumeId));
    }
}
