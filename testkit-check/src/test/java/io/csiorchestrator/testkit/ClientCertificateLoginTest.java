package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.csiorchestrator.events.KafkaAccess.Principal;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.Certificates;
import io.csiorchestrator.localinfra.ClientCertificates;

/**
 * The client-certificate listener of a secured broker (issue 33 item 1): a certificate of the client CA logs in as
 * its {@code CN}, with exactly that principal's ACLs; one of another CA, or expired, is refused at the handshake; a
 * revoked one loses its rights on its open connection and gets none on a new one, also after a new certificate
 * for the same principal brought the ACLs back. And the scheduler's group prefix ends with a separator (item 4).
 */
class ClientCertificateLoginTest {

    private static final TopicCatalog TOPICS = new TopicCatalog("crt.");
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final Duration LIFETIME = Duration.ofDays(1);

    private static KafkaBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = KafkaBroker.builder().secured(true).start();
        for (Topic topic : Topic.values()) {
            broker.createTopic(TOPICS.name(topic), 1, Map.of());
            broker.createTopic(TOPICS.deadLetterName(topic), 1, Map.of());
        }
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    /** A scheduler's certificate writes claim-requested and reads claim-status in its groups, nothing else. */
    @Test
    void certificateLogsInAsItsPrincipalWithItsAcls() throws Exception {
        KafkaClientSecurity cert = broker.issueCertificate(Principal.scheduler("cert-a"), TOPICS, LIFETIME);
        assertEquals(java.util.Optional.of("scheduler-cert-a"), cert.username());
        try (KafkaProducer<String, String> producer = producer(cert)) {
            assertNull(sendFailure(producer, TOPICS.name(Topic.CLAIM_REQUESTED)), "its own topic");
            assertInstanceOf(TopicAuthorizationException.class, sendFailure(producer, TOPICS.name(Topic.NODE_COMMANDS)),
                "a node's topic");
        }
        try (KafkaConsumer<String, String> consumer = consumer(cert, "scheduler-cert-a-status")) {
            consumer.subscribe(List.of(TOPICS.name(Topic.CLAIM_STATUS)));
            Awaitility.await().atMost(WAIT).until(() -> {
                consumer.poll(Duration.ofMillis(200));
                return !consumer.assignment().isEmpty();
            });
        }
    }

    /** Item 4: scheduler {@code acme}'s group prefix is {@code scheduler-acme-}: scheduler acme2's groups are not its. */
    @Test
    void schedulerCannotJoinTheGroupsOfASchedulerWhoseIdExtendsItsOwn() {
        KafkaClientSecurity acme = broker.issueCertificate(Principal.scheduler("acme"), TOPICS, LIFETIME);
        broker.issueCertificate(Principal.scheduler("acme2"), TOPICS, LIFETIME);
        try (KafkaConsumer<String, String> consumer = consumer(acme, "scheduler-acme2-status")) {
            consumer.subscribe(List.of(TOPICS.name(Topic.CLAIM_STATUS)));
            Throwable failure = failure(() -> consumer.poll(Duration.ofSeconds(20)));
            assertInstanceOf(GroupAuthorizationException.class, failure, "acme in acme2's group: " + failure);
        }
    }

    /** A certificate the client CA did not issue (here CN=csi-admin, a super user's name) never gets in. */
    @Test
    void certificateOfAnotherCaIsRefused(@TempDir Path dir) {
        Certificates.Issued foreignCa = Certificates.authority("not the csi CA", Duration.ofDays(1));
        ClientCertificates.write(Certificates.issueClient(foreignCa, "csi-admin", Duration.ofDays(1)),
            dir.resolve("key.pem"), dir.resolve("cert.pem"));
        KafkaClientSecurity forged = KafkaClientSecurity.certificate(dir.resolve("cert.pem"), dir.resolve("key.pem"),
            broker.truststore());
        try (KafkaProducer<String, String> producer = producer(forged)) {
            Throwable failure = sendFailure(producer, TOPICS.name(Topic.CLAIM_REQUESTED));
            assertInstanceOf(SslAuthenticationException.class, failure, "foreign CA: " + failure);
        }
    }

