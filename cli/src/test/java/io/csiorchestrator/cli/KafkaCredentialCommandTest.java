package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.KafkaToken;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.BrokerSecurity;
import io.csiorchestrator.localinfra.KafkaMain;
import io.csiorchestrator.testkit.KafkaBroker;

/**
 * {@code ./csi kafka-credential} (issue 20 item 8) against a real secured broker, with the admin credential laid
 * out as {@code ./csi up} keeps it: a node's token is issued into a 0600 file and logs in as the node (its ACLs
 * only), renewal moves its expiry on without a new HMAC while a client of the holder stays connected and keeps writing
 * (its connection re-authenticated with the renewed token), and after {@code revoke} the broker refuses it.
 */
class KafkaCredentialCommandTest {

    private static final TopicCatalog TOPICS = new TopicCatalog(Cluster.TOPIC_PREFIX);
    private static KafkaBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = KafkaBroker.builder().secured(true).reauthentication(Duration.ofSeconds(2))
                .tokenExpiryCheck(Duration.ofSeconds(1)).start();
        broker.createTopic(TOPICS.name(Topic.MOUNT_DONE), 1, Map.of());
        broker.createTopic(TOPICS.name(Topic.CLAIM_REQUESTED), 1, Map.of());
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void aNodeTokenIsIssuedRenewedAndRevoked(@TempDir Path work) throws Exception {
        // the admin's password and the CA where `up` keeps them
        Path security = Files.createDirectories(work.resolve(Cluster.KAFKA).resolve(KafkaMain.SECURITY_DIR));
        Path password = security.resolve(BrokerSecurity.ADMIN_PASSWORD);
        Files.copy(broker.passwordFileOf(io.csiorchestrator.events.KafkaAccess.ADMIN), password);
        Files.setPosixFilePermissions(password, PosixFilePermissions.fromString("rw-------"));
        Files.copy(broker.truststore(), security.resolve(BrokerSecurity.CA_FILE));
        String[] common = {"--work-dir", work.toString(), "--kafka", broker.bootstrapServers(),
                "--topic-prefix", Cluster.TOPIC_PREFIX};

        Instant before = Instant.now();
        Result issued = run(concat(new String[] {"kafka-credential", "issue", "node:node-7", "--ttl", "2h"}, common));
        assertEquals(0, issued.code, issued.toString());
        Path file = CliKafkaSecurity.tokenFile(work, "node-node-7");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        KafkaToken token = KafkaToken.read(file);
        assertEquals("node-node-7", token.owner());
        assertTrue(!token.expires().isBefore(before.plus(Duration.ofHours(2)).minusSeconds(1)), token.toString());
        assertTrue(issued.out.contains(token.tokenId()) && !issued.out.contains(token.hmac()), issued.out);

        KafkaClientSecurity node = KafkaClientSecurity.token(file, broker.truststore());
        // the holder's client, connected before the renewal and kept across it
        try (KafkaProducer<String, String> producer = producer(node)) {
            producer.send(new ProducerRecord<>(TOPICS.name(Topic.MOUNT_DONE), "node-7", "{}")).get();
            Throwable refused = failure(producer, TOPICS.name(Topic.CLAIM_REQUESTED));
            assertInstanceOf(TopicAuthorizationException.class, refused, "the node's ACLs only: " + refused);

            double reauthenticated = reauthentications(producer);
            Result renewed = run(concat(new String[] {"kafka-credential", "renew", "--token-file", file.toString(),
                    "--ttl", "1h"}, common));
            assertEquals(0, renewed.code, renewed.toString());
            KafkaToken after = KafkaToken.read(file);
            assertEquals(token.hmac(), after.hmac(), "a renewal keeps the HMAC: the holder needs no restart");
            assertTrue(after.expires().isBefore(token.expires()), "renewed for 1h from now: " + after + " was " + token);
            assertTrue(!after.expires().isBefore(Instant.now().plus(Duration.ofHours(1)).minusSeconds(60)),
                    "renewed for 1h from now: " + after);
            // no restart: the client connected before the renewal re-authenticates its connection with the same
            // token (the broker asks for it every 2 s here, connections.max.reauth.ms) and keeps writing
            Awaitility.await("the connected client re-authenticated after the renewal").atMost(Duration.ofSeconds(60))
                    .until(() -> {
                        producer.send(new ProducerRecord<>(TOPICS.name(Topic.MOUNT_DONE), "node-7", "{}")).get();
                        return reauthentications(producer) > reauthenticated;
                    });
            producer.send(new ProducerRecord<>(TOPICS.name(Topic.MOUNT_DONE), "node-7", "{\"after\":\"renewal\"}")).get();
        }

        Result listed = run(concat(new String[] {"kafka-credential", "list", "node:node-7"}, common));
        assertTrue(listed.out.contains(token.tokenId()), listed.out);

        Result revoked = run(concat(new String[] {"kafka-credential", "revoke", "node:node-7"}, common));
        assertEquals(0, revoked.code, revoked.toString());
        assertTrue(revoked.out.contains("revoked 1 token"), revoked.out);
        Awaitility.await("a revoked token's new login is refused").atMost(Duration.ofSeconds(60)).until(() -> {
            try (KafkaProducer<String, String> producer = producer(node)) {
                return failure(producer, TOPICS.name(Topic.MOUNT_DONE)) instanceof SaslAuthenticationException;
            }
        });

        Result service = run(concat(new String[] {"kafka-credential", "issue", "claim-service"}, common));
        assertEquals(2, service.code, service.toString());
        assertTrue(service.err.contains("node:<id> or scheduler:<id>"), service.err);
        Result longTtl = run(concat(new String[] {"kafka-credential", "issue", "scheduler:s1", "--ttl", "400d"}, common));
        assertEquals(2, longTtl.code, longTtl.toString());
        assertTrue(longTtl.err.contains("--ttl is at most 365d"), longTtl.err);
        assertFalse(Files.exists(CliKafkaSecurity.tokenFile(work, "scheduler-s1")), "nothing issued");
    }

