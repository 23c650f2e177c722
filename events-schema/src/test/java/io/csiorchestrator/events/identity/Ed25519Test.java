package io.csiorchestrator.events.identity;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The signatures are Ed25519 as RFC 8032 and the JDK's provider define it: whatever one side signs the other verifies,
 * so a consumer on the JDK provider (an outside monitoring consumer, an older service) and ours agree.
 */
class Ed25519Test {

    private static final HexFormat HEX = HexFormat.of();

    /** RFC 8032 section 7.1, TEST 2: the one-byte message 0x72. */
    @Test
    void rfc8032TestVector() {
        byte[] secret = HEX.parseHex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb");
        byte[] publicKey = HEX.parseHex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
        byte[] expected = HEX.parseHex("92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
                + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");
        byte[] message = {0x72};
        byte[] signature = Ed25519.sign(Ed25519.signer(Ed25519.privateKey(secret)), message);
        assertArrayEquals(expected, signature);
        assertTrue(Ed25519.verify(Ed25519.publicKey(publicKey), message, signature));
        assertFalse(Ed25519.verify(Ed25519.publicKey(publicKey), new byte[] {0x73}, signature));
    }

    /** Signed with the JDK's provider, verified here; signed here, verified by the JDK's provider. */
    @Test
    void interoperatesWithTheJdkProvider() throws Exception {
        KeyPair pair = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        byte[] data = "csi-record-signature-v1 mount-done node-1".getBytes(StandardCharsets.UTF_8);

        Signature jdk = Signature.getInstance("Ed25519");
        jdk.initSign(pair.getPrivate());
        jdk.update(data);
        byte[] byJdk = jdk.sign();
        assertTrue(Ed25519.verify(pair.getPublic(), data, byJdk));

        byte[] ours = Ed25519.sign(Ed25519.signer(pair.getPrivate()), data);
        assertArrayEquals(byJdk, ours, "Ed25519 is deterministic: the same key and data give the same signature");
        Signature check = Signature.getInstance("Ed25519");
        check.initVerify(pair.getPublic());
        check.update(data);
        assertTrue(check.verify(ours));
    }

    /** A wrong length, a flipped bit or another key's signature is false, never an exception. */
    @Test
    void badSignaturesAreFalse() throws Exception {
        KeyPair pair = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        KeyPair other = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        byte[] data = {1, 2, 3};
        byte[] signature = Ed25519.sign(Ed25519.signer(pair.getPrivate()), data);
        assertFalse(Ed25519.verify(other.getPublic(), data, signature));
        assertFalse(Ed25519.verify(pair.getPublic(), data, new byte[63]));
        assertFalse(Ed25519.verify(pair.getPublic(), data, null));
        byte[] flipped = signature.clone();
        flipped[40] ^= 1;
        assertFalse(Ed25519.verify(pair.getPublic(), data, flipped));
        byte[] highScalar = signature.clone();
        highScalar[63] = (byte) 0xff; // S >= the group order: not canonical (RFC 8032 5.1.7)
        assertFalse(Ed25519.verify(pair.getPublic(), data, highScalar));
    }

    /** A key file whose public half is not its private half's is refused (its signatures would never verify). */
    @Test
    void keyFileWithMismatchedHalvesIsRefused(@TempDir Path dir) throws Exception {
        IdentityKey one = IdentityKey.generate(Principal.node("node-1"), "node-1.k1");
        IdentityKey two = IdentityKey.generate(Principal.node("node-1"), "node-1.k2");
        Path a = dir.resolve("a.key");
        Path b = dir.resolve("b.key");
        one.write(a);
        two.write(b);
        String x = Files.readString(b).replaceAll("(?s).*\"x\":\"([^\"]+)\".*", "$1");
        Files.writeString(a, Files.readString(a).replaceAll("\"x\":\"[^\"]+\"", "\"x\":\"" + x + "\""));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> IdentityKey.read(a));
        assertTrue(e.getMessage().contains("not the private key's"), e.getMessage());
    }
}
