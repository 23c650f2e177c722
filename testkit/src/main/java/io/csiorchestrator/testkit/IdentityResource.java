package io.csiorchestrator.testkit;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.Map;

/**
 * Hands the services under test this JVM's trust file of record-signing keys ({@link TestIdentities#trustFile()}) as
 * {@code csi.security.trust-file}: record signatures are enforced in tests as in production; and claim-service's sealing
 * key file ({@code csi.secrets.seal-key-file}, made on first use; issue 20 item 4).
 */
public class IdentityResource implements QuarkusTestResourceLifecycleManager {

    @Override
    public Map<String, String> start() {
        TestIdentities.sealing(TestIdentities.CLAIM_SERVICE);
        return Map.of("csi.security.trust-file", TestIdentities.trustFile().toString(),
                "csi.secrets.seal-key-file", TestIdentities.sealKeyFile(TestIdentities.CLAIM_SERVICE).toString());
    }

    @Override
    public void stop() {
    }
}
