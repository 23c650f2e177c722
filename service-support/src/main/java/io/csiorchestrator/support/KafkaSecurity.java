package io.csiorchestrator.support;

import java.util.HashMap;
import java.util.Map;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;

import org.eclipse.microprofile.config.Config;
import org.jboss.logging.Logger;

import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.SharedSslEngineFactory;
import io.quarkus.runtime.annotations.RegisterForReflection;
import io.smallrye.reactive.messaging.ClientCustomizer;

/**
 * Every Kafka client of a service gets its security settings from here ({@link KafkaClientSecurity}: the
 * {@code csi.kafka.*} properties, or their {@code CSI_KAFKA_*} environment variables): each SmallRye channel's
 * consumer and producer, its dead-letter producer (through this {@link ClientCustomizer}), and the service's own
 * admin clients and plain producers/consumers (which inject the {@link KafkaClientSecurity} bean). Their TLS settings
 * name {@link SharedSslEngineFactory}, which Kafka instantiates by its class name: registered for a native image here,
 * once for every service.
 */
@ApplicationScoped
@RegisterForReflection(targets = SharedSslEngineFactory.class)
public class KafkaSecurity implements ClientCustomizer<Map<String, Object>> {

    private static final Logger LOG = Logger.getLogger(KafkaSecurity.class);

    private final KafkaClientSecurity security;

    @Inject
    public KafkaSecurity(Config config) {
        this(KafkaClientSecurity.from(name -> config.getOptionalValue(name, String.class)));
        LOG.infof("Kafka clients: %s", security); // names the user and files, never the password
    }

    KafkaSecurity(KafkaClientSecurity security) {
        this.security = security;
    }

    /** The service's Kafka client settings, for its own admin clients, producers and consumers. */
    @Produces
    @Singleton
    KafkaClientSecurity clientSecurity() {
        return security;
    }

    @Override
    public Map<String, Object> customize(String channel, org.eclipse.microprofile.config.Config channelConfig,
                                         Map<String, Object> config) {
        return security.applyTo(new HashMap<>(config));
    }
}
