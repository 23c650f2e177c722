package io.csiorchestrator.claims;

import io.csiorchestrator.events.NodePartitioner;
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
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * The topic names (prefix {@code csi.topics.prefix}) and the partition count of node-commands as the
 * broker has it, read at start (before the consumers run): a node command's outbox row records
 * {@link NodePartitioner#partitionFor} with that count; the outbox relay sends it to the node's
 * partition under the count its producer sees at send time ({@code OutboxProducer#partitionCount}), so
 * partitions added later are followed. Missing contract topics are created at start unless
 * {@code csi.topics.create=false}.
 */
@ApplicationScoped
public class KafkaTopics {

    /** The Kafka client settings (service-support's KafkaSecurity); PLAINTEXT when built by hand in a test. */
    @Inject
    io.csiorchestrator.events.KafkaClientSecurity kafkaSecurity = io.csiorchestrator.events.KafkaClientSecurity.plaintext();

    private static final Logger LOG = Logger.getLogger(KafkaTopics.class);
    private static final Set<Topic> DEAD_LETTERED = Set.of(Topic.CLAIM_REQUESTED, Topic.MOUNT_DONE, Topic.PLUGIN_STATUS,
            Topic.NODE_STATE, Topic.NODE_EVENTS);

    private final TopicCatalog catalog;
    private final String bootstrapServers;
    private final boolean create;
    private volatile int nodeCommandPartitions;

    // The prefix is Optional: MicroProfile Config treats an empty value as missing, and no prefix is the default.
    public KafkaTopics(@ConfigProperty(name = "csi.topics.prefix") java.util.Optional<String> prefix,
                       @ConfigProperty(name = "kafka.bootstrap.servers", defaultValue = "localhost:9092") String bootstrapServers,
                       @ConfigProperty(name = "csi.topics.create", defaultValue = "true") boolean create) {
        this.catalog = new TopicCatalog(prefix.orElse(""));
        this.bootstrapServers = bootstrapServers;
        this.create = create;
    }

    void onStart(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE + 10) StartupEvent event) {
        refresh();
    }

    /** Creates missing topics (if configured) and reads node-commands' partition count from the broker. */
    public synchronized void refresh() {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        kafkaSecurity.applyTo(props);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "claim-service-topics");
        try (Admin admin = Admin.create(props)) {
            if (create) {
                List<NewTopic> wanted = new ArrayList<>();
                for (Topic topic : Topic.values()) {
                    wanted.add(newTopic(catalog.name(topic), topic.defaultPartitions(), topic.compacted()));
                    if (DEAD_LETTERED.contains(topic)) {
                        wanted.add(newTopic(catalog.deadLetterName(topic), 1, false));
                    }
                }
                Set<String> existing = admin.listTopics().names().get(30, TimeUnit.SECONDS);
                List<NewTopic> missing = wanted.stream().filter(t -> !existing.contains(t.name())).toList();
                if (!missing.isEmpty()) {
                    try {
                        admin.createTopics(missing).all().get(30, TimeUnit.SECONDS);
                        LOG.infof("created topics %s", missing.stream().map(NewTopic::name).toList());
                    } catch (ExecutionException e) {
                        if (!(e.getCause() instanceof TopicExistsException)) {
                            throw e;
                        }
                    }
                }
            }
            String name = catalog.name(Topic.NODE_COMMANDS);
            int count = admin.describeTopics(List.of(name)).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get(name).partitions().size();
            nodeCommandPartitions = count;
            LOG.infof("%s has %d partitions", name, count);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading the topics", e);
        } catch (Exception e) {
            throw new IllegalStateException("could not read or create the topics on " + bootstrapServers + ": " + e.getMessage(), e);
        }
    }

    private static NewTopic newTopic(String name, int partitions, boolean compacted) {
        NewTopic topic = new NewTopic(name, partitions, (short) -1);
        return compacted ? topic.configs(Map.of("cleanup.policy", "compact")) : topic;
    }

    public TopicCatalog catalog() {
        return catalog;
    }

    public String name(Topic topic) {
        return catalog.name(topic);
    }

    /** The partition of node-commands for this node under the partition count read at start (recorded in the outbox row). */
    public int nodeCommandPartition(String nodeId) {
        int count = nodeCommandPartitions;
        if (count <= 0) {
            throw new IllegalStateException("the partition count of node-commands is not known yet");
        }
        return NodePartitioner.partitionFor(nodeId, count);
    }
}
