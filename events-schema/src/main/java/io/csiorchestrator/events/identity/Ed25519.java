package io.csiorchestrator.events.identity;

import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.HexFormat;

/** Raw 32-byte Ed25519 keys (as in a JWK's {@code x} and {@code d}) to and from the JDK's key objects. */
final class Ed25519 {

    private static final byte[] SPKI_PREFIX = HexFormat.of().parseHex("302a300506032b6570032100");
    private static final byte[] PKCS8_PREFIX = HexFormat.of().parseHex("302e020100300506032b657004220420");

    private Ed25519() {
    }

    static PublicKey publicKey(byte[] raw) {
        require(raw, "public");
        try {
            return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(concat(SPKI_PREFIX, raw)));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not an Ed25519 public key: " + e.getMessage());
        }
    }

    static PrivateKey privateKey(byte[] raw) {
        require(raw, "private");
        try {
            return KeyFactory.getInstance("Ed25519").generatePrivate(new PKCS8EncodedKeySpec(concat(PKCS8_PREFIX, raw)));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not an Ed25519 private key");
        }
    }

    static byte[] raw(PublicKey key) {
        byte[] encoded = key.getEncoded();
        return Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length);
    }

    static byte[] raw(PrivateKey key) {
        byte[] encoded = key.getEncoded();
        // PKCS#8 of Ed25519: the 32-byte seed is the last element (OCTET STRING in an OCTET STRING)
        return Arrays.copyOfRange(encoded, PKCS8_PREFIX.length, PKCS8_PREFIX.length + 32);
    }

    private static void require(byte[] raw, String what) {
        if (raw == null || raw.length != 32) {
            throw new IllegalArgumentException("an Ed25519 " + what + " key has 32 bytes, not " + (raw == null ? 0 : raw.length));
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
