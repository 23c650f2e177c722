package io.csiorchestrator.worker.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.events.identity.Principal;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The worker's key: its own node's is used, another node's stops the start, none means unsigned. */
class WorkerIdentityTest {

    /** node-1's key file loads for node-1; node-2's key file is refused for node-1, naming both. */
    @Test
    void ownKeyLoadsAndAnotherNodesKeyIsRefused(@TempDir Path dir) {
        Path own = dir.resolve("node-1.key");
        IdentityKey.generate(Principal.node("node-1"), "node-1.k1").write(own);
        Path other = dir.resolve("node-2.key");
        IdentityKey.generate(Principal.node("node-2"), "node-2.k1").write(other);

        assertEquals("node-1.k1", WorkerIdentity.load(Optional.of(own), "node-1").kid());
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> WorkerIdentity.load(Optional.of(other), "node-1"));
        assertTrue(refused.getMessage().contains("node:node-2") && refused.getMessage().contains("node:node-1"),
                refused.getMessage());
        assertNull(WorkerIdentity.load(Optional.empty(), "node-1"), "no key configured: unsigned");
    }
}
