package io.csiorchestrator.testkit;

import java.util.LinkedHashMap;
import java.util.Map;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;

/**
 * Quarkus test resource giving the application a real Kafka broker: one in-process {@link KafkaBroker} per JVM,
 * started lazily by the first test that needs it, shared by every test class after it (whatever class loader
 * Quarkus uses), stopped by a shutdown hook when the JVM exits.
 *
 * <p>Config returned to the application:
 * <ul>
 *   <li>{@code kafka.bootstrap.servers} = {@code 127.0.0.1:<port>}</li>
 *   <li>{@code quarkus.kafka.devservices.enabled} = {@code false}</li>
 * </ul>
 *
 * <p>Init args:
 * <ul>
 *   <li>{@value #TOPICS} — topics to create before the application starts, {@code name:partitions} separated by
 *       commas, e.g. {@code node-commands:4,claim-requested:3} (existing topics are left as they are).</li>
 * </ul>
 *
 * <pre>{@code
 * @QuarkusTest
 * @QuarkusTestResource(value = KafkaResource.class, restrictToAnnotatedClass = false,
 *     initArgs = @ResourceArg(name = KafkaResource.TOPICS, value = "node-commands:4"))
 * class MyTest { ... }
 * }</pre>
 */
public class KafkaResource implements QuarkusTestResourceLifecycleManager {

    /** Init arg: topics to pre-create, {@code name:partitions,...}. */
    public static final String TOPICS = "topics";
    public static final String BOOTSTRAP_SERVERS_KEY = "kafka.bootstrap.servers";

    private Map<String, Integer> topics = Map.of();

    /** {@code bootstrap.servers} of the JVM's shared broker (starting it if needed). */
    public static String bootstrapServers() {
        return SharedInfrastructure.kafkaBootstrapServers();
    }

    /** Creates a topic on the shared broker; {@code false} if it already existed (left as it is). */
    public static boolean createTopic(String name, int partitions, Map<String, String> configs) {
        return KafkaBroker.createTopic(bootstrapServers(), name, partitions, configs);
    }

    @Override
    public void init(Map<String, String> initArgs) {
        topics = KafkaBroker.parseTopics(initArgs.get(TOPICS));
    }

    @Override
    public Map<String, String> start() {
        String bootstrap = bootstrapServers();
        topics.forEach((name, partitions) -> KafkaBroker.createTopic(bootstrap, name, partitions, Map.of()));
        Map<String, String> config = new LinkedHashMap<>();
        config.put(BOOTSTRAP_SERVERS_KEY, bootstrap);
        config.put("quarkus.kafka.devservices.enabled", "false");
        return config;
    }

    /** Leaves the shared broker running for the next test class; the JVM's shutdown hook stops it. */
    @Override
    public void stop() {
        // shared per JVM
    }
}
