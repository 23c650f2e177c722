package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.identity.IdentityDirectory;
import io.csiorchestrator.events.identity.SealingKeys;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where {@code ./csi volume claim --mount-flag} finds claim-service's public sealing key, and what it says without one. */
class ClaimServiceKeyTest {

    @TempDir
    Path dir;

    private IdentityDirectory identities(String name) {
        return new IdentityDirectory(dir.resolve(name).resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR));
    }

    /** --trust-file FILE wins over CSI_TRUST_FILE, which wins over the up system's trust file; each gives claim-service's newest enc key. */
    @Test
    void theFileOptionWinsOverTheEnvironmentWhichWinsOverUpsTrustFile() {
        SealingKeys up = identities("up").ensureSealing(ClaimServiceKey.CLAIM_SERVICE);
        SealingKeys given = identities("given").ensureSealing(ClaimServiceKey.CLAIM_SERVICE);
        SealingKeys fromEnv = identities("env").ensureSealing(ClaimServiceKey.CLAIM_SERVICE);
        String givenFile = identities("given").trustFile().toString();
        Map<String, String> env = Map.of("CSI_TRUST_FILE", identities("env").trustFile().toString());
        assertEquals(given.newest().kid(), ClaimServiceKey.resolve(Optional.of(givenFile), env, dir.resolve("up")).kid());
        assertEquals(fromEnv.newest().kid(), ClaimServiceKey.resolve(Optional.empty(), env, dir.resolve("up")).kid());
        assertEquals(up.newest().kid(), ClaimServiceKey.resolve(Optional.empty(), Map.of(), dir.resolve("up")).kid());
        // after a rotation, the new key is the one sealed for
        SealingKeys rotated = identities("up").rotateSealing(ClaimServiceKey.CLAIM_SERVICE);
        assertEquals(rotated.newest().kid(), ClaimServiceKey.resolve(Optional.empty(), Map.of(), dir.resolve("up")).kid());
    }

    /** Without any trust file, or with one that has no claim-service key, the failure says where it looked and what to do. */
    @Test
    void withoutClaimServicesKeyTheFailureSaysWhereItLooked() throws Exception {
        Operator.Failure none = assertThrows(Operator.Failure.class,
                () -> ClaimServiceKey.resolve(Optional.empty(), Map.of(), dir.resolve("nothing")));
        assertTrue(none.getMessage().contains("--trust-file FILE") && none.getMessage().contains("CSI_TRUST_FILE"),
                none.getMessage());
        identities("nodes-only").ensure(io.csiorchestrator.events.identity.Principal.node("node-1"));
        Operator.Failure noKey = assertThrows(Operator.Failure.class,
                () -> ClaimServiceKey.resolve(Optional.empty(), Map.of(), dir.resolve("nodes-only")));
        assertTrue(noKey.getMessage().contains("no sealing (enc) key of claim-service"), noKey.getMessage());
        Path garbage = Files.writeString(dir.resolve("bad.json"), "not json");
        Operator.Failure bad = assertThrows(Operator.Failure.class,
                () -> ClaimServiceKey.resolve(Optional.of(garbage.toString()), Map.of(), dir));
        assertTrue(bad.getMessage().contains("unusable"), bad.getMessage());
    }
}
