package io.csiorchestrator.events;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;

/**
 * Seals and opens {@link SecretPayload}s with AES-256-GCM (JDK only). The associated data is the
 * volume's {@code namespace/volumeId}: a sealed value opens only for the volume it was sealed
 * for.
 */
public final class SecretSealer {

    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;

    private final SecretKeyring keyring;
    private final SecureRandom random = new SecureRandom();
    private final ObjectMapper json = new ObjectMapper();

    public SecretSealer(SecretKeyring keyring) {
        this.keyring = keyring;
    }

    public static String associatedData(String namespace, String volumeId) {
        return namespace + "/" + volumeId;
    }

    public SealedSecrets seal(SecretPayload payload, String associatedData) {
        byte[] nonce = new byte[NONCE_BYTES];
        random.nextBytes(nonce);
        try {
            byte[] plain = json.writeValueAsBytes(payload);
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.ENCRYPT_MODE, keyring.activeKey(), new GCMParameterSpec(TAG_BITS, nonce));
            cipher.updateAAD(associatedData.getBytes(StandardCharsets.UTF_8));
            byte[] sealed = cipher.doFinal(plain);
            java.util.Arrays.fill(plain, (byte) 0);
            return new SealedSecrets(keyring.activeKeyId(), SealedSecrets.AES_256_GCM,
                    Base64.getEncoder().encodeToString(nonce), Base64.getEncoder().encodeToString(sealed));
        } catch (GeneralSecurityException | JsonProcessingException e) {
            throw new IllegalStateException("could not seal secrets with key '" + keyring.activeKeyId() + "': " + e.getClass().getSimpleName(), e);
        }
    }

    /**
     * Opens {@code sealed}. Fails with a {@link SecretUnsealException} naming the key id when the
     * key is unknown, or when the value was tampered with or sealed for another volume.
     */
    public SecretPayload open(SealedSecrets sealed, String associatedData) {
        if (sealed == null) {
            return SecretPayload.EMPTY;
        }
        SecretKey key = keyring.key(sealed.keyId());
        if (key == null) {
            throw new SecretUnsealException("secrets were sealed with key '" + sealed.keyId()
                    + "', which is not in this keyring " + keyring.keyIds());
        }
        try {
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.DECRYPT_MODE, key, new GCMParameterSpec(TAG_BITS, Base64.getDecoder().decode(sealed.nonce())));
            cipher.updateAAD(associatedData.getBytes(StandardCharsets.UTF_8));
            byte[] plain = cipher.doFinal(Base64.getDecoder().decode(sealed.ciphertext()));
            SecretPayload payload = json.readValue(plain, SecretPayload.class);
            java.util.Arrays.fill(plain, (byte) 0);
            return payload;
        } catch (GeneralSecurityException | IllegalArgumentException | java.io.IOException e) {
            throw new SecretUnsealException("secrets sealed with key '" + sealed.keyId() + "' could not be opened for "
                    + associatedData + " (wrong key, wrong volume, or tampered): " + e.getClass().getSimpleName());
        }
    }

    /** Sealed secrets that cannot be opened here. The message never holds secret material. */
    public static final class SecretUnsealException extends RuntimeException {
        public SecretUnsealException(String message) {
            super(message);
        }
    }
}
