package io.csiorchestrator.plugins;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/**
 * A TTL of 2 s and removal after 10 s, swept every second, so expiry can be watched in a test; recording a report
 * is retried with the production backoff (up to 10 s, not the test profile's 500 ms), so that after an outage of
 * the database the sweep runs before a waiting report is tried again, as it does in production.
 */
public class ShortTtlProfile implements QuarkusTestProfile {

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of(
                "csi.registry.instance-ttl", "2s",
                "csi.registry.plugin-gc-after", "10s",
                "csi.registry.sweep-interval", "1s",
                "csi.registry.report-retry-max-backoff", "10s");
    }
}
