package io.csiorchestrator.claims;

import com.fasterxml.jackson.core.JsonProcessingException;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.SealedSecrets;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.SealingKeyFile;
import io.csiorchestrator.events.identity.SealingKeys;
import io.csiorchestrator.events.identity.TrustSet;
import io.csiorchestrator.support.security.RecordAuthenticity;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Volume secrets and mount flags, sealed (issue 20 item 4). At rest (volumes, claims, provisions) they are sealed for
 * claim-service itself ({@code claim-service}'s newest key in its sealing key file, {@code csi.secrets.seal-key-file});
 * schedulers seal mount flags for claim-service's public key (the trust file's newest {@code enc} key of
 * {@code claim-service}); a node command carries them re-sealed for its target node only (that node's newest
 * {@code enc} key in the trust file, {@code csi.security.trust-file}), so no node can open another node's.
 */
@ApplicationScoped
public class Secrets {

    public static final Principal SELF = Principal.service("claim-service");

    private final SealingKeyFile own;
    private final RecordAuthenticity authenticity;

    public Secrets(@ConfigProperty(name = "csi.secrets.seal-key-file") Optional<String> sealKeyFile,
                   RecordAuthenticity authenticity) {
        String file = sealKeyFile.filter(s -> !s.isBlank()).orElseThrow(() -> new IllegalStateException(
                "csi.secrets.seal-key-file (CSI_SEAL_KEY_FILE) is required: claim-service's X25519 sealing keys "
                        + "(./csi identity seal-key claim-service makes one); its public key goes into the trust file"));
        this.own = new SealingKeyFile(Path.of(file), SELF);
        this.authenticity = authenticity;
    }

    /** The sealed payload as stored JSON (sealed for claim-service itself), or null when there is nothing secret. */
    public String sealToJson(SecretPayload payload, String namespace, String volumeId) {
        if (payload == null || payload.isEmpty()) {
            return null;
        }
        SealingKeys keys = own.keys();
        return toJson(SecretSealer.seal(payload, keys.publicEntry(keys.newest()), namespace, volumeId));
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
     * The stored secrets ({@code json}, sealed for claim-service) re-sealed for node {@code nodeId} only: what a node
     * command carries. Null when nothing is stored. Throws {@link IllegalStateException} naming the node when the trust
     * file publishes no sealing key for it.
     */
    public SealedSecrets forNode(String json, String nodeId, String namespace, String volumeId) {
        SecretPayload payload = open(json, namespace, volumeId);
        if (json == null || payload.isEmpty()) {
            return null;
        }
        Principal node = Principal.node(nodeId);
        TrustSet.Entry key = authenticity.trust(false).sealingKey(node)
                .or(() -> authenticity.trust(true).sealingKey(node))
                .orElseThrow(() -> new IllegalStateException("cannot seal the secrets of " + namespace + "/" + volumeId
                        + " for " + node + ": the trust file has no sealing (enc) key for it (./csi identity join-node "
                        + nodeId + ")"));
        return SecretSealer.seal(payload, key, namespace, volumeId);
    }

    /**
     * The mount flags a claim-requested carries sealed for claim-service ({@link ClaimRequested#sealedMountFlags}),
     * empty without. Throws {@link SecretSealer.SecretUnsealException} naming the recipient and key id (never material)
     * when they cannot be opened here.
     */
    public List<String> mountFlagsOf(ClaimRequested request) {
        return request.openMountFlags(own);
    }

    public SecretPayload open(String json, String namespace, String volumeId) {
        SealedSecrets sealed = fromJson(json);
        return sealed == null ? SecretPayload.EMPTY : own.open(sealed, namespace, volumeId);
    }

    private static String toJson(SealedSecrets sealed) {
        try {
            return EventCodec.mapper().writeValueAsString(sealed);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("could not store sealed secrets", e);
        }
    }
}
