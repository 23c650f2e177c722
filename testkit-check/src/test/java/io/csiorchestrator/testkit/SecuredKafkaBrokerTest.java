package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.KafkaAccess.Principal;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.KafkaToken;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.BrokerSecurity;
import io.csiorchestrator.localinfra.Certificates;

/**
 * A secured broker ({@code KafkaBroker.builder().secured(true)}) refuses whoever the {@link KafkaAccess} table does
 * not let in: clients without TLS and SCRAM, a wrong password, a principal without ACLs, a node writing a topic that
 * is not its own, a revoked credential and the old password of a rotated one (new connections at once, an open one
 * at its next re-authentication).
 */
class SecuredKafkaBrokerTest {

    private static final TopicCatalog TOPICS = new TopicCatalog("sec.");
    /** Short here so the open connection of a revoked credential ends while the test waits for it. */
    private static final Duration REAUTHENTICATION = Duration.ofSeconds(2);
    private static final Duration WAIT = Duration.ofSeconds(60);

    private static KafkaBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = KafkaBroker.builder().secured(true).reauthentication(REAUTHENTICATION)
            .tokenExpiryCheck(Duration.ofSeconds(1)).start();
        for (Topic topic : Topic.values()) {
            broker.createTopic(TOPICS.name(topic), 2, Map.of());
            broker.createTopic(TOPICS.deadLetterName(topic), 1, Map.of());
        }
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    /** A client speaking PLAINTEXT gets no answer at all: its producer's send and consumer's metadata time out. */
    @Test
    void plaintextProducerAndConsumerGetNothing() {
        KafkaClientSecurity plaintext = KafkaClientSecurity.plaintext();
        try (KafkaProducer<String, String> producer = producer(plaintext)) {
            Throwable failure = sendFailure(producer, TOPICS.name(Topic.CLAIM_REQUESTED));
            assertInstanceOf(TimeoutException.class, failure, "PLAINTEXT send: " + failure);
        }
        try (KafkaConsumer<String, String> consumer = consumer(plaintext, null)) {
            Throwable failure = failure(() -> consumer.partitionsFor(TOPICS.name(Topic.NODE_COMMANDS), Duration.ofSeconds(3)));
            assertInstanceOf(TimeoutException.class, failure, "PLAINTEXT metadata: " + failure);
        }
    }

    /** TLS with a user the broker does not know, or a known user with a wrong password: authentication fails. */
    @Test
    void unknownUserAndWrongPasswordAreRefused() {
        try (KafkaProducer<String, String> producer = producer(broker.credentialOf("mallory", "guessed-password"))) {
            Throwable failure = sendFailure(producer, TOPICS.name(Topic.CLAIM_REQUESTED));
            assertInstanceOf(SaslAuthenticationException.class, failure, "unknown user: " + failure);
        }
        broker.issue(Principal.scheduler("pw-check"), TOPICS);
        try (KafkaConsumer<String, String> consumer = consumer(broker.credentialOf("scheduler-pw-check", "not-its-password"), null)) {
            Throwable failure = failure(() -> consumer.partitionsFor(TOPICS.name(Topic.CLAIM_STATUS), Duration.ofSeconds(20)));
            assertInstanceOf(SaslAuthenticationException.class, failure, "wrong password: " + failure);
        }
    }

    /** An authenticated principal without a single ACL may neither write nor read any topic (no allow-everyone). */
    @Test
    void principalWithoutAclsMayNeitherWriteNorRead() throws Exception {
        String password = BrokerSecurity.newPassword();
        try (var admin = broker.admin()) {
            new io.csiorchestrator.localinfra.KafkaUsers(admin).upsertCredential("no-acls", password);
        }
        KafkaClientSecurity noAcls = broker.credentialOf("no-acls", password);
        try (KafkaProducer<String, String> producer = producer(noAcls)) {
            Throwable failure = sendFailure(producer, TOPICS.name(Topic.CLAIM_REQUESTED));
            assertInstanceOf(TopicAuthorizationException.class, failure, "write without ACL: " + failure);
        }
        try (KafkaConsumer<String, String> consumer = consumer(noAcls, null)) {
            consumer.assign(List.of(new org.apache.kafka.common.TopicPartition(TOPICS.name(Topic.NODE_COMMANDS), 0)));
            consumer.seekToBeginning(consumer.assignment());
            Throwable failure = failure(() -> consumer.poll(Duration.ofSeconds(20)));
            assertInstanceOf(TopicAuthorizationException.class, failure, "read without ACL: " + failure);
        }
    }

