package io.csiorchestrator.cli;

import io.csiorchestrator.events.SecretKeyring;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * The sealing keyring of {@code ./csi volume claim --mount-flag}: mount flags travel sealed on claim-requested with
 * the keyring claim-service shares ({@code csi.secrets.keyring}). Looked for in this order: the file named by
 * {@code --keyring FILE}, the environment variable {@code CSI_SECRETS_KEYRING}, then the keyring of the system
 * {@code ./csi up} runs ({@code <work dir>/secrets.keyring}, see {@link Cluster#KEYRING_FILE}). The active key:
 * {@code CSI_SECRETS_ACTIVE_KEY}, else the first. Errors name where the key was looked for, never a key.
 */
final class Keyrings {

    static final String ENV = "CSI_SECRETS_KEYRING";
    static final String ACTIVE_ENV = "CSI_SECRETS_ACTIVE_KEY";

    private Keyrings() {
    }

    static SecretKeyring resolve(Optional<String> file, Map<String, String> env, Path upWorkDir) {
        String active = env.get(ACTIVE_ENV);
        if (file.isPresent()) {
            return parse(read(Path.of(file.get()), "--keyring " + file.get()), active, "--keyring " + file.get());
        }
        String fromEnv = env.get(ENV);
        if (fromEnv != null && !fromEnv.isBlank()) {
            return parse(fromEnv, active, ENV);
        }
        Path up = upWorkDir.resolve(Cluster.KEYRING_FILE);
        if (Files.isRegularFile(up)) {
            return parse(read(up, up.toString()), active, up.toString());
        }
        throw new Operator.Failure("--mount-flag needs the sealing keyring claim-service uses (mount flags travel sealed): "
                + "none found; pass --keyring FILE (keyId:base64Key[,...]), set " + ENV + ", or run against ./csi up's "
                + "system, whose keyring is " + up + " (not there)");
    }

    private static String read(Path file, String what) {
        try {
            return Files.readString(file).trim();
        } catch (NoSuchFileException e) {
            throw new Operator.Failure("no keyring file " + file + " (" + what + ")");
        } catch (IOException e) {
            throw new Operator.Failure("cannot read the keyring " + file + ": " + e.getMessage());
        }
    }

    private static SecretKeyring parse(String spec, String active, String where) {
        try {
            return SecretKeyring.parse(spec, active);
        } catch (IllegalArgumentException e) {
            throw new Operator.Failure("the keyring from " + where + " is unusable: " + e.getMessage());
        }
    }
}
