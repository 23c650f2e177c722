package io.csiorchestrator.cli.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.cli.Cluster;
import io.csiorchestrator.cli.Main;
import io.csiorchestrator.cli.Mounts;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import io.csiorchestrator.cli.Wait;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.Topic;
import java.time.Duration;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * {@code ./csi up --simulated-nodes 12} ({@link Main#run}, work dir {@code target/sim-nodes-*}, free ports): the
 * real claim-service and plugin-registry-service (their packaged {@code quarkus-app}), Kafka and PostgreSQL as
 * separate processes, and the packaged node simulator ({@code node-simulator/target/node-simulator.jar}) in place
 * of the workers and plugins.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SimulatedNodesIT {

    private static final ObjectMapper MAPPER = new ObjectMapper();
    /** Twelve nodes on node-commands' twelve partitions: sim-node-3 shares its partition with sim-node-12. */
    private static final int NODES = 12;
    private static final String NODE = "sim-node-3";
    private static final String SHARING = "sim-node-12";

    private Path work;

    record Run(int code, String out, String err) {
        @Override
        public String toString() {
            return "exit " + code + "\n--- out\n" + out + "--- err\n" + err;
        }
    }

    @BeforeAll
    void up() throws IOException {
        work = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "sim-nodes-");
        Run up = csi("up", "--simulated-nodes", Integer.toString(NODES), "--work-dir", work.toString(), "--free-ports",
                "--fresh");
        assertEquals(0, up.code(), up.toString());
    }

    @AfterAll
    void down() {
        if (work != null) {
            Run down = csi("down", "--work-dir", work.toString());
            Mounts.unmountAllUnder(work);
            assertEquals(0, down.code(), down.toString());
        }
    }

    /**
     * The plugin registry lists the simulated plugin with every simulated node as a healthy instance (discovered
     * as real nodes are, from plugin-health) once {@code up} returns; once claim-service has handled the
     * plugin-status with all twelve nodes, a volume registered on that plugin is claimed for write on sim-node-3
     * and answered ready with a host path under sim-node-3's root, whose record there holds the allocation, while
     * sim-node-12, which reads the same partition of node-commands, has no record of the volume (it skipped the
     * command); released, it is answered released, the record no longer holds it, and the claim is a past claim.
     */
    @Test
    void aClaimIsReadyAndReleasedOnASimulatedNode() throws Exception {
        Run plugin = csi(withEndpoints("plugin", "status", Cluster.SIM_PLUGIN_ID, "-json"));
        assertEquals(0, plugin.code(), plugin.toString());
        JsonNode status = MAPPER.readTree(plugin.out());
        assertEquals(NODES, status.path("nodesHealthy").asInt(), plugin.out());
        List<String> nodes = new ArrayList<>();
        status.path("instances").forEach(i -> nodes.add(i.path("nodeId").asText()));
        List<String> expected = new ArrayList<>();
        for (int i = 1; i <= NODES; i++) {
            expected.add("sim-node-" + i);
        }
        assertEquals(expected.stream().sorted().toList(), nodes.stream().sorted().toList());
        int partitions = Topic.NODE_COMMANDS.defaultPartitions();
        assertEquals(NodePartitioner.partitionFor(NODE, partitions), NodePartitioner.partitionFor(SHARING, partitions),
                "the premise: " + NODE + " and " + SHARING + " share a partition");
        awaitClaimServiceHandledPluginStatusWithAllNodes();

        Path file = work.resolve("vol.json");
        Files.writeString(file, MAPPER.writeValueAsString(Map.of("id", "sim-vol", "name", "sim-vol",
                "externalId", "ext-sim-vol", "pluginId", Cluster.SIM_PLUGIN_ID,
                "accessMode", "multi-node-single-writer", "attachmentMode", "file-system")));
        Run register = csi(withEndpoints("volume", "register", file.toString()));
        assertEquals(0, register.code(), register.toString());

        Run claim = csi(withEndpoints("volume", "claim", "sim-vol", "--alloc", "alloc-1", "--node", NODE,
                "--mode", "write", "--timeout", "90", "-json"));
        assertEquals(0, claim.code(), claim.toString());
        JsonNode ready = last(claim);
        assertEquals("ready", ready.path("state").asText(), claim.out());
        Path nodeRoot = work.resolve(Cluster.SIM_NODES_DIR).resolve(NODE).toRealPath();
        assertEquals(nodeRoot.resolve("per-alloc/alloc-1/default/sim-vol").toString(), ready.path("hostPath").asText());
        Path record = nodeRoot.resolve("records/default/sim-vol.json");
        assertTrue(MAPPER.readTree(record.toFile()).path("usages").has("alloc-1"), Files.readString(record));
        Path other = work.resolve(Cluster.SIM_NODES_DIR).resolve(SHARING).resolve("records/default/sim-vol.json");
        assertTrue(!Files.exists(other), SHARING + " handled a command of " + NODE + ": " + other);

        Run release = csi(withEndpoints("volume", "release", "sim-vol", "--alloc", "alloc-1", "--timeout", "90",
                "-json"));
        assertEquals(0, release.code(), release.toString());
        assertEquals("released", last(release).path("state").asText(), release.out());
        assertTrue(MAPPER.readTree(record.toFile()).path("usages").isMissingNode(), Files.readString(record));

        Run volume = csi(withEndpoints("volume", "status", "sim-vol", "-json"));
        assertEquals(0, volume.code(), volume.toString());
        JsonNode v = MAPPER.readTree(volume.out());
        assertEquals(0, v.path("claims").size(), volume.out());
        assertEquals(NODE, v.path("pastClaims").path(0).path("nodeId").asText(), volume.out());
    }

    /**
     * Waits until claim-service has handled (committed past) a {@code plugin-status} record of the simulated
     * plugin with every node healthy: from then on it knows every node.
     */
    private void awaitClaimServiceHandledPluginStatusWithAllNodes() throws IOException {
        Properties e = endpoints();
        String topic = e.getProperty("csi.topics.prefix") + "plugin-status";
        // the broker is closed: read as its admin (the group offsets below are claim-service's)
        io.csiorchestrator.events.KafkaClientSecurity kafkaAdmin = io.csiorchestrator.events.KafkaClientSecurity.scram(
                io.csiorchestrator.events.KafkaAccess.ADMIN, work.resolve("kafka/security/admin.password"),
                work.resolve("kafka/security/ca.pem"));
        Properties props = kafkaAdmin.applyTo(new Properties());
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, e.getProperty("kafka.bootstrap.servers"));
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        TopicPartition[] found = new TopicPartition[1];
        long[] offset = {-1};
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Wait.until("a plugin-status record of " + Cluster.SIM_PLUGIN_ID + " with " + NODES + " healthy nodes",
                    Duration.ofSeconds(90), null, () -> {
                        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                            try {
                                if (Cluster.SIM_PLUGIN_ID.equals(r.key()) && r.value() != null
                                        && MAPPER.readTree(r.value()).path("nodesHealthy").asInt() == NODES) {
                                    found[0] = new TopicPartition(r.topic(), r.partition());
                                    offset[0] = r.offset();
                                    return Optional.of(true);
                                }
                            } catch (IOException ex) {
                                throw new java.io.UncheckedIOException(ex);
                            }
                        }
                        return Optional.empty();
                    });
        }
        Properties admin = kafkaAdmin.applyTo(new Properties());
        admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, e.getProperty("kafka.bootstrap.servers"));
        try (Admin client = Admin.create(admin)) {
            Wait.until("claim-service committed past " + found[0] + "@" + offset[0], Duration.ofSeconds(90), null, () -> {
                try {
                    OffsetAndMetadata committed = client.listConsumerGroupOffsets("claim-service")
                            .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS).get(found[0]);
                    return committed != null && committed.offset() > offset[0] ? Optional.of(true) : Optional.empty();
                } catch (Exception ex) {
                    return Optional.empty();
                }
            });
        }
    }

    private Properties endpoints() throws IOException {
        Properties e = new Properties();
        try (Reader reader = Files.newBufferedReader(work.resolve("endpoints.properties"))) {
            e.load(reader);
        }
        return e;
    }

    private static JsonNode last(Run run) throws IOException {
        JsonNode statuses = MAPPER.readTree(run.out()).path("statuses");
        return statuses.path(statuses.size() - 1);
    }

    private String[] withEndpoints(String... command) throws IOException {
        Properties e = endpoints();
        List<String> args = new ArrayList<>(List.of(command));
        args.addAll(List.of("--claims-url", e.getProperty("claims.url"), "--registry-url", e.getProperty("registry.url"),
                "--kafka", e.getProperty("kafka.bootstrap.servers"), "--topic-prefix", e.getProperty("csi.topics.prefix"),
                "--token-file", work.resolve("admin.token").toString(),
                // the work dir of `up`: the CLI signs its claim requests with the scheduler key kept there
                "--work-dir", work.toString()));
        return args.toArray(String[]::new);
    }

    private static Run csi(String... argv) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(argv, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String o = out.toString(StandardCharsets.UTF_8);
        String e = err.toString(StandardCharsets.UTF_8);
        System.out.print(o);
        System.err.print(e);
        return new Run(code, o, e);
    }
}
