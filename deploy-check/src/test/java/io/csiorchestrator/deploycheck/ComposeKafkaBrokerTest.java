package io.csiorchestrator.deploycheck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.csiorchestrator.events.KafkaAccess.Principal;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.KafkaUsers;
import io.csiorchestrator.localinfra.Kraft;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;

/**
 * docker-compose's broker as its own scripts make it, run for real (no container engine here: an in-process Kafka of
 * the image's version): {@code deploy/compose/kafka-init.sh} makes the key material with keytool, exactly as the
 * {@code kafka-init} container would, {@code deploy/compose/kafka-start.sh} writes the broker's settings
 * ({@code CSI_KAFKA_CONFIG_ONLY=1}); only the compose host name {@code kafka} and the fixed ports are replaced by
 * loopback and free ports. The storage is formatted with the broker's and csi-admin's SCRAM credentials as the start
 * script does; claim-service is issued from the KafkaAccess table (what {@code kafka-users.sh} renders) with the
 * password kafka-init put in claim-service's volume.
 */
class ComposeKafkaBrokerTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    /** A topic nobody has an ACL on: only super users may touch it (allow.everyone.if.no.acl.found=false). */
    private static final String NO_ACL_TOPIC = "compose-check-no-acl";

    private static Path dir;
    private static KafkaRaftServer server;
    private static String bootstrap;
    private static String hostBootstrap;
    private static Path ca;
    private static KafkaClientSecurity admin;

    @BeforeAll
    static void startComposeBroker() throws Exception {
        dir = Files.createTempDirectory("csi-compose-kafka-");
        Path out = dir.resolve("out");
        for (String volume : List.of("broker", "claim-service", "plugin-registry-service", "node")) {
            Files.createDirectories(out.resolve(volume));
        }
        String uid = String.valueOf(Files.getAttribute(dir, "unix:uid"));
        run(Map.of("CSI_KAFKA_MATERIAL", dir.resolve("material").toString(), "CSI_KAFKA_OUT", out.toString(),
                "CSI_KAFKA_UID", uid, "CSI_SERVICE_UID", uid, "CSI_WORKER_UID", uid, "CSI_NODE_ID", "node-1"),
            "deploy/compose/kafka-init.sh");
        Path secrets = out.resolve("broker");
        run(Map.of("CSI_KAFKA_CONFIG_ONLY", "1", "CSI_KAFKA_SECRETS", secrets.toString(),
            "CSI_KAFKA_CONF_DIR", dir.resolve("conf").toString(), "CLUSTER_ID", "4YEu_ozjR0iXbxiWfxbCNA"),
            "deploy/compose/kafka-start.sh");

        int[] ports = Kraft.freePorts(3);
        String settings = Files.readString(dir.resolve("conf/server.properties"))
            .replace("kafka:9093", "localhost:9093").replace("kafka:9092", "localhost:9092")
            .replace(":9092", ":" + ports[0]).replace(":9093", ":" + ports[1]).replace(":29092", ":" + ports[2])
            .replace("/var/lib/kafka/data", dir.resolve("logs").toString());
        Path props = dir.resolve("conf/server.properties");
        Files.writeString(props, settings);
        Kraft.format("4YEu_ozjR0iXbxiWfxbCNA", props, List.of(
            "--add-scram", "SCRAM-SHA-512=[name=csi-kafka-broker,password=" + secret(secrets.resolve("broker.password")) + "]",
            "--add-scram", "SCRAM-SHA-512=[name=csi-admin,password=" + secret(secrets.resolve("admin.password")) + "]"));
        Properties config = new Properties();
        try (InputStream in = Files.newInputStream(props)) {
            config.load(in);
        }
        server = new KafkaRaftServer(new KafkaConfig(config, false), Time.SYSTEM);
        server.startup();
        bootstrap = "localhost:" + ports[0];
        hostBootstrap = "localhost:" + ports[2];
        ca = secrets.resolve("ca.pem");
        admin = KafkaClientSecurity.scram("csi-admin", secrets.resolve("admin.password"), ca);
        Kraft.awaitReady(bootstrap, admin, WAIT);
        for (Topic topic : Topic.values()) {
            Kraft.createTopic(bootstrap, admin, topic.baseName(), 1, Map.of());
        }
        Kraft.createTopic(bootstrap, admin, NO_ACL_TOPIC, 1, Map.of());
        try (Admin client = Kraft.admin(bootstrap, admin)) {
            new KafkaUsers(client).issue(Principal.claimService(), secret(out.resolve("claim-service/password")),
                TopicCatalog.unprefixed());
        }
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.shutdown();
            server.awaitShutdown();
        }
        if (dir != null) {
            Kraft.deleteRecursively(dir);
        }
    }

    /** A PLAINTEXT producer gets no answer from either client listener (compose network's and the host's). */
    @Test
    void plaintextProducerGetsNothingOnEitherListener() {
        for (String address : List.of(bootstrap, hostBootstrap)) {
            Throwable failure = sendFailure(KafkaClientSecurity.plaintext(), address, "claim-status");
            assertInstanceOf(TimeoutException.class, failure, "PLAINTEXT on " + address + ": " + failure);
        }
    }

    /**
     * claim-service, with the password kafka-init handed to its volume (0600) and the CA, writes claim-status on both
     * listeners but is refused claim-requested (not its right) and a topic without any ACL (no allow-everyone); an
     * unknown user is refused.
     */
    @Test
    void principalWritesWithinItsAclsOnlyAndUnknownUsersAreRefused() throws Exception {
        KafkaClientSecurity claimService = KafkaClientSecurity.scram("claim-service",
            dir.resolve("out/claim-service/password"), dir.resolve("out/claim-service/ca.pem"));
        for (String address : List.of(bootstrap, hostBootstrap)) {
            try (KafkaProducer<String, String> producer = producer(claimService, address)) {
                producer.send(new ProducerRecord<>("claim-status", "k", "v")).get(30, TimeUnit.SECONDS);
            }
            Throwable refused = sendFailure(claimService, address, "claim-requested");
            assertInstanceOf(TopicAuthorizationException.class, refused, "claim-service writes claim-requested: " + refused);
            Throwable noAcl = sendFailure(claimService, address, NO_ACL_TOPIC);
            assertInstanceOf(TopicAuthorizationException.class, noAcl, "claim-service writes a topic without ACLs: " + noAcl);
        }
        Throwable unknown = sendFailure(KafkaClientSecurity.scramWithPassword("mallory", "guessed", ca), bootstrap,
            "claim-status");
        assertInstanceOf(SaslAuthenticationException.class, unknown, "unknown user: " + unknown);
    }

    /**
     * The compose broker signs delegation tokens (kafka-init's token key): a node's token, issued by csi-admin as
     * {@code ./csi kafka-credential issue} does, logs in on the host listener as the node and writes within the node's
     * ACLs only; once revoked it is refused.
     */
    @Test
    void aNodesDelegationTokenLogsInAsTheNodeUntilRevoked() throws Exception {
        io.csiorchestrator.events.KafkaToken token;
        try (Admin client = Kraft.admin(bootstrap, admin)) {
            KafkaUsers users = new KafkaUsers(client);
            users.grant(Principal.node("node-1"), TopicCatalog.unprefixed());
            token = users.issueToken("node-node-1", java.time.Duration.ofDays(30));
        }
        KafkaClientSecurity node = KafkaClientSecurity.token(token, ca);
        try (KafkaProducer<String, String> producer = producer(node, hostBootstrap)) {
            producer.send(new ProducerRecord<>("mount-done", "node-1", "{}")).get(30, TimeUnit.SECONDS);
        }
        Throwable refused = sendFailure(node, hostBootstrap, "claim-requested");
        assertInstanceOf(TopicAuthorizationException.class, refused, "a node's token writes claim-requested: " + refused);
        try (Admin client = Kraft.admin(bootstrap, admin)) {
            assertEquals(1, new KafkaUsers(client).revokeTokens("node-node-1"));
        }
        Throwable revoked = sendFailure(node, hostBootstrap, "mount-done");
        assertInstanceOf(SaslAuthenticationException.class, revoked, "a revoked token: " + revoked);
    }

    private static Throwable sendFailure(KafkaClientSecurity security, String address, String topic) {
        try (KafkaProducer<String, String> producer = producer(security, address)) {
            producer.send(new ProducerRecord<>(topic, "k", "refused?")).get();
            throw new AssertionError("send to " + topic + " on " + address + " succeeded, expected a refusal");
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        } catch (RuntimeException e) {
            return e;
        }
    }

    private static KafkaProducer<String, String> producer(KafkaClientSecurity security, String address) {
        Properties p = security.applyTo(new Properties());
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, address);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "compose-check-" + UUID.randomUUID());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static String secret(Path file) throws IOException {
        return Files.readString(file, StandardCharsets.UTF_8).strip();
    }

    /** Runs {@code sh <script>} of the repository with {@code env}; fails the test with its output if it fails. */
    private static void run(Map<String, String> env, String script) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("sh", Manifests.root().resolve(script).toString()));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(env);
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(2, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            throw new AssertionError(script + " did not finish in 2 minutes: " + output);
        }
        assertEquals(0, process.exitValue(), script + ": " + output);
    }
}
