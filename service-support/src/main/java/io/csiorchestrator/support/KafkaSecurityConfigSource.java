package io.csiorchestrator.support;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

import org.eclipse.microprofile.config.spi.ConfigSource;

import io.csiorchestrator.events.KafkaClientSecurity;

/**
 * The service's Kafka security settings as the global {@code kafka.*} configuration, for the Kafka clients Quarkus
 * makes itself and no {@link KafkaSecurity} customizer reaches: the Kafka readiness check's admin client above all
 * (a PLAINTEXT client reading a TLS listener takes TLS bytes for a message size and runs out of heap). Read from
 * the {@code CSI_KAFKA_*} environment variables or {@code -Dcsi.kafka.*} system properties (how {@code ./csi up},
 * compose and the manifests pass them); empty when no user is set. Registered through {@code META-INF/services}.
 */
public class KafkaSecurityConfigSource implements ConfigSource {

    private final Map<String, String> properties;

    public KafkaSecurityConfigSource() {
        Map<String, String> p = new HashMap<>();
        KafkaClientSecurity security;
        try {
            security = KafkaClientSecurity.fromEnvironment();
        } catch (RuntimeException e) {
            security = KafkaClientSecurity.plaintext(); // the KafkaSecurity bean fails the start with the reason
        }
        if (security.secured()) {
            security.clientProperties().forEach((key, value) -> p.put("kafka." + key, String.valueOf(value)));
        }
        this.properties = Map.copyOf(p);
    }

    @Override
    public Map<String, String> getProperties() {
        return properties;
    }

    @Override
    public Set<String> getPropertyNames() {
        return properties.keySet();
    }

    @Override
    public String getValue(String propertyName) {
        return properties.get(propertyName);
    }

    @Override
    public String getName() {
        return "csi-kafka-security";
    }

    /** Below application.properties (250): a service may still override a key there. */
    @Override
    public int getOrdinal() {
        return 150;
    }
}
