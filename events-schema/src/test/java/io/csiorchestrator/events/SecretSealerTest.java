package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.SealingKeys;
import io.csiorchestrator.events.identity.TrustSet;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Secrets sealed per recipient (issue 20 item 4): X25519 + HKDF-SHA256 + AES-256-GCM, ephemeral-static. */
class SecretSealerTest {

    static final SecretPayload CANARY = new SecretPayload(Map.of("password", "canary-s3cret"), List.of("uid=1000", "pass=canary-flag"));
    static final SealingKeys NODE_1 = SealingKeys.generate(Principal.node("node-1"), "node-1.enc.k1");
    static final SealingKeys NODE_2 = SealingKeys.generate(Principal.node("node-2"), "node-2.enc.k1");

    static TrustSet.Entry to(SealingKeys keys) {
        return keys.publicEntry(keys.newest());
    }

    /** Sealed for node-1 and volume default/vol-1: the wire form names the recipient and kid, holds no plain text, and opens with node-1's key. */
    @Test
    void sealsForOneRecipientAndOpensWithItsKey() {
        SealedSecrets sealed = SecretSealer.seal(CANARY, to(NODE_1), "default", "vol-1");
        assertEquals("node-1.enc.k1", sealed.keyId());
        assertEquals("node:node-1", sealed.recipient());
        assertEquals(SealedSecrets.ALGORITHM, sealed.algorithm());
        String wire = EventCodec.mapper().valueToTree(sealed).toString();
        assertFalse(wire.contains("canary"), "plain text must not travel: " + wire);
        assertEquals(CANARY, SecretSealer.open(sealed, NODE_1, "default", "vol-1"));
        SealedSecrets again = SecretSealer.seal(CANARY, to(NODE_1), "default", "vol-1");
        assertNotEquals(sealed.epk(), again.epk(), "every seal takes a fresh ephemeral key");
        assertNotEquals(sealed.ciphertext(), again.ciphertext());
    }

    /** node-1 cannot open node-2's secret: refused naming the recipient and kid, even when the recipient field is rewritten to node-1. */
    @Test
    void node1CannotOpenNode2sSecret() {
        SealedSecrets forNode2 = SecretSealer.seal(CANARY, to(NODE_2), "default", "vol-1");
        SecretSealer.SecretUnsealException e = assertThrows(SecretSealer.SecretUnsealException.class,
                () -> SecretSealer.open(forNode2, NODE_1, "default", "vol-1"));
        assertTrue(e.getMessage().contains("node:node-2") && e.getMessage().contains("node-2.enc.k1")
                && e.getMessage().contains("node:node-1"), e.getMessage());
        assertFalse(e.getMessage().contains("canary"), e.getMessage());
        // relabelled for node-1 (recipient and kid): node-1's private key still cannot open it
        SealedSecrets relabelled = new SealedSecrets("node-1.enc.k1", forNode2.algorithm(), "node:node-1", forNode2.epk(),
                forNode2.nonce(), forNode2.ciphertext());
        assertThrows(SecretSealer.SecretUnsealException.class, () -> SecretSealer.open(relabelled, NODE_1, "default", "vol-1"));
    }

    /** A value moved to another volume, or with its ciphertext, ephemeral key or nonce altered, does not open. */
    @Test
    void opensOnlyForTheVolumeItWasSealedForAndOnlyUnaltered() {
        SealedSecrets sealed = SecretSealer.seal(CANARY, to(NODE_1), "default", "vol-1");
        SecretSealer.SecretUnsealException moved = assertThrows(SecretSealer.SecretUnsealException.class,
                () -> SecretSealer.open(sealed, NODE_1, "default", "vol-2"));
        assertTrue(moved.getMessage().contains("default/vol-2"), moved.getMessage());
        assertThrows(SecretSealer.SecretUnsealException.class, () -> SecretSealer.open(sealed, NODE_1, "other", "vol-1"));
        byte[] ct = Base64.getDecoder().decode(sealed.ciphertext());
        ct[0] ^= 1;
        SealedSecrets tampered = new SealedSecrets(sealed.keyId(), sealed.algorithm(), sealed.recipient(), sealed.epk(),
                sealed.nonce(), Base64.getEncoder().encodeToString(ct));
        assertThrows(SecretSealer.SecretUnsealException.class, () -> SecretSealer.open(tampered, NODE_1, "default", "vol-1"));
        String otherEpk = SecretSealer.seal(CANARY, to(NODE_1), "default", "vol-1").epk();
        SealedSecrets swappedEpk = new SealedSecrets(sealed.keyId(), sealed.algorithm(), sealed.recipient(), otherEpk,
                sealed.nonce(), sealed.ciphertext());
        assertThrows(SecretSealer.SecretUnsealException.class, () -> SecretSealer.open(swappedEpk, NODE_1, "default", "vol-1"));
        SealedSecrets otherNonce = new SealedSecrets(sealed.keyId(), sealed.algorithm(), sealed.recipient(), sealed.epk(),
                Base64.getEncoder().encodeToString(new byte[12]), sealed.ciphertext());
        assertThrows(SecretSealer.SecretUnsealException.class, () -> SecretSealer.open(otherNonce, NODE_1, "default", "vol-1"));
    }

