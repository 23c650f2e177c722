package io.csiorchestrator.testkit;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.util.Map;

/**
 * Hands the services under test this JVM's trust file of record-signing keys ({@link TestIdentities#trustFile()}) as
 * {@code csi.security.trust-file}: record signatures are enforced in tests as in production.
 */
public class IdentityResource implements QuarkusTestResourceLifecycleManager {

    @Override
    public Map<String, String> start() {
        return Map.of("csi.security.trust-file", TestIdentities.trustFile().toString());
    }

    @Override
    public void stop() {
    }
}
