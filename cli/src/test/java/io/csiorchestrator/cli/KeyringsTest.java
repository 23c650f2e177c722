package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.SecretKeyring;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where {@code ./csi volume claim --mount-flag} finds the sealing keyring, and what it says when there is none. */
class KeyringsTest {

    static final String KEY_A = "a:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    static final String KEY_B = "b:HxwdHBsaGRgXFhUUExIREA8ODQwLCgkIBwYFBAMCAQA=";

    @TempDir
    Path dir;

    /** --keyring FILE wins over CSI_SECRETS_KEYRING, which wins over the up system's secrets.keyring. */
    @Test
    void theFileOptionWinsOverTheEnvironmentWhichWinsOverUpsOwnKeyring() throws Exception {
        Files.writeString(dir.resolve(Cluster.KEYRING_FILE), KEY_A + "\n");
        Path file = Files.writeString(dir.resolve("given.keyring"), KEY_B);
        assertEquals("b", Keyrings.resolve(Optional.of(file.toString()), Map.of("CSI_SECRETS_KEYRING", KEY_A), dir)
                .activeKeyId());
        assertEquals("b", Keyrings.resolve(Optional.empty(), Map.of("CSI_SECRETS_KEYRING", KEY_B), dir).activeKeyId());
        SecretKeyring up = Keyrings.resolve(Optional.empty(), Map.of(), dir);
        assertEquals("a", up.activeKeyId());
    }

    /** No key anywhere: the error names the option, the variable and the file it looked for, and no key. */
    @Test
    void noKeyAnywhereSaysWhatIsMissing() {
        Operator.Failure f = assertThrows(Operator.Failure.class, () -> Keyrings.resolve(Optional.empty(), Map.of(), dir));
        assertTrue(f.getMessage().contains("--keyring FILE"), f.getMessage());
        assertTrue(f.getMessage().contains("CSI_SECRETS_KEYRING"), f.getMessage());
        assertTrue(f.getMessage().contains(dir.resolve(Cluster.KEYRING_FILE).toString()), f.getMessage());
    }

    /** A keyring file that is not one is refused with the parser's reason, never echoing the file's text. */
    @Test
    void anUnusableKeyringIsRefusedWithoutEchoingIt() throws Exception {
        Path file = Files.writeString(dir.resolve("bad.keyring"), "k:c2hvcnQ=");
        Operator.Failure f = assertThrows(Operator.Failure.class,
                () -> Keyrings.resolve(Optional.of(file.toString()), Map.of(), dir));
        assertTrue(f.getMessage().contains("must be 32 bytes"), f.getMessage());
        assertFalse(f.getMessage().contains("c2hvcnQ="), f.getMessage());
    }

    /** A durable system's keyring is created once, owner-only, and the same one is read back at the next start. */
    @Test
    void upKeepsItsKeyringOwnerOnlyAcrossStarts() throws Exception {
        Path file = dir.resolve("up").resolve(Cluster.KEYRING_FILE);
        assertEquals(KEY_A, Cluster.keptKeyring(file, KEY_A));
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals(KEY_A, Cluster.keptKeyring(file, KEY_B), "the kept one, not a new one");
    }
}
