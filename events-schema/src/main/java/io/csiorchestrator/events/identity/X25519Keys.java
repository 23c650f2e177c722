package io.csiorchestrator.events.identity;

import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import java.util.HexFormat;

/** Raw 32-byte X25519 keys (a trust file's {@code enc} entries and a sealing key file's, for sealing) to and from the JDK's. */
public final class X25519Keys {

    private static final byte[] SPKI_PREFIX = HexFormat.of().parseHex("302a300506032b656e032100");
    private static final byte[] PKCS8_PREFIX = HexFormat.of().parseHex("302e020100300506032b656e04220420");

    private X25519Keys() {
    }

    public static PublicKey publicKey(byte[] raw) {
        if (raw == null || raw.length != 32) {
            throw new IllegalArgumentException("an X25519 public key has 32 bytes");
        }
        try {
            return KeyFactory.getInstance("X25519").generatePublic(new X509EncodedKeySpec(concat(SPKI_PREFIX, raw)));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not an X25519 public key");
        }
    }

    public static PrivateKey privateKey(byte[] raw) {
        if (raw == null || raw.length != 32) {
            throw new IllegalArgumentException("an X25519 private key has 32 bytes");
        }
        try {
            return KeyFactory.getInstance("X25519").generatePrivate(new PKCS8EncodedKeySpec(concat(PKCS8_PREFIX, raw)));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("not an X25519 private key");
        }
    }

    public static byte[] raw(PublicKey key) {
        byte[] encoded = key.getEncoded();
        return Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length);
    }

    static byte[] raw(PrivateKey key) {
        byte[] encoded = key.getEncoded();
        return Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length);
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
