package io.csiorchestrator.events;

import io.csiorchestrator.events.identity.Principal;
import java.util.Base64;
import java.util.regex.Pattern;

/**
 * Volume secrets and mount flags sealed for one recipient (issue 20 item 4): the only form in which secrets travel on
 * a topic or rest in a database. Ephemeral-static X25519 (as HPKE's base mode or age): a fresh key pair per value,
 * its agreement with the recipient's public key (key id {@code keyId}, published in the trust file) through
 * HKDF-SHA256 gives the AES-256-GCM key. The associated data binds the recipient ({@code node:<id>} or
 * {@code claim-service}), the key id and the volume ({@code namespace/volumeId}): a sealed value opens only with that
 * recipient's private key and only for that volume ({@link SecretSealer}).
 *
 * @param keyId      the recipient's key id (an {@code enc} key of the trust file)
 * @param algorithm  always {@value #ALGORITHM}
 * @param recipient  who may open it: {@code node:<id>} or {@code claim-service}
 * @param epk        the ephemeral X25519 public key, 32 bytes, base64
 * @param nonce      the 12-byte GCM nonce, base64
 * @param ciphertext ciphertext and tag, base64
 */
public record SealedSecrets(String keyId, String algorithm, String recipient, String epk, String nonce, String ciphertext) {

    public static final String ALGORITHM = "X25519-HKDF-SHA256-A256GCM";
    private static final Pattern BASE64 = Pattern.compile("[A-Za-z0-9+/]+={0,2}");

    void checkFields(String field, Violations violations) {
        violations.id(field + ".keyId", keyId);
        if (!ALGORITHM.equals(algorithm)) {
            violations.add(field + ".algorithm", algorithm, "must be " + ALGORITHM
                    + " (sealed for one recipient; the shared AES keyring is gone)");
        }
        try {
            Principal.parse(recipient);
        } catch (IllegalArgumentException e) {
            violations.add(field + ".recipient", recipient, "must be node:<id> or a service name");
        }
        if (epk == null || !BASE64.matcher(epk).matches() || Base64.getDecoder().decode(epk).length != 32) {
            violations.add(field + ".epk", epk, "must be a base64 X25519 public key (32 bytes)");
        }
        if (nonce == null || !BASE64.matcher(nonce).matches()) {
            violations.add(field + ".nonce", nonce, "must be base64");
        }
        if (ciphertext == null || !BASE64.matcher(ciphertext).matches()) {
            violations.addRedacted(field + ".ciphertext", "must be base64");
        }
    }

    @Override
    public String toString() {
        return "SealedSecrets[recipient=" + recipient + ", keyId=" + keyId + ", algorithm=" + algorithm + "]";
    }
}
