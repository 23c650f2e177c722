package io.csiorchestrator.events.identity;

import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.HexFormat;

/** Raw 32-byte X25519 public keys (a trust file's {@code enc} entries, for sealing) to and from the JDK's. */
final class X25519Keys {

    private static final byte[] SPKI_PREFIX = HexFormat.of().parseHex("302a300506032b656e032100");

    private X25519Keys() {
    }

    static PublicKey publicKey(byte[] raw) {
        if (raw == null || raw.length != 32) {
            throw new IllegalArgumentException("an X25519 public key has 32 bytes");
        }
        byte[] spki = Arrays.copyOf(SPKI_PREFIX, SPKI_PREFIX.length + 32);
        System.arraycopy(raw, 0, spki, SPKI_PREFIX.length, 32);
        try {
            return KeyFactory.getInstance("X25519").generatePublic(new X509EncodedKeySpec(spki));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not an X25519 public key");
        }
    }

    static byte[] raw(PublicKey key) {
        byte[] encoded = key.getEncoded();
        return Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length);
    }
}
