package io.csiorchestrator.plugins.config;

import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.plugins.domain.InstanceRules;
import io.quarkus.arc.DefaultBean;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Produces;
import jakarta.inject.Singleton;
import java.time.Clock;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** The plain objects the registry is built from: its clock, rules and topic names. */
@ApplicationScoped
public class RegistryBeans {

    /** The registry's clock; a test may replace it. */
    @Produces
    @Singleton
    @DefaultBean
    Clock clock() {
        return Clock.systemUTC();
    }

    /** Fails the start with a clear message when the TTL and removal delay don't make sense. */
    @Produces
    @Singleton
    InstanceRules instanceRules(RegistryConfig config) {
        return new InstanceRules(config.instanceTtl(), config.pluginGcAfter());
    }

    @Produces
    @Singleton
    TopicCatalog topicCatalog(@ConfigProperty(name = TopicCatalog.PREFIX_PROPERTY) java.util.Optional<String> prefix) {
        // Optional: MicroProfile Config treats an empty value as missing, and no prefix is the default.
        return new TopicCatalog(prefix.orElse(""));
    }
}
