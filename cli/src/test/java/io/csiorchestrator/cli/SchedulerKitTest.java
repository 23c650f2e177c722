package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
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
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.events.identity.IdentityDirectory;
import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.RecordSignature;
import io.csiorchestrator.localinfra.KafkaMain;
import io.csiorchestrator.testkit.KafkaBroker;

/**
 * {@code ./csi scheduler init} and {@code check} (issue 33 item 3) and {@code kafka-credential ... --kind cert}
 * (item 1) against a real secured broker, its security directory laid out as {@code ./csi up} keeps it: the kit's
 * Java client settings log in with its certificate and may do what a scheduler may; revoke cuts it off; check shows
 * the scheduler's dead letters with their reason and requestId, and not another's.
 */
class SchedulerKitTest {

    private static final TopicCatalog TOPICS = new TopicCatalog(Cluster.TOPIC_PREFIX);
    private static final Duration WAIT = Duration.ofSeconds(60);

    private static KafkaBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = KafkaBroker.builder().secured(true).start();
        for (Topic topic : List.of(Topic.CLAIM_REQUESTED, Topic.CLAIM_STATUS)) {
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

    /** A work dir as {@code ./csi up} leaves it: the broker's security dir, endpoints, claim-service's sealing key. */
    private static Path upWorkDir(Path work) throws Exception {
        Files.createDirectories(work.resolve(Cluster.KAFKA));
        Files.createSymbolicLink(work.resolve(Cluster.KAFKA).resolve(KafkaMain.SECURITY_DIR),
                broker.dataDir().resolve("security"));
        Files.writeString(work.resolve(Endpoints.FILE), "kafka.bootstrap.servers=" + broker.bootstrapServers() + "\n"
                + CertificateCredential.BOOTSTRAP_KEY + "=" + broker.certificateBootstrapServers() + "\n"
                + "csi.topics.prefix=" + Cluster.TOPIC_PREFIX + "\nclaims.url=http://127.0.0.1:8081\n");
        new IdentityDirectory(work.resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR))
                .ensureSealing(ClaimServiceKey.CLAIM_SERVICE);
        return work;
    }

