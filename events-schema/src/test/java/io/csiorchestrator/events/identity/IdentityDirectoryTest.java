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

        IdentityKey second = ids.rotate(node);
        assertNotEquals(first.kid(), second.kid());
        assertEquals(second.kid(), IdentityKey.read(ids.keyFile(node)).kid(), "the key file holds the new key");
        assertTrue(ids.trust().find(first.kid()).isPresent() && ids.trust().find(second.kid()).isPresent(),
                "both kids trusted during the rotation");

        assertEquals(List.of(first.kid()), ids.retire(node));
        assertTrue(ids.trust().find(first.kid()).isEmpty(), "the old kid is no longer trusted");
        assertTrue(ids.trust().find(second.kid()).isPresent(), "the current kid still is");
    }
}
