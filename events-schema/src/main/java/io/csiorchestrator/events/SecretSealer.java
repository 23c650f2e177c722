package io.csiorchestrator.events;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.events.identity.SealingKeys;
import io.csiorchestrator.events.identity.TrustSet;
import io.csiorchestrator.events.identity.X25519Keys;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import javax.crypto.Cipher;
import javax.crypto.KeyAgreement;
import javax.crypto.Mac;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * Seals {@link SecretPayload}s for one recipient and opens them with the recipient's private key (JDK only; issue 20
 * item 4). Sealing: a fresh X25519 key pair, its shared secret with the recipient's public key, HKDF-SHA256 (salt: the
 * ephemeral and the recipient's public keys; info {@value #INFO}) to a 32-byte key, AES-256-GCM with a random nonce and
 * associated data {@code csi-seal-v1 | recipient | keyId | namespace/volumeId}. So a value sealed for node-2 does not
 * open on node-1 (wrong private key; its recipient is also checked first, for a clear error), and a value moved to
 * another volume, another recipient or altered does not open at all.
 */
public final class SecretSealer {

    static final String INFO = "csi-orchestrator seal v1";
    private static final int NONCE_BYTES = 12;
    private static final int TAG_BITS = 128;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final ObjectMapper JSON = new ObjectMapper();

    private SecretSealer() {
    }

    /** What opens sealed values for one recipient: its keys (the worker's, claim-service's). */
    @FunctionalInterface
    public interface Opener {
        /** The payload of {@code sealed} (empty for null); a {@link SecretUnsealException} when it cannot be opened. */
        SecretPayload open(SealedSecrets sealed, String namespace, String volumeId);
    }

    public static String associatedData(String namespace, String volumeId) {
        return namespace + "/" + volumeId;
    }

    /** Seals {@code payload} of volume {@code namespace/volumeId} for {@code recipient} (an {@code enc} entry of the trust file). */
    public static SealedSecrets seal(SecretPayload payload, TrustSet.Entry recipient, String namespace, String volumeId) {
        KeyPair ephemeral;
        try {
            ephemeral = KeyPairGenerator.getInstance("X25519").generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JDK has no X25519", e);
        }
        byte[] nonce = new byte[NONCE_BYTES];
        RANDOM.nextBytes(nonce);
        return seal(payload, recipient, namespace, volumeId, ephemeral, nonce);
    }

