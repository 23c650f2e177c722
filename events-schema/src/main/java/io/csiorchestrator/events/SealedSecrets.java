package io.csiorchestrator.events;

import java.util.regex.Pattern;

/**
 * Volume secrets and mount flags encrypted with AES-256-GCM under a key of the shared
 * {@link SecretKeyring}. The only form in which secrets travel on a topic or rest in a
 * database. The associated data binds the ciphertext to its volume (namespace/volume id), so it
 * cannot be replayed onto another volume.
 *
 * @param keyId      the keyring entry that sealed it (for rotation)
 * @param algorithm  always {@value #AES_256_GCM}
 * @param nonce      the 12-byte GCM nonce, base64
 * @param ciphertext ciphertext and tag, base64
 */
public record SealedSecrets(String keyId, String algorithm, String nonce, String ciphertext) {

    public static final String AES_256_GCM = "AES-256-GCM";
    private static final Pattern BASE64 = Pattern.compile("[A-Za-z0-9+/]+={0,2}");

    void checkFields(String field, Violations violations) {
        violations.id(field + ".keyId", keyId);
        if (!AES_256_GCM.equals(algorithm)) {
            violations.add(field + ".algorithm", algorithm, "must be " + AES_256_GCM);
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
        return "SealedSecrets[keyId=" + keyId + ", algorithm=" + algorithm + "]";
    }
}
