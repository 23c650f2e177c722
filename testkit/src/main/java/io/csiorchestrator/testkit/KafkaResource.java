package io.csiorchestrator.testkit;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.localinfra.Kraft;
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
 *   <li>on a closed broker (system property {@value SharedInfrastructure#SECURED_PROPERTY}{@code =true}, set per module):
 *       the application's principal ({@value #PRINCIPAL}) as {@code csi.kafka.*} (the service's own clients, through
 *       service-support's {@code KafkaSecurity}) and {@code kafka.*} (the clients Quarkus makes itself: the readiness
 *       check), issued on first use with its ACLs from {@link KafkaAccess} on the topics of {@value #TOPICS_PREFIX}</li>
 * </ul>
 *
 * <p>Init args:
 * <ul>
 *   <li>{@value #TOPICS} — topics to create before the application starts, {@code name:partitions} separated by
 *       commas, e.g. {@code node-commands:4,claim-requested:3} (existing topics are left as they are).</li>
 *   <li>{@value #PRINCIPAL} — the application's principal on a closed broker: {@code CLAIM_SERVICE},
 *       {@code PLUGIN_REGISTRY}, {@code NODE:<id>}, ... (a {@link KafkaAccess.Role} name, {@code :id} for nodes and
 *       schedulers). Required when the broker is closed.</li>
 *   <li>{@value #TOPICS_PREFIX} — the application's {@code csi.topics.prefix} (its ACLs name those topics).</li>
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

    /** Init arg: the application's principal on a closed broker, {@code ROLE} or {@code ROLE:id}. */
    public static final String PRINCIPAL = "principal";
    /** Init arg: the application's topic prefix, for its principal's ACLs. */
    public static final String TOPICS_PREFIX = "topics-prefix";
    /**
     * Init arg: {@code true} creates every topic of the contract under {@value #TOPICS_PREFIX} before the application
     * starts ({@link #createContractTopics}), for an application that does not create its topics itself (a worker).
     */
    public static final String CONTRACT_TOPICS = "contract-topics";

    private Map<String, Integer> topics = Map.of();
    private String principal;
    private String prefix = "";
    private boolean contractTopics;

    /** Whether the JVM's shared broker is closed (SASL_SSL, SCRAM, the authorizer). */
    public static boolean secured() {
        return SharedInfrastructure.kafkaSecured();
    }

    /**
     * Client settings on the shared broker for the super user {@value KafkaAccess#ADMIN} (topics, and test
     * observers that read every topic), PLAINTEXT when the broker is not closed.
     */
    public static KafkaClientSecurity adminSecurity() {
        return secured() ? fromCredential(SharedInfrastructure.kafkaCredential("ADMIN", "", "")) : KafkaClientSecurity.plaintext();
    }

    /**
     * Client settings on the shared broker as {@code principal}, with its ACLs on the topics of {@code prefix}
     * (issued on first use); PLAINTEXT when the broker is not closed. For test clients that play a node, a scheduler.
     */
    public static KafkaClientSecurity securityOf(KafkaAccess.Principal principal, String prefix) {
        if (!secured()) {
            return KafkaClientSecurity.plaintext();
        }
        return fromCredential(SharedInfrastructure.kafkaCredential(principal.role().name(), principal.id(),
            prefix == null ? "" : prefix));
    }

    private static KafkaClientSecurity fromCredential(String[] credential) {
        return KafkaClientSecurity.scram(credential[0], Path.of(credential[1]), Path.of(credential[2]));
    }

    /**
     * The configuration an application connecting as {@code principal} ({@code ROLE} or {@code ROLE:id}, as init arg
     * {@value #PRINCIPAL}) with its ACLs on the topics of {@code prefix} gets on the closed shared broker:
     * {@code csi.kafka.*} (the service's own clients) and the same as {@code kafka.*} (the clients Quarkus makes itself);
     * empty when the broker is not closed. For a test profile whose application runs as another principal (another
     * node) than the resource's: a profile's configuration overrides the resource's.
     */
    public static Map<String, String> applicationSecurity(String principal, String prefix) {
        Map<String, String> config = new LinkedHashMap<>();
        if (!secured()) {
            return config;
        }
        int colon = principal.indexOf(':');
        String role = colon < 0 ? principal : principal.substring(0, colon);
        String id = colon < 0 ? "" : principal.substring(colon + 1);
        String[] credential = SharedInfrastructure.kafkaCredential(role, id, prefix == null ? "" : prefix);
        config.put(KafkaClientSecurity.PROTOCOL, "SASL_SSL");
        config.put(KafkaClientSecurity.USERNAME, credential[0]);
        config.put(KafkaClientSecurity.PASSWORD_FILE, credential[1]);
        config.put(KafkaClientSecurity.TRUSTSTORE, credential[2]);
        // the clients Quarkus makes itself (the Kafka readiness check) read the global kafka.* settings
        fromCredential(credential).clientProperties().forEach((key, value) -> config.put("kafka." + key, String.valueOf(value)));
        return config;
    }

    /** {@code bootstrap.servers} of the JVM's shared broker (starting it if needed). */
    public static String bootstrapServers() {
        return SharedInfrastructure.kafkaBootstrapServers();
    }

    /** Creates a topic on the shared broker; {@code false} if it already existed (left as it is). */
    public static boolean createTopic(String name, int partitions, Map<String, String> configs) {
        return Kraft.createTopic(bootstrapServers(), adminSecurity(), name, partitions, configs);
    }

    /**
     * Creates every topic of the contract under {@code prefix} and its dead-letter topic that does not exist yet: one
     * partition each (compacted where the contract's topic is), as the open broker's auto-creation made them. A closed
     * broker, as every deployment's, creates no topic on first use (claim-service creates the contract's topics at
     * start); a test whose application under test is not claim-service creates them here, as the super user.
     */
    public static void createContractTopics(String prefix) {
        KafkaBroker.createContractTopics(bootstrapServers(), adminSecurity(), prefix);
    }

    @Override
    public void init(Map<String, String> initArgs) {
        topics = KafkaBroker.parseTopics(initArgs.get(TOPICS));
        principal = initArgs.get(PRINCIPAL);
        prefix = initArgs.getOrDefault(TOPICS_PREFIX, "");
        contractTopics = Boolean.parseBoolean(initArgs.get(CONTRACT_TOPICS));
    }

    @Override
    public Map<String, String> start() {
        String bootstrap = bootstrapServers();
        topics.forEach((name, partitions) -> createTopic(name, partitions, Map.of()));
        if (contractTopics) {
            createContractTopics(prefix);
        }
        Map<String, String> config = new LinkedHashMap<>();
        config.put(BOOTSTRAP_SERVERS_KEY, bootstrap);
        config.put("quarkus.kafka.devservices.enabled", "false");
        if (secured()) {
            if (principal == null || principal.isBlank()) {
                throw new IllegalStateException("the shared Kafka broker is closed: give KafkaResource the application's "
                    + "principal (init arg " + PRINCIPAL + ", e.g. PLUGIN_REGISTRY or NODE:node-1)");
            }
            config.putAll(applicationSecurity(principal, prefix));
        }
        return config;
    }

    /** Leaves the shared broker running for the next test class; the JVM's shutdown hook stops it. */
    @Override
    public void stop() {
        // shared per JVM
    }
}