    /**
     * {@link #seal} with a given ephemeral key pair and nonce: only for the contract's test vectors (a value sealed
     * twice with the same ephemeral key and nonce gives away the key stream).
     */
    static SealedSecrets seal(SecretPayload payload, TrustSet.Entry recipient, String namespace, String volumeId,
                              KeyPair ephemeral, byte[] nonce) {
        if (recipient.use() != TrustSet.Use.ENC) {
            throw new IllegalArgumentException("key '" + recipient.kid() + "' of " + recipient.principal() + " is not a sealing (enc) key");
        }
        String to = recipient.principal().toString();
        byte[] plain = null;
        try {
            byte[] epk = X25519Keys.raw(ephemeral.getPublic());
            byte[] key = derive(ephemeral.getPrivate(), recipient.key(), epk, X25519Keys.raw(recipient.key()));
            plain = JSON.writeValueAsBytes(payload);
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(TAG_BITS, nonce));
            Arrays.fill(key, (byte) 0);
            cipher.updateAAD(aad(to, recipient.kid(), namespace, volumeId));
            byte[] sealed = cipher.doFinal(plain);
            Base64.Encoder b64 = Base64.getEncoder();
            return new SealedSecrets(recipient.kid(), SealedSecrets.ALGORITHM, to, b64.encodeToString(epk),
                    b64.encodeToString(nonce), b64.encodeToString(sealed));
        } catch (GeneralSecurityException | JsonProcessingException e) {
            throw new IllegalStateException("could not seal secrets for " + to + " (key '" + recipient.kid() + "'): "
                    + e.getClass().getSimpleName(), e);
        } finally {
            if (plain != null) {
                Arrays.fill(plain, (byte) 0);
            }
        }
    }

    /**
     * Opens {@code sealed} (null: {@link SecretPayload#EMPTY}) with {@code keys}. Fails with a
     * {@link SecretUnsealException} naming the recipient and key id, never material: sealed for another recipient, with
     * a key these keys do not hold (retired, or not handed over yet), for another volume, or altered.
     */
    public static SecretPayload open(SealedSecrets sealed, SealingKeys keys, String namespace, String volumeId) {
        if (sealed == null) {
            return SecretPayload.EMPTY;
        }
        String self = keys.principal().toString();
        if (!SealedSecrets.ALGORITHM.equals(sealed.algorithm())) {
            throw new SecretUnsealException("secrets sealed with " + sealed.algorithm() + " (key '" + sealed.keyId()
                    + "') cannot be opened by " + self + ": only " + SealedSecrets.ALGORITHM + " for one recipient");
        }
        if (!self.equals(sealed.recipient())) {
            throw new SecretUnsealException("secrets sealed for " + sealed.recipient() + " (key '" + sealed.keyId()
                    + "') cannot be opened by " + self + ": sealed for another recipient");
        }
        SealingKeys.Key key = keys.find(sealed.keyId()).orElseThrow(() -> new SecretUnsealException("secrets sealed for "
                + self + " with key '" + sealed.keyId() + "', which " + self + " does not hold (it holds " + keys.kids()
                + "): retired, or not handed to it yet"));
        byte[] plain = null;
        try {
            Base64.Decoder b64 = Base64.getDecoder();
            byte[] epk = b64.decode(sealed.epk());
            byte[] aesKey = derive(key.privateKey(), X25519Keys.publicKey(epk), epk, X25519Keys.raw(key.publicKey()));
            Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
            cipher.init(Cipher.DECRYPT_MODE, new SecretKeySpec(aesKey, "AES"), new GCMParameterSpec(TAG_BITS, b64.decode(sealed.nonce())));
            Arrays.fill(aesKey, (byte) 0);
            cipher.updateAAD(aad(self, sealed.keyId(), namespace, volumeId));
            plain = cipher.doFinal(b64.decode(sealed.ciphertext()));
            return JSON.readValue(plain, SecretPayload.class);
        } catch (GeneralSecurityException | IllegalArgumentException | java.io.IOException e) {
            throw new SecretUnsealException("secrets sealed for " + self + " with key '" + sealed.keyId()
                    + "' could not be opened for " + associatedData(namespace, volumeId)
                    + " (sealed for another volume, or altered): " + e.getClass().getSimpleName());
        } finally {
            if (plain != null) {
                Arrays.fill(plain, (byte) 0);
            }
        }
    }

    /**
     * The X25519 shared secret of {@code own} and {@code peer}, through HKDF-SHA256 (RFC 5869; salt: the ephemeral
     * public key then the recipient's) to 32 bytes.
     */
    static byte[] derive(PrivateKey own, PublicKey peer, byte[] epk, byte[] recipientPub) throws GeneralSecurityException {
        KeyAgreement agreement = KeyAgreement.getInstance("X25519");
        agreement.init(own);
        agreement.doPhase(peer, true);
        byte[] shared = agreement.generateSecret();
        byte[] salt = new byte[64];
        System.arraycopy(epk, 0, salt, 0, 32);
        System.arraycopy(recipientPub, 0, salt, 32, 32);
        byte[] okm = hkdf(salt, shared, INFO.getBytes(StandardCharsets.UTF_8), 32);
        Arrays.fill(shared, (byte) 0);
        return okm;
    }

    /** HKDF-SHA256: extract with {@code salt}, expand with {@code info} to {@code length} bytes (at most 32 * 255). */
    static byte[] hkdf(byte[] salt, byte[] ikm, byte[] info, int length) throws GeneralSecurityException {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(salt.length == 0 ? new byte[32] : salt, "HmacSHA256"));
        byte[] prk = mac.doFinal(ikm);
        mac.init(new SecretKeySpec(prk, "HmacSHA256"));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] t = new byte[0];
        for (int i = 1; out.size() < length; i++) {
            mac.update(t);
            mac.update(info);
            mac.update((byte) i);
            t = mac.doFinal();
            out.writeBytes(t);
        }
        Arrays.fill(prk, (byte) 0);
        return Arrays.copyOf(out.toByteArray(), length);
    }

    static byte[] aad(String recipient, String keyId, String namespace, String volumeId) {
        return ("csi-seal-v1\0" + recipient + "\0" + keyId + "\0" + associatedData(namespace, volumeId))
                .getBytes(StandardCharsets.UTF_8);
    }

    /** Sealed secrets that cannot be opened here. The message never holds secret material. */
    public static final class SecretUnsealException extends RuntimeException {
        public SecretUnsealException(String message) {
            super(message);
        }
    }
}