    /**
     * The Kubernetes way (deploy/README.md): no work dir of {@code ./csi up}; the cluster's bootstrap from {@code --kafka}
     * and its admin credential from {@code CSI_KAFKA_USERNAME}, {@code _PASSWORD_FILE}, {@code _TRUSTSTORE} (set here as
     * the system properties of the same settings, which {@code KafkaClientSecurity.fromEnvironment} reads first); the
     * token goes to {@code --out} (0600) and logs in as the node.
     */
    @Test
    void aNodeTokenIsIssuedAgainstAnotherClusterWithTheAdminCredentialOfTheEnvironment(@TempDir Path work) throws Exception {
        Path out = work.resolve("to-copy-to-the-node/token");
        Map<String, String> admin = Map.of(KafkaClientSecurity.USERNAME, io.csiorchestrator.events.KafkaAccess.ADMIN,
                KafkaClientSecurity.PASSWORD_FILE, broker.passwordFileOf(io.csiorchestrator.events.KafkaAccess.ADMIN).toString(),
                KafkaClientSecurity.TRUSTSTORE, broker.truststore().toString());
        admin.forEach(System::setProperty);
        Result issued;
        try {
            issued = run("kafka-credential", "issue", "node:node-8", "--ttl", "30d", "--out", out.toString(),
                    "--kafka", broker.bootstrapServers(), "--topic-prefix", Cluster.TOPIC_PREFIX,
                    "--work-dir", work.resolve("no-up").toString());
        } finally {
            admin.keySet().forEach(System::clearProperty);
        }
        assertEquals(0, issued.code, issued.toString());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(out)));
        KafkaToken token = KafkaToken.read(out);
        assertEquals("node-node-8", token.owner());
        try (KafkaProducer<String, String> producer = producer(KafkaClientSecurity.token(out, broker.truststore()))) {
            producer.send(new ProducerRecord<>(TOPICS.name(Topic.MOUNT_DONE), "node-8", "{}")).get();
        }
    }

    private record Result(int code, String out, String err) {
    }

    private static Result run(String... argv) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(argv, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static String[] concat(String[] a, String[] b) {
        String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    /** The client's successful re-authentications of its connections so far (Kafka's selector metric). */
    private static double reauthentications(KafkaProducer<String, String> producer) {
        return producer.metrics().entrySet().stream()
                .filter(e -> e.getKey().name().equals("successful-reauthentication-total")
                        && e.getKey().group().equals("producer-metrics"))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum();
    }

    private static KafkaProducer<String, String> producer(KafkaClientSecurity security) {
        Properties p = security.applyTo(new Properties());
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static Throwable failure(KafkaProducer<String, String> producer, String topic) {
        try {
            producer.send(new ProducerRecord<>(topic, "k", "v")).get();
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        } catch (RuntimeException e) {
            return e;
        }
    }
}
