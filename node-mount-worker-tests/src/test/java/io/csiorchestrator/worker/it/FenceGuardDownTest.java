package io.csiorchestrator.worker.it;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeLease;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.NodeLeaseState;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.NodeMountWorker;
import io.csiorchestrator.worker.lease.FenceGuard;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.path.json.JsonPath;
import jakarta.inject.Inject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/**
 * The worker with fencing and its guard on (a real guard process, the real closed broker; a thread of the test answers
 * every lease request of the worker as plugin-registry-service, ttl 30 s, as soon as it is read, so the lease stays
 * valid throughout, however slowly the test's own steps run on a loaded machine): the guard is
 * killed with -9 and its FIFO path taken by a directory, so that no guard can be started again. The worker is then not
 * ready, its readiness check naming the guard's reason while the lease is valid, and {@code csi_node_fence_guard_running}
 * is 0; once the path is repaired the worker starts a new guard by itself (its backoff) and is ready again, the gauge 1.
 */
@QuarkusTest
@TestProfile(FenceGuardDownTest.Guarded.class)
class FenceGuardDownTest {

    static final String NODE = "guard-down-node";
    static final TopicCatalog TOPICS = new TopicCatalog("guard-down.");
    static final Duration WAIT = Duration.ofSeconds(60);

    public static class Guarded implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            io.csiorchestrator.events.identity.Principal node = io.csiorchestrator.events.identity.Principal.node(NODE);
            io.csiorchestrator.testkit.TestIdentities.sealing(node); // this node's own sealing key (issue 20 item 4)
            Map<String, String> config = new HashMap<>(Map.of("csi.worker.fencing.enabled", "true",
                    "csi.worker.fencing.guard", "true", "csi.fencing.lease-ttl", "30s", "csi.worker.node-id", NODE,
                    TopicCatalog.PREFIX_PROPERTY, TOPICS.prefix(),
                    "csi.worker.seal-key-file", io.csiorchestrator.testkit.TestIdentities.sealKeyFile(node).toString()));
            KafkaResource.createContractTopics(TOPICS.prefix());
            config.putAll(KafkaResource.applicationSecurity("NODE:" + NODE, TOPICS.prefix()));
            return config;
        }
    }

    @Inject
    NodeMountWorker worker;

    private static JsonPath health() {
        return given().get("/q/health/ready").then().extract().jsonPath();
    }

    private static String data(JsonPath health, String key) {
        return health.getString("checks.find { it.name == 'node-mount-worker' }.data.'" + key + "'");
    }

    private static String gauge() {
        return given().get("/q/metrics").then().statusCode(200).extract().asString().lines()
                .filter(l -> l.startsWith("csi_node_fence_guard_running")).findFirst().orElse("(none)");
    }

    @Test
    void aGuardThatCannotBeStartedAgainTakesTheWorkerOutOfReadinessUntilARepairedStartRunsOne() throws Exception {
        try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker();
             KafkaTestClient registry = KafkaTestClient.forSharedBroker(
                     io.csiorchestrator.events.KafkaAccess.Principal.pluginRegistry(), TOPICS.prefix())) {
            Thread grants = new Thread(() -> grantEveryRequest(kafka, registry), "test-registry");
            grants.setDaemon(true);
            grants.start();
            await().atMost(WAIT).until(() -> given().get("/q/health/ready").statusCode() == 200);
            FenceGuard guard = worker.fenceGuard();
            long first = guard.pid();
            Path root = worker.paths().root();
            try {
                assertTrue(data(health(), "fence guard").equals("running (pid " + first + ")"), health().prettify());
                assertTrue(gauge().endsWith(" 1.0"), gauge());

                ProcessHandle.of(first).orElseThrow().destroyForcibly();
                await().atMost(WAIT).until(() -> ProcessHandle.of(first).isEmpty());
                Path fifo = root.resolve(FenceGuard.FIFO);
                Files.delete(fifo);
                Files.createDirectory(fifo);

                // (found gone, the worker is not ready at once; the reason becomes the failed start's once it failed)
                await().atMost(WAIT).until(() -> given().get("/q/health/ready").statusCode() == 503
                        && String.valueOf(data(health(), "fence guard")).startsWith("down: cannot start"));
                JsonPath down = health();
                String why = data(down, "fence guard");
                assertTrue(why.startsWith("down: cannot start the fence guard") && why.contains(fifo + " exists and is not a FIFO"),
                        down.prettify());
                assertTrue(data(down, "lease").startsWith("valid"), "not ready for the guard alone: " + down.prettify());
                assertTrue(gauge().endsWith(" 0.0"), gauge());

                Files.delete(fifo); // repaired: the worker's next try (its backoff) starts a guard
                await().atMost(WAIT).until(() -> given().get("/q/health/ready").statusCode() == 200);
                long second = worker.fenceGuard().pid();
                assertNotEquals(first, second);
                assertTrue(data(health(), "fence guard").equals("running (pid " + second + ")"), health().prettify());
                assertTrue(FenceGuard.liveGuard(root).orElseThrow() == second);
                assertTrue(gauge().endsWith(" 1.0"), gauge());
            } finally {
                worker.stop(); // no tick starts another guard after the one killed here
                FenceGuard.liveGuard(root).ifPresent(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
                granting = false;
                grants.join(10_000);
            }
        }
    }

    private static volatile boolean granting = true;

    /**
     * Answers each of the worker's lease requests as the registry would (epoch 1, ttl 30 s), from the moment it is read:
     * the test's observer reads the requests from their end at start (its own consumer, assigned, no group), the
     * registry's client sends the answers. A send that fails on a loaded machine does not end the grants: the worker
     * asks again within ttl / 6, and that request is answered.
     */
    private static void grantEveryRequest(KafkaTestClient kafka, KafkaTestClient registry) {
        Properties c = kafka.security().applyTo(new Properties());
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        String topic = TOPICS.name(Topic.NODE_LEASE_REQUESTS);
        try (KafkaConsumer<String, String> requests = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> partitions = requests.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).toList();
            requests.assign(partitions);
            requests.seekToBeginning(partitions); // a request sent before this thread ran is answered too
            while (granting) {
                for (ConsumerRecord<String, String> r : requests.poll(Duration.ofMillis(100))) {
                    NodeLeaseRequested q = EventCodec.decode(NodeLeaseRequested.class, r.value());
                    if (NODE.equals(q.nodeId())) {
                        answer(registry, q);
                    }
                }
            }
        }
    }

    private static void answer(KafkaTestClient registry, NodeLeaseRequested request) {
        NodeLease lease = new NodeLease(NODE, 1, NodeLeaseState.VALID, request.requestId(), 30_000, 5_000, Instant.now());
        RecordHeaders h = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_LEASE, "/test-registry").writeTo(h);
        Map<String, String> headers = new HashMap<>();
        h.forEach(x -> headers.put(x.key(), new String(x.value(), java.nio.charset.StandardCharsets.UTF_8)));
        try {
            registry.send(TOPICS.name(Topic.NODE_LEASES), NODE, EventCodec.encodeToString(lease), headers);
        } catch (RuntimeException e) {
            System.err.println("test registry: could not grant request " + request.requestId() + ": " + e);
        }
    }
}