    /** Expiry is the certificate's lifetime: once it has passed, the handshake fails. */
    @Test
    void expiredCertificateIsRefused() {
        KafkaClientSecurity shortLived = broker.issueCertificate(Principal.node("cert-expiring"), TOPICS,
            Duration.ofSeconds(3));
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofSeconds(1)).until(() -> {
            try (KafkaProducer<String, String> producer = producer(shortLived)) {
                return sendFailure(producer, TOPICS.name(Topic.MOUNT_DONE)) instanceof SslAuthenticationException;
            }
        });
    }

    /**
     * Revocation with a client connected: its open connection (an admin client describing node-commands: each describe is
     * a new request the broker authorizes) is refused within the minute, a new connection with the certificate too; a new
     * certificate for the same principal works, and the revoked one stays refused, on the old connection and on a new
     * one, although the principal has its ACLs again.
     */
    @Test
    void revokedCertificateLosesOpenAndNewConnectionsEvenAfterReissue() {
        Principal node = Principal.node("cert-revoked");
        KafkaClientSecurity old = broker.issueCertificate(node, TOPICS, LIFETIME);
        String topic = TOPICS.name(Topic.MOUNT_DONE);
        try (org.apache.kafka.clients.admin.Admin open = reader(old)) {
            assertNull(readFailure(open), "before revocation");
            assertEquals(1, broker.revokeCertificates(node.name()));
            Awaitility.await().atMost(WAIT).until(() -> readFailure(open) instanceof TopicAuthorizationException);
            try (KafkaProducer<String, String> again = producer(old)) {
                assertInstanceOf(TopicAuthorizationException.class, sendFailure(again, topic), "new connection, revoked");
            }

            KafkaClientSecurity renewed = broker.issueCertificate(node, TOPICS, LIFETIME);
            try (KafkaProducer<String, String> fresh = producer(renewed)) {
                assertNull(sendFailure(fresh, topic), "the new certificate");
            }
            // the broker reads its revoked list within seconds: wait for it, up to the minute revocation may take
            Awaitility.await().atMost(WAIT).until(() -> {
                try (KafkaProducer<String, String> again = producer(old)) {
                    return sendFailure(again, topic) instanceof TopicAuthorizationException;
                }
            });
            Awaitility.await().atMost(WAIT).until(() -> readFailure(open) instanceof TopicAuthorizationException);
        }
    }

    /** The client's key is written owner-only, and the broker's client CA key too. */
    @Test
    void keysAreOwnerOnly() throws Exception {
        broker.issueCertificate(Principal.scheduler("cert-files"), TOPICS, LIFETIME);
        try (var files = Files.walk(broker.dataDir())) {
            List<Path> keys = files.filter(f -> f.getFileName().toString().endsWith(".key")).toList();
            assertTrue(keys.size() >= 2, "keys: " + keys);
            for (Path key : keys) {
                assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(key)), key.toString());
            }
        }
    }

    private static KafkaProducer<String, String> producer(KafkaClientSecurity security) {
        Properties p = security.applyTo(new Properties());
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.certificateBootstrapServers());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "cert-test-" + UUID.randomUUID());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static KafkaConsumer<String, String> consumer(KafkaClientSecurity security, String group) {
        Properties p = security.applyTo(new Properties());
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.certificateBootstrapServers());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "cert-test-" + UUID.randomUUID());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    /**
     * An admin client on the certificate listener: it keeps its connection open, and each describe is a new metadata
     * request the broker authorizes (Describe on the topic), with no answer cached in the client.
     */
    private static org.apache.kafka.clients.admin.Admin reader(KafkaClientSecurity security) {
        Properties p = security.applyTo(new Properties());
        p.put(org.apache.kafka.clients.admin.AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.certificateBootstrapServers());
        p.put(org.apache.kafka.clients.admin.AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(org.apache.kafka.clients.admin.AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        return org.apache.kafka.clients.admin.Admin.create(p);
    }

    /** What describing node-commands as {@code admin} failed with, or null if it was described. */
    private static Throwable readFailure(org.apache.kafka.clients.admin.Admin admin) {
        return failure(() -> admin.describeTopics(List.of(TOPICS.name(Topic.NODE_COMMANDS))).allTopicNames().get());
    }

    /** The cause of a failed send, or null if it was written. */
    private static Throwable sendFailure(KafkaProducer<String, String> producer, String topic) {
        return failure(() -> producer.send(new ProducerRecord<>(topic, "k", "v")).get());
    }

    private interface Call {
        Object call() throws Exception;
    }

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