    /**
     * Node node-1's principal writes its own topics (mount-done, node-events) and reads node-commands in its own
     * group, but may not write claim-requested or node-commands, nor read in another node's group.
     */
    @Test
    void nodeWritesItsTopicsButNotClaimRequestedOrNodeCommands() throws Exception {
        KafkaClientSecurity node = broker.issue(Principal.node("node-1"), TOPICS);
        try (KafkaProducer<String, String> producer = producer(node)) {
            producer.send(new ProducerRecord<>(TOPICS.name(Topic.MOUNT_DONE), "node-1", "{}")).get();
            producer.send(new ProducerRecord<>(TOPICS.name(Topic.NODE_EVENTS), "node-1", "{}")).get();
            Throwable claim = sendFailure(producer, TOPICS.name(Topic.CLAIM_REQUESTED));
            assertInstanceOf(TopicAuthorizationException.class, claim, "node writes claim-requested: " + claim);
            Throwable command = sendFailure(producer, TOPICS.name(Topic.NODE_COMMANDS));
            assertInstanceOf(TopicAuthorizationException.class, command, "node writes node-commands: " + command);
        }
        try (KafkaConsumer<String, String> own = consumer(node, KafkaAccess.NODE_GROUP_PREFIX + "node-1")) {
            own.subscribe(List.of(TOPICS.name(Topic.NODE_COMMANDS)));
            Awaitility.await().atMost(WAIT).until(() -> {
                own.poll(Duration.ofMillis(200));
                return !own.assignment().isEmpty();
            });
        }
        try (KafkaConsumer<String, String> other = consumer(node, KafkaAccess.NODE_GROUP_PREFIX + "node-2")) {
            other.subscribe(List.of(TOPICS.name(Topic.NODE_COMMANDS)));
            Throwable failure = failure(() -> {
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (System.nanoTime() < deadline) {
                    other.poll(Duration.ofMillis(200));
                }
                return null;
            });
            assertInstanceOf(GroupAuthorizationException.class, failure, "node-1 in node-2's group: " + failure);
        }
    }

    /**
     * A revoked (deleted) credential: a new connection is refused at once, and a producer connected before the
     * revocation fails once its connection must re-authenticate ({@code connections.max.reauth.ms}).
     */
    @Test
    void revokedCredentialIsRefusedOnNewAndOpenConnections() throws Exception {
        KafkaClientSecurity scheduler = broker.issue(Principal.scheduler("revoked"), TOPICS);
        String topic = TOPICS.name(Topic.CLAIM_REQUESTED);
        try (KafkaProducer<String, String> open = producer(scheduler)) {
            open.send(new ProducerRecord<>(topic, "v", "before")).get();

            broker.revoke("scheduler-revoked");

            try (KafkaProducer<String, String> fresh = producer(scheduler)) {
                Throwable failure = sendFailure(fresh, topic);
                assertInstanceOf(SaslAuthenticationException.class, failure, "new connection after revocation: " + failure);
            }
            Awaitility.await("the open connection's send fails after revocation").atMost(WAIT).until(() -> {
                Throwable failure = sendFailureOrNull(open, topic);
                return failure instanceof SaslAuthenticationException;
            });
        }
    }

    /**
     * Rotation (issue 20 item 8): once node-rotated's credential is replaced by a new password, a client with the new
     * password connects and writes, a new client with the old password is refused at authentication, and a producer
     * connected with the old password before the rotation fails once its connection must re-authenticate.
     */
    @Test
    void rotatedCredentialTakesTheNewPasswordAndRefusesTheOld() throws Exception {
        KafkaClientSecurity old = broker.issue(Principal.node("rotated"), TOPICS);
        String topic = TOPICS.name(Topic.MOUNT_DONE);
        try (KafkaProducer<String, String> open = producer(old)) {
            open.send(new ProducerRecord<>(topic, "rotated", "before")).get();

            KafkaClientSecurity rotated = broker.rotate("node-rotated");

            try (KafkaProducer<String, String> fresh = producer(rotated)) {
                fresh.send(new ProducerRecord<>(topic, "rotated", "with the new password")).get();
            }
            try (KafkaProducer<String, String> stale = producer(old)) {
                Throwable failure = sendFailure(stale, topic);
                assertInstanceOf(SaslAuthenticationException.class, failure, "new connection, old password: " + failure);
            }
            Awaitility.await("the open connection's send fails after rotation").atMost(WAIT).until(() -> {
                Throwable failure = sendFailureOrNull(open, topic);
                return failure instanceof SaslAuthenticationException;
            });
        }
    }

