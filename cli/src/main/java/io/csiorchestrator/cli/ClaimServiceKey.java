package io.csiorchestrator.cli;

import io.csiorchestrator.events.identity.IdentityDirectory;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.TrustSet;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * What {@code ./csi volume claim --mount-flag} seals mount flags for (issue 20 item 4): claim-service's public sealing
 * key, its newest {@code enc} key in the trust file. No shared secret: a scheduler can seal for claim-service but open
 * nothing. The trust file, in this order: {@code --trust-file FILE}, env {@code CSI_TRUST_FILE}, then the one of the
 * system {@code ./csi up} runs ({@code <work dir>/security/identities/trust.json}). Errors name where it looked.
 */
final class ClaimServiceKey {

    static final String ENV = "CSI_TRUST_FILE";
    static final Principal CLAIM_SERVICE = Principal.service("claim-service");

    private ClaimServiceKey() {
    }

    static TrustSet.Entry resolve(Optional<String> file, Map<String, String> env, Path upWorkDir) {
        if (file.isPresent()) {
            return from(Path.of(file.get()), "--trust-file " + file.get());
        }
        String fromEnv = env.get(ENV);
        if (fromEnv != null && !fromEnv.isBlank()) {
            return from(Path.of(fromEnv), ENV);
        }
        Path up = upWorkDir.resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR).resolve(IdentityDirectory.TRUST_FILE);
        if (Files.isRegularFile(up)) {
            return from(up, up.toString());
        }
        throw new Operator.Failure("--mount-flag needs claim-service's public sealing key (mount flags travel sealed for "
                + "it): no trust file found; pass --trust-file FILE, set " + ENV + ", or run against ./csi up's system, "
                + "whose trust file is " + up + " (not there)");
    }

    private static TrustSet.Entry from(Path file, String where) {
        if (!Files.isRegularFile(file)) {
            throw new Operator.Failure("no trust file " + file + " (" + where + ")");
        }
        TrustSet trust;
        try {
            trust = TrustSet.read(file);
        } catch (RuntimeException e) {
            throw new Operator.Failure("the trust file from " + where + " is unusable: " + e.getMessage());
        }
        return trust.sealingKey(CLAIM_SERVICE).orElseThrow(() -> new Operator.Failure("the trust file " + file + " ("
                + where + ") has no sealing (enc) key of claim-service: ./csi identity claim-service makes one"));
    }
}
