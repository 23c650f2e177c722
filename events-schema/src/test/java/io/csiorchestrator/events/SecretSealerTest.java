package io.csiorchestrator.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SecretSealerTest {

    static final String KEY_A = Base64.getEncoder().encodeToString(new byte[32]);
    static final String KEY_B = Base64.getEncoder().encodeToString("0123456789abcdef0123456789abcdef".getBytes());
    static final SecretPayload CANARY = new SecretPayload(Map.of("password", "canary-s3cret"), List.of("uid=1000", "pass=canary-flag"));
    static final String AAD = SecretSealer.associatedData("default", "vol-1");

    @Test
    void sealsAndOpens() {
        SecretSealer sealer = new SecretSealer(SecretKeyring.parse("k1:" + KEY_A, "k1"));
        SealedSecrets sealed = sealer.seal(CANARY, AAD);
        assertEquals("k1", sealed.keyId());
        String wire = EventCodec.mapper().valueToTree(sealed).toString();
        assertFalse(wire.contains("canary"), "plain text must not travel: " + wire);
        assertEquals(CANARY, sealer.open(sealed, AAD));
        assertNotEquals(sealed.nonce(), sealer.seal(CANARY, AAD).nonce(), "every seal takes a fresh nonce");
    }

    @Test
    void opensOnlyForTheVolumeItWasSealedFor() {
        SecretSealer sealer = new SecretSealer(SecretKeyring.parse("k1:" + KEY_A, null));
        SealedSecrets sealed = sealer.seal(CANARY, AAD);
        SecretSealer.SecretUnsealException e = assertThrows(SecretSealer.SecretUnsealException.class,
                () -> sealer.open(sealed, SecretSealer.associatedData("default", "vol-2")));
        assertTrue(e.getMessage().contains("default/vol-2"));
        SealedSecrets tampered = new SealedSecrets("k1", sealed.algorithm(), sealed.nonce(),
                Base64.getEncoder().encodeToString("garbage-garbage-garbage".getBytes()));
        assertThrows(SecretSealer.SecretUnsealException.class, () -> sealer.open(tampered, AAD));
    }

    @Test
    void rotationKeepsOldSecretsReadable() {
        SealedSecrets old = new SecretSealer(SecretKeyring.parse("k1:" + KEY_A, "k1")).seal(CANARY, AAD);
        SecretSealer rotated = new SecretSealer(SecretKeyring.parse("k1:" + KEY_A + ",k2:" + KEY_B, "k2"));
        assertEquals(CANARY, rotated.open(old, AAD));
        assertEquals("k2", rotated.seal(CANARY, AAD).keyId());
        SecretSealer withoutOld = new SecretSealer(SecretKeyring.parse("k2:" + KEY_B, "k2"));
        SecretSealer.SecretUnsealException e = assertThrows(SecretSealer.SecretUnsealException.class, () -> withoutOld.open(old, AAD));
        assertTrue(e.getMessage().contains("'k1'"), e.getMessage());
    }

    @Test
    void badKeyringsAreExplainedWithoutShowingKeys() {
        IllegalArgumentException shortKey = assertThrows(IllegalArgumentException.class,
                () -> SecretKeyring.parse("k1:" + Base64.getEncoder().encodeToString(new byte[16]), null));
        assertEquals("secret key 'k1' must be 32 bytes (AES-256), has 16", shortKey.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SecretKeyring.parse("k1:" + KEY_A, "k9"));
        assertThrows(IllegalArgumentException.class, () -> SecretKeyring.parse("", null));
        assertThrows(IllegalArgumentException.class, () -> SecretKeyring.parse("../k:" + KEY_A, null));
    }

    @Test
    void toStringNeverShowsSecrets() {
        assertFalse(CANARY.toString().contains("canary"), CANARY.toString());
        assertTrue(CANARY.toString().contains("password"), "the secret's name may be shown");
    }
}