    /**
     * A node's expiring credential (issue 20 item 8): a delegation token logs in as its owner (node-1's ACLs: it
     * writes mount-done, not claim-requested), carries the lifetime it was issued with, and once it has expired a new
     * login with it is refused and the connection opened before ends (Kafka ends a session at its credential's
     * expiry).
     */
    @Test
    void tokenLogsInAsItsOwnerAndIsRefusedOnceExpired() throws Exception {
        java.time.Instant before = java.time.Instant.now();
        KafkaClientSecurity node = broker.issueToken(Principal.node("expiring"), TOPICS, Duration.ofHours(1));
        KafkaToken token = node.token().orElseThrow();
        assertEquals("node-expiring", token.owner());
        assertTrue(!token.expires().isBefore(before.plus(Duration.ofHours(1)).minusSeconds(1))
            && !token.expires().isAfter(java.time.Instant.now().plus(Duration.ofHours(1)).plusSeconds(1)),
            "expires an hour after issue: " + token);
        String topic = TOPICS.name(Topic.MOUNT_DONE);
        try (KafkaProducer<String, String> open = producer(node)) {
            open.send(new ProducerRecord<>(topic, "node-expiring", "with a token")).get();
            Throwable claim = sendFailure(open, TOPICS.name(Topic.CLAIM_REQUESTED));
            assertInstanceOf(TopicAuthorizationException.class, claim, "a node's token writes claim-requested: " + claim);

            // the lifetime runs out now: renewed for a millisecond (what an hour later looks like to the broker)
            try (var admin = broker.admin()) {
                new io.csiorchestrator.localinfra.KafkaUsers(admin).renewToken(token, Duration.ofMillis(1));
            }

            Awaitility.await("a new login with the expired token is refused").atMost(WAIT).until(() -> {
                try (KafkaProducer<String, String> fresh = producer(node)) {
                    return sendFailureOrNull(fresh, topic) instanceof SaslAuthenticationException;
                }
            });
            Awaitility.await("the open connection's send fails after expiry").atMost(WAIT).until(() ->
                sendFailureOrNull(open, topic) instanceof SaslAuthenticationException);
        }
    }

    /**
     * A revoked token (issue 20 item 8): {@code revokeTokens} expires every token of the owner at once; a new login
     * is refused and an open connection ends at its next re-authentication. The owner's other credentials (none
     * here) and other owners' tokens are untouched.
     */
    @Test
    void revokedTokenIsRefusedOnNewAndOpenConnections() throws Exception {
        KafkaClientSecurity revoked = broker.issueToken(Principal.scheduler("token-revoked"), TOPICS, Duration.ofHours(1));
        KafkaClientSecurity kept = broker.issueToken(Principal.scheduler("token-kept"), TOPICS, Duration.ofHours(1));
        String topic = TOPICS.name(Topic.CLAIM_REQUESTED);
        try (KafkaProducer<String, String> open = producer(revoked)) {
            open.send(new ProducerRecord<>(topic, "v", "before")).get();

            assertEquals(1, broker.revokeTokens("scheduler-token-revoked"));

            try (KafkaProducer<String, String> fresh = producer(revoked)) {
                Throwable failure = sendFailure(fresh, topic);
                assertInstanceOf(SaslAuthenticationException.class, failure, "new login after revocation: " + failure);
            }
            Awaitility.await("the open connection's send fails after revocation").atMost(WAIT).until(() ->
                sendFailureOrNull(open, topic) instanceof SaslAuthenticationException);
        }
        try (KafkaProducer<String, String> other = producer(kept)) {
            other.send(new ProducerRecord<>(topic, "v", "another scheduler's token still works")).get();
        }
    }