    @Test
    void initWritesAKitWhoseJavaSettingsLogInAndRevokeCutsItOff(@TempDir Path tmp) throws Exception {
        Path work = upWorkDir(tmp.resolve("work"));
        Path kit = tmp.resolve("kit");
        Result init = run("scheduler", "init", "acme", "--out", kit.toString(), "--work-dir", work.toString());
        assertEquals(0, init.code, init.toString());
        assertTrue(init.out.contains(SchedulerCommand.ENV_FILE), init.out);
        for (String file : List.of("ca.pem", "kafka-client.pem", "kafka-client.key", "signing.key")) {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(kit.resolve(file))), file);
        }
        assertTrue(Files.readString(kit.resolve("kafka-client.key")).startsWith("-----BEGIN PRIVATE KEY-----"));
        IdentityKey signing = IdentityKey.read(kit.resolve("signing.key"));
        IdentityDirectory identities = new IdentityDirectory(work.resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR));
        assertTrue(identities.trust().find(signing.kid()).isPresent(), "signing key in the trust file");
        String sealing = Files.readString(kit.resolve(SchedulerCommand.SEALING_JWK));
        assertTrue(sealing.contains("\"X25519\"") && sealing.contains("\"enc\"") && !sealing.contains("\"d\""), sealing);
        Properties librdkafka = load(kit.resolve(SchedulerCommand.LIBRDKAFKA));
        assertEquals("SSL", librdkafka.getProperty("security.protocol"));
        assertEquals(broker.certificateBootstrapServers(), librdkafka.getProperty("bootstrap.servers"));
        assertEquals(kit.resolve("kafka-client.key").toString(), librdkafka.getProperty("ssl.key.location"));
        Properties env = load(kit.resolve(SchedulerCommand.ENV_FILE));
        assertEquals("acme", env.getProperty("CSI_SCHEDULER_ID"));

        Properties java = load(kit.resolve(SchedulerCommand.JAVA_CLIENT));
        try (KafkaProducer<String, String> producer = producer(java)) {
            assertNull(send(producer, TOPICS.name(Topic.CLAIM_REQUESTED)), "the kit's Java settings write claims");
            assertTrue(send(producer, TOPICS.name(Topic.CLAIM_STATUS)) instanceof TopicAuthorizationException,
                    "but not claim-status");
        }
        Properties reader = load(kit.resolve(SchedulerCommand.JAVA_CLIENT));
        reader.put(ConsumerConfig.GROUP_ID_CONFIG, "scheduler-acme-status");
        reader.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        reader.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        reader.put(ConsumerConfig.CLIENT_ID_CONFIG, "kit-" + UUID.randomUUID());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(reader)) {
            consumer.subscribe(List.of(TOPICS.name(Topic.CLAIM_STATUS)));
            Awaitility.await().atMost(WAIT).until(() -> {
                consumer.poll(Duration.ofMillis(200));
                return !consumer.assignment().isEmpty();
            });
        }

        Result revoked = run("kafka-credential", "revoke", "scheduler:acme", "--work-dir", work.toString());
        assertEquals(0, revoked.code, revoked.toString());
        assertTrue(revoked.out.contains("1 certificate"), revoked.out);
        Result again = run("kafka-credential", "issue", "scheduler:acme", "--kind", "cert", "--work-dir", work.toString(),
                "--out", tmp.resolve("acme-new").toString());
        assertEquals(0, again.code, again.toString());
        // the new certificate brought the ACLs back; the kit's revoked one stays refused once the broker read the list
        Awaitility.await().atMost(WAIT).until(() -> {
            try (KafkaProducer<String, String> producer = producer(load(kit.resolve(SchedulerCommand.JAVA_CLIENT)))) {
                return send(producer, TOPICS.name(Topic.CLAIM_REQUESTED)) instanceof TopicAuthorizationException;
            }
        });
        Result bad = run("kafka-credential", "issue", "scheduler:acme", "--kind", "pgp", "--work-dir", work.toString());
        assertEquals(2, bad.code, bad.toString());
        assertTrue(bad.err.contains("--kind"), bad.err);
    }

    @Test
    void checkShowsTheSchedulersDeadLettersWithReasonAndRequestId(@TempDir Path tmp) throws Exception {
        Path work = upWorkDir(tmp.resolve("work"));
        IdentityDirectory identities = new IdentityDirectory(work.resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR));
        String mine = identities.ensure(Principal.scheduler("checked")).kid();
        String other = identities.ensure(Principal.scheduler("other")).kid();
        Properties admin = broker.adminSecurity().applyTo(new Properties());
        admin.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        try (KafkaProducer<String, String> producer = producer(admin)) {
            deadLetter(producer, "vol-1", "{\"requestId\":\"req-mine-1\"}", mine, "signature does not verify");
            deadLetter(producer, "vol-2", "{\"requestId\":\"req-other\"}", other, "outside the replay window");
            deadLetter(producer, "vol-3", "not json", mine, "value is not JSON");
        }
        Result check = run("scheduler", "check", "checked", "--work-dir", work.toString());
        assertEquals(0, check.code, check.toString());
        assertTrue(check.out.contains("2 of 3"), check.out);
        assertTrue(check.out.contains("requestId req-mine-1") && check.out.contains("reason: signature does not verify"),
                check.out);
        assertTrue(check.out.contains("requestId (unreadable)") && check.out.contains("reason: value is not JSON"), check.out);
        assertFalse(check.out.contains("req-other"), check.out);
        Result unknown = run("scheduler", "check", "nobody", "--work-dir", work.toString());
        assertEquals(2, unknown.code, unknown.toString());
        Result badLast = run("scheduler", "check", "checked", "--last", "many", "--work-dir", work.toString());
        assertEquals(2, badLast.code, badLast.toString());
        assertTrue(badLast.err.contains("--last") && badLast.err.contains("'many'"), badLast.err);
    }

    private static void deadLetter(KafkaProducer<String, String> producer, String key, String value, String kid,
                                   String reason) throws Exception {
        ProducerRecord<String, String> record = new ProducerRecord<>(TOPICS.deadLetterName(Topic.CLAIM_REQUESTED), key, value);
        record.headers().add(RecordSignature.KID, kid.getBytes(StandardCharsets.UTF_8));
        record.headers().add(DeadLetters.REASON, reason.getBytes(StandardCharsets.UTF_8));
        producer.send(record).get();
    }

    private static Properties load(Path file) throws Exception {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file)) {
            p.load(r);
        }
        return p;
    }

    private static KafkaProducer<String, String> producer(Properties settings) {
        Properties p = new Properties();
        p.putAll(settings);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private static Throwable send(KafkaProducer<String, String> producer, String topic) {
        try {
            producer.send(new ProducerRecord<>(topic, "k", "{}")).get();
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

    private record Result(int code, String out, String err) {
    }

    private static Result run(String... argv) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(argv, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
