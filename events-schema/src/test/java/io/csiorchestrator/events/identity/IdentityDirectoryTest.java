package io.csiorchestrator.events.identity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The identities ./csi keeps: a key made once, a rotation that keeps the old kid trusted, a retirement that drops it. */
class IdentityDirectoryTest {

    /**
     * ensure makes node-1's key (0600) and trusts it, and gives the same key again; rotate adds a second kid and both
     * are trusted; retire drops only the old one.
     */
    @Test
    void ensureRotateRetire(@TempDir Path dir) throws Exception {
        IdentityDirectory ids = new IdentityDirectory(dir);
        Principal node = Principal.node("node-1");
        IdentityKey first = ids.ensure(node);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(ids.keyFile(node))));
        assertEquals(first.kid(), ids.ensure(node).kid(), "kept, not remade");
        assertEquals(node, ids.trust().find(first.kid()).orElseThrow().principal());

        String firstSealing = SealingKeys.read(ids.sealKeyFile(node)).newest().kid();
        IdentityKey second = ids.rotate(node);
        assertNotEquals(first.kid(), second.kid());
        assertEquals(second.kid(), IdentityKey.read(ids.keyFile(node)).kid(), "the key file holds the new key");
        assertTrue(ids.trust().find(first.kid()).isPresent() && ids.trust().find(second.kid()).isPresent(),
                "both kids trusted during the rotation");

        String secondSealing = SealingKeys.read(ids.sealKeyFile(node)).newest().kid();
        assertNotEquals(firstSealing, secondSealing, "a node's rotation rotates its sealing key too");
        assertEquals(java.util.Set.of(first.kid(), firstSealing), java.util.Set.copyOf(ids.retire(node)));
        assertTrue(ids.trust().find(first.kid()).isEmpty(), "the old kid is no longer trusted");
        assertTrue(ids.trust().find(second.kid()).isPresent(), "the current kid still is");
    }

    /**
     * Sealing keys (issue 20 item 4) through a rotation without restart: join-node makes node-1's sealing key (0600)
     * and publishes it; a value sealed for it opens through the node's SealingKeyFile; after rotateSealing the trust
     * file's sealing key for node-1 is the new one, the same SealingKeyFile (not re-made) opens values sealed for
     * either key, and after retire the old key is neither published nor held, so what was sealed for it is refused
     * naming its kid. claim-service's key (a service) is made by ensureSealing alone, with no signing key.
     */
    @Test
    void sealingKeysRotateWithoutRestartAndStopOpeningWhenRetired(@TempDir Path dir) throws Exception {
        IdentityDirectory ids = new IdentityDirectory(dir);
        Principal node = Principal.node("node-1");
        ids.ensure(node);
        Path file = ids.sealKeyFile(node);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        TrustSet.Entry k1 = ids.trust().sealingKey(node).orElseThrow();
        io.csiorchestrator.events.SecretPayload payload = new io.csiorchestrator.events.SecretPayload(
                java.util.Map.of("password", "p"), List.of());
        io.csiorchestrator.events.SealedSecrets old = io.csiorchestrator.events.SecretSealer.seal(payload, k1, "ns", "v");
        SealingKeyFile worker = new SealingKeyFile(file, node);
        assertEquals(payload, worker.open(old, "ns", "v"));

        ids.rotateSealing(node);
        TrustSet.Entry k2 = ids.trust().sealingKey(node).orElseThrow();
        assertNotEquals(k1.kid(), k2.kid(), "sealers now take the new key");
        assertTrue(ids.trust().find(k1.kid()).isPresent(), "the old key stays published until retired");
        io.csiorchestrator.events.SealedSecrets fresh = io.csiorchestrator.events.SecretSealer.seal(payload, k2, "ns", "v");
        assertEquals(payload, worker.open(fresh, "ns", "v"), "the running opener reads the new key from its file");
        assertEquals(payload, worker.open(old, "ns", "v"), "the old key still opens");

        assertTrue(ids.retire(node).contains(k1.kid()));
        assertTrue(ids.trust().find(k1.kid()).isEmpty());
        assertEquals(List.of(k2.kid()), SealingKeys.read(file).kids(), "the key file keeps only the newest key");
        io.csiorchestrator.events.SecretSealer.SecretUnsealException e = org.junit.jupiter.api.Assertions.assertThrows(
                io.csiorchestrator.events.SecretSealer.SecretUnsealException.class,
                () -> new SealingKeyFile(file, node).open(old, "ns", "v"));
        assertTrue(e.getMessage().contains(k1.kid()), e.getMessage());

        Principal claims = Principal.service("claim-service");
        SealingKeys service = ids.ensureSealing(claims);
        assertEquals(service.newest().kid(), ids.trust().sealingKey(claims).orElseThrow().kid());
        assertTrue(Files.notExists(ids.keyFile(claims)), "claim-service gets no signing key");
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> new SealingKeyFile(file, claims),
                "a node's key file is refused as claim-service's");
    }
}