    /**
     * The broker picks ChaCha20-Poly1305 from a client offering the JDK's default order (AES-GCM first): our JVMs run
     * C1, which has no AES-GCM intrinsics (BrokerSecurity.CIPHER_SUITES). A client offering only AES-GCM still gets it.
     */
    @Test
    void theBrokerPrefersChaCha20AndStillServesAesGcmOnlyClients() throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        List<X509Certificate> authorities = Certificates.readCertificates(Files.readString(broker.truststore()));
        for (int i = 0; i < authorities.size(); i++) {
            trust.setCertificateEntry("ca-" + i, authorities.get(i));
        }
        TrustManagerFactory trustManagers = TrustManagerFactory.getInstance("PKIX");
        trustManagers.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trustManagers.getTrustManagers(), null);
        String[] hostPort = broker.bootstrapServers().split(",")[0].split(":");
        List<String> defaults = List.of(context.getDefaultSSLParameters().getCipherSuites());
        assertTrue(defaults.indexOf("TLS_AES_256_GCM_SHA384") < defaults.indexOf("TLS_CHACHA20_POLY1305_SHA256"),
            "the JDK's default offer puts AES-GCM first: " + defaults);
        assertEquals("TLS_CHACHA20_POLY1305_SHA256", negotiated(context, hostPort, defaults));
        assertEquals("TLS_AES_128_GCM_SHA256", negotiated(context, hostPort, List.of("TLS_AES_128_GCM_SHA256")));
    }

    private static String negotiated(SSLContext context, String[] hostPort, List<String> offered) throws Exception {
        try (SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket(hostPort[0],
                Integer.parseInt(hostPort[1]))) {
            socket.setEnabledCipherSuites(offered.toArray(String[]::new));
            socket.startHandshake();
            return socket.getSession().getCipherSuite();
        }
    }

    /** The password files the broker hands out, like its own secrets, are readable by their owner only. */
    @Test
    void credentialFilesAreOwnerOnly() throws Exception {
        broker.issue(Principal.claimService(), TOPICS);
        broker.issueToken(Principal.node("file-check"), TOPICS, Duration.ofHours(1));
        Path dir = broker.dataDir();
        List<Path> secrets = List.of(dir.resolve("credentials/claim-service.password"),
            dir.resolve("credentials/node-file-check.token"), dir.resolve("security/" + BrokerSecurity.TOKEN_SECRET),
            dir.resolve("security/" + BrokerSecurity.ADMIN_PASSWORD), dir.resolve("security/" + BrokerSecurity.BROKER_PASSWORD),
            dir.resolve("security/" + BrokerSecurity.KEYSTORE), dir.resolve("security/" + BrokerSecurity.KEYSTORE_PASSWORD),
            dir.resolve("server.properties"));
        for (Path secret : secrets) {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(secret)), secret.toString());
        }
        assertTrue(Files.readString(broker.truststore()).startsWith("-----BEGIN CERTIFICATE-----"));
    }

    private static KafkaProducer<String, String> producer(KafkaClientSecurity security) {
        Properties p = security.applyTo(new Properties());
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "secured-test-" + UUID.randomUUID());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        // A send caught by a refused re-authentication (a producer connected before its credential was revoked,
        // rotated or expired) is answered only when its delivery times out, and the tests that wait for the open
        // connection's refusal wait that long: 5 s (10 s before, issue 32), still room for a send's retry on a loaded
        // machine (request timeout 4 s; delivery must cover linger + request timeout).
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "4000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static KafkaConsumer<String, String> consumer(KafkaClientSecurity security, String group) {
        Properties p = security.applyTo(new Properties());
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "secured-test-" + UUID.randomUUID());
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /** The cause of a failed send; fails the test if the send succeeds. */
    private static Throwable sendFailure(KafkaProducer<String, String> producer, String topic) {
        Throwable failure = sendFailureOrNull(producer, topic);
        if (failure == null) {
            throw new AssertionError("send to " + topic + " succeeded, expected a refusal");
        }
        return failure;
    }

    private static Throwable sendFailureOrNull(KafkaProducer<String, String> producer, String topic) {
        return failure(() -> producer.send(new ProducerRecord<>(topic, "k", "refused?")).get());
    }

    private interface Call {
        Object call() throws Exception;
    }

    /** What {@code call} threw (unwrapped from ExecutionException), or null if it returned. */
    private static Throwable failure(Call call) {
        try {
            call.call();
            return null;
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        } catch (Exception e) {
            return e;
        }
    }
}
