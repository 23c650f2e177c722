package io.csiorchestrator.plugins.messaging;

import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.interceptor.Interceptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * Creates the topics this service reads and writes when they are missing, before the channels
 * start: {@code plugin-health}, its dead-letter topic and {@code plugin-status}, and the node lease topics
 * {@code node-lease-requests} (with its dead-letter topic) and {@code node-leases}; the compacted ones must be
 * log-compacted (a topic auto-created by a producer would not be). Existing topics are left as they
 * are. Switch off with {@code csi.topics.provision=false} where topics are managed elsewhere.
 */
@ApplicationScoped
public class TopicProvisioning {

    /** The Kafka client settings (service-support's KafkaSecurity); PLAINTEXT when built by hand in a test. */
    @Inject
    io.csiorchestrator.events.KafkaClientSecurity kafkaSecurity = io.csiorchestrator.events.KafkaClientSecurity.plaintext();

    private static final Logger LOG = Logger.getLogger(TopicProvisioning.class);

    @Inject
    TopicCatalog topics;
    @ConfigProperty(name = "kafka.bootstrap.servers", defaultValue = "localhost:9092")
    String bootstrapServers;
    @ConfigProperty(name = "csi.topics.provision", defaultValue = "true")
    boolean provision;
    @ConfigProperty(name = "csi.topics.replication-factor", defaultValue = "1")
    short replicationFactor;

    void provision(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE + 10) StartupEvent event)
            throws InterruptedException {
        if (!provision) {
            return;
        }
        List<NewTopic> wanted = new ArrayList<>();
        wanted.add(topic(topics.name(Topic.PLUGIN_HEALTH), Topic.PLUGIN_HEALTH, false));
        wanted.add(topic(topics.deadLetterName(Topic.PLUGIN_HEALTH), Topic.PLUGIN_HEALTH, false));
        wanted.add(topic(topics.name(Topic.PLUGIN_STATUS), Topic.PLUGIN_STATUS, Topic.PLUGIN_STATUS.compacted()));
        // node leases (issue 19): this service answers the requests and publishes the (compacted) leases
        wanted.add(topic(topics.name(Topic.NODE_LEASE_REQUESTS), Topic.NODE_LEASE_REQUESTS, false));
        wanted.add(topic(topics.deadLetterName(Topic.NODE_LEASE_REQUESTS), Topic.NODE_LEASE_REQUESTS, false));
        wanted.add(topic(topics.name(Topic.NODE_LEASES), Topic.NODE_LEASES, Topic.NODE_LEASES.compacted()));
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        kafkaSecurity.applyTo(props);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "plugin-registry-service-provisioning");
        try (Admin admin = Admin.create(props)) {
            Set<String> existing = admin.listTopics().names().get(30, TimeUnit.SECONDS);
            for (NewTopic topic : wanted) {
                if (existing.contains(topic.name())) {
                    continue;
                }
                try {
                    admin.createTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
                    LOG.infof("created topic %s (%d partitions, %s)", topic.name(), topic.numPartitions(), topic.configs());
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw new IllegalStateException("could not create topic " + topic.name() + ": " + e.getCause(), e);
                    }
                }
            }
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("could not list the topics on " + bootstrapServers + ": " + e, e);
        }
    }

    private NewTopic topic(String name, Topic topic, boolean compacted) {
        NewTopic newTopic = new NewTopic(name, topic.defaultPartitions(), replicationFactor);
        return compacted ? newTopic.configs(Map.of("cleanup.policy", "compact")) : newTopic;
    }
}