    /** After a rotation the new key seals and both open; once the old key is retired, what was sealed to it is refused naming its kid. */
    @Test
    void aRotatedKeyStillOpensUntilRetired() {
        SealedSecrets old = SecretSealer.seal(CANARY, to(NODE_1), "default", "vol-1");
        SealingKeys rotated = NODE_1.withNewKey("node-1.enc.k2");
        assertEquals("node-1.enc.k2", to(rotated).kid());
        SealedSecrets fresh = SecretSealer.seal(CANARY, to(rotated), "default", "vol-1");
        assertEquals("node-1.enc.k2", fresh.keyId());
        assertEquals(CANARY, SecretSealer.open(old, rotated, "default", "vol-1"), "the old key still opens");
        assertEquals(CANARY, SecretSealer.open(fresh, rotated, "default", "vol-1"));
        SealingKeys retired = rotated.newestOnly();
        SecretSealer.SecretUnsealException e = assertThrows(SecretSealer.SecretUnsealException.class,
                () -> SecretSealer.open(old, retired, "default", "vol-1"));
        assertTrue(e.getMessage().contains("'node-1.enc.k1'") && e.getMessage().contains("does not hold"), e.getMessage());
        assertEquals(CANARY, SecretSealer.open(fresh, retired, "default", "vol-1"));
    }

    /** A signing (sig) key is not a sealing key; a legacy AES value is refused with its algorithm named. */
    @Test
    void onlySealingKeysSealAndOnlyThisSchemeOpens() {
        TrustSet.Entry sig = io.csiorchestrator.events.identity.IdentityKey.generate(Principal.node("node-1"), "s1").publicEntry();
        assertThrows(IllegalArgumentException.class, () -> SecretSealer.seal(CANARY, sig, "default", "vol-1"));
        SealedSecrets legacy = new SealedSecrets("k1", "AES-256-GCM", "node:node-1", null, "AAAAAAAAAAAAAAAA", "c2VjcmV0");
        SecretSealer.SecretUnsealException e = assertThrows(SecretSealer.SecretUnsealException.class,
                () -> SecretSealer.open(legacy, NODE_1, "default", "vol-1"));
        assertTrue(e.getMessage().contains("AES-256-GCM"), e.getMessage());
    }

    /** HKDF-SHA256 gives RFC 5869's test case 1 output. */
    @Test
    void hkdfMatchesRfc5869TestCase1() throws Exception {
        java.util.HexFormat hex = java.util.HexFormat.of();
        byte[] okm = SecretSealer.hkdf(hex.parseHex("000102030405060708090a0b0c"),
                hex.parseHex("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b"), hex.parseHex("f0f1f2f3f4f5f6f7f8f9"), 42);
        assertEquals("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865", hex.formatHex(okm));
    }

    @Test
    void toStringNeverShowsSecrets() {
        assertFalse(CANARY.toString().contains("canary"), CANARY.toString());
        assertTrue(CANARY.toString().contains("password"), "the secret's name may be shown");
        assertFalse(NODE_1.toString().contains(Base64.getUrlEncoder().withoutPadding().encodeToString(
                io.csiorchestrator.events.identity.X25519Keys.raw(NODE_1.newest().publicKey()))), NODE_1.toString());
    }
}
