package io.csiorchestrator.plugins;

import io.quarkus.test.junit.QuarkusTestProfile;
import java.util.Map;

/** A TTL of 2 s and removal after 10 s, swept every second, so expiry can be watched in a test. */
public class ShortTtlProfile implements QuarkusTestProfile {

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of(
                "csi.registry.instance-ttl", "2s",
                "csi.registry.plugin-gc-after", "10s",
                "csi.registry.sweep-interval", "1s");
    }
}
