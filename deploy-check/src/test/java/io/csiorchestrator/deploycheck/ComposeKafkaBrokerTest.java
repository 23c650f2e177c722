package io.csiorchestrator.deploycheck;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.csiorchestrator.events.KafkaAccess.Principal;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.KafkaToken;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.localinfra.KafkaUsers;
import io.csiorchestrator.localinfra.Kraft;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.yaml.snakeyaml.Yaml;

/**
 * docker-compose's broker as its own scripts make it, run for real (no container engine here: an in-process Kafka of
 * the image's version): {@code deploy/compose/kafka-init.sh} makes the key material with keytool, exactly as the
 * {@code kafka-init} container would, {@code deploy/compose/kafka-start.sh} writes the broker's settings
 * ({@code CSI_KAFKA_CONFIG_ONLY=1}); only the compose host name {@code kafka} and the fixed ports are replaced by
 * loopback and free ports. The storage is formatted with the broker's and csi-admin's SCRAM credentials as the start
 * script does; claim-service is issued from the KafkaAccess table (what {@code kafka-users.sh} renders) with the
 * password kafka-init put in claim-service's volume; the worker logs in with the client certificate kafka-init put in
 * its volume, with the settings docker-compose.yml gives it; a delegation token (the opt-in path) comes from
 * {@code deploy/compose/kafka-node-token.sh}, run with the Kafka tool the image has.
 */
class ComposeKafkaBrokerTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    /** A topic nobody has an ACL on: only super users may touch it (allow.everyone.if.no.acl.found=false). */
    private static final String NO_ACL_TOPIC = "compose-check-no-acl";

    private static Path dir;
    private static KafkaRaftServer server;
    private static String bootstrap;
    private static String hostBootstrap;
    /** The client-certificate listener (compose's kafka:9094). */
    private static String certBootstrap;
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
        // the node logs in with its certificate (composeWorkerLogsInWithItsCertificateWithinItsAclsOnly): no password
        // of its own anywhere, and no token unless kafka-topics is asked for one
        assertFalse(Files.exists(out.resolve("node/password")), "the worker's volume holds no password");
        assertFalse(Files.exists(out.resolve("node/token")), "kafka-init writes no token");
        assertFalse(Files.exists(dir.resolve("material/clients/node-node-1.password")), "no node password is made");
        assertTrue(Files.isRegularFile(out.resolve("node/ca.pem")), "the worker's volume holds the CA");
        assertEquals(PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(out.resolve("node/node.key")));
        Path secrets = out.resolve("broker");
        run(Map.of("CSI_KAFKA_CONFIG_ONLY", "1", "CSI_KAFKA_SECRETS", secrets.toString(),
            "CSI_KAFKA_CONF_DIR", dir.resolve("conf").toString(), "CLUSTER_ID", "4YEu_ozjR0iXbxiWfxbCNA"),
            "deploy/compose/kafka-start.sh");

        int[] ports = Kraft.freePorts(4);
        String settings = localized(Files.readString(dir.resolve("conf/server.properties")), ports)
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
        certBootstrap = "localhost:" + ports[3];
        composePorts = ports;
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

    private static int[] composePorts;

    /** Compose's host name and fixed ports made loopback and the free {@code ports} (9092, 9093, 29092, 9094). */
    private static String localized(String text, int[] ports) {
        return text.replace("kafka:9093", "localhost:9093").replace("kafka:9092", "localhost:9092")
            .replace("kafka:9094", "localhost:9094")
            .replace(":9092", ":" + ports[0]).replace(":9093", ":" + ports[1]).replace(":29092", ":" + ports[2])
            .replace(":9094", ":" + ports[3]);
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
     * The compose worker's credential, as compose makes it: {@code deploy/compose/kafka-node-token.sh}, run for real
     * with the Kafka tool the image has ({@code kafka-delegation-tokens.sh}: {@code DelegationTokenCommand} of Kafka
     * 4.1.1), issues node-1's token as csi-admin into the worker's volume. The file is 0600, owned by the worker's uid,
     * and {@code KafkaToken.read} takes it; {@code KafkaClientSecurity} from the worker's compose settings
     * ({@code CSI_KAFKA_TOKEN_FILE}, {@code CSI_KAFKA_TRUSTSTORE}) logs in as {@code node-node-1}, which writes
     * {@code mount-done} and reads {@code node-commands} in its own group but is refused {@code claim-requested}, a
     * topic without ACLs and another principal's group. Run again, the script keeps the token; with a lifetime more
     * than three times what is left it issues a new one; once revoked, the old token is refused and the script issues
     * a working one.
     */
    @Test
    void composeTokenScriptGivesTheWorkerANodeLoginWithinItsAclsOnly() throws Exception {
        // kafka-users.sh's part for the node: its ACLs (quotas aside) and no SCRAM credential
        try (Admin client = Kraft.admin(bootstrap, admin)) {
            new KafkaUsers(client).grant(Principal.node("node-1"), TopicCatalog.unprefixed());
        }
        Path file = dir.resolve("out/node/token");
        Instant before = Instant.now();
        String output = runTokenScript("30d");
        assertTrue(output.contains("issuing a token of node-node-1 for 30d"), output);
        assertEquals(PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(file));
        assertEquals(Files.getAttribute(dir, "unix:uid"), Files.getAttribute(file, "unix:uid"), "owned by the worker's uid");
        KafkaToken issued = KafkaToken.read(file);
        awaitTokenOnBroker(issued.tokenId());
        assertEquals("node-node-1", issued.owner());
        assertFalse(issued.expires().isBefore(before.plus(Duration.ofDays(30)).minusSeconds(1)), issued.toString());
        assertFalse(issued.expires().isAfter(Instant.now().plus(Duration.ofDays(30))), issued.toString());

        KafkaClientSecurity node = workerSecurity(file);
        assertEquals(Optional.of("node-node-1"), node.username());
        assertEquals(Optional.of(issued), node.token());
        try (KafkaProducer<String, String> producer = producer(node, bootstrap)) {
            producer.send(new ProducerRecord<>("mount-done", "node-1", "{}")).get(30, TimeUnit.SECONDS);
        }
        assertNull(pollFailure(node, "node-commands", "node-mount-worker-node-1"), "node-1 reads its commands");
        Throwable refused = sendFailure(node, bootstrap, "claim-requested");
        assertInstanceOf(TopicAuthorizationException.class, refused, "the node's token writes claim-requested: " + refused);
        Throwable noAcl = sendFailure(node, bootstrap, NO_ACL_TOPIC);
        assertInstanceOf(TopicAuthorizationException.class, noAcl, "the node's token writes a topic without ACLs: " + noAcl);
        Throwable group = pollFailure(node, "node-commands", "claim-service");
        assertInstanceOf(GroupAuthorizationException.class, group, "the node's token joins claim-service's group: " + group);

        output = runTokenScript("30d");
        assertTrue(output.contains("keeping token " + issued.tokenId()), output);
        assertEquals(issued, KafkaToken.read(file), "a second run keeps the token");

        output = runTokenScript("100d");
        KafkaToken longer = KafkaToken.read(file);
        assertNotEquals(issued.tokenId(), longer.tokenId(), "30 days left of 100: issued anew: " + output);
        assertFalse(longer.expires().isBefore(Instant.now().plus(Duration.ofDays(100)).minusSeconds(120)), longer.toString());

        try (Admin client = Kraft.admin(bootstrap, admin)) {
            assertEquals(2, new KafkaUsers(client).revokeTokens("node-node-1"), "the replaced token is left to expire");
        }
        Throwable revoked = sendFailure(workerSecurity(file), bootstrap, "mount-done");
        assertInstanceOf(SaslAuthenticationException.class, revoked, "a revoked token: " + revoked);
        output = runTokenScript("100d");
        KafkaToken fresh = KafkaToken.read(file);
        assertNotEquals(longer.tokenId(), fresh.tokenId(), "a revoked token is replaced: " + output);
        awaitTokenOnBroker(fresh.tokenId());
        try (KafkaProducer<String, String> producer = producer(workerSecurity(file), bootstrap)) {
            producer.send(new ProducerRecord<>("mount-done", "node-1", "{}")).get(30, TimeUnit.SECONDS);
        }
    }

    /**
     * The compose worker's Kafka login as docker-compose.yml gives it, read from the file (its environment, the paths
     * in its credential volume made those of kafka-init's {@code out/node}, its bootstrap address the test's): a
     * client certificate, not a token. node-node-1 writes {@code mount-done} and reads {@code node-commands} in its own
     * group, on the certificate listener, but is refused {@code claim-requested}, a topic without ACLs and another
     * principal's group. The listener refuses a certificate of another CA with the same CN and a client without a
     * certificate. Revocation as compose has it (deploy/README.md): with its ACLs dropped the certificate still
     * connects but may do nothing.
     */
    @Test
    void composeWorkerLogsInWithItsCertificateWithinItsAclsOnly() throws Exception {
        try (Admin client = Kraft.admin(bootstrap, admin)) {
            new KafkaUsers(client).grant(Principal.node("node-1"), TopicCatalog.unprefixed());
        }
        Map<String, Object> services = Manifests.map(Manifests.asMap(new Yaml().load(
            Manifests.read(Manifests.root().resolve("docker-compose.yml"))), "docker-compose.yml"), "services");
        Map<String, Object> env = Manifests.map(Manifests.map(services, "node-mount-worker"), "environment");
        Map<String, String> settings = new java.util.HashMap<>();
        env.forEach((key, value) -> settings.put(key, String.valueOf(value)
            .replace("/etc/csi/kafka/", dir.resolve("out/node").toString() + "/")));
        String address = localized(settings.get("KAFKA_BOOTSTRAP_SERVERS"), composePorts);
        assertEquals(certBootstrap, address, "the worker connects to the client-certificate listener");
        KafkaClientSecurity node = KafkaClientSecurity.from(
            name -> Optional.ofNullable(settings.get(KafkaClientSecurity.envName(name))));
        assertTrue(node.certificateLogin(), "compose's worker logs in with its certificate, not " + node);
        assertEquals(Optional.empty(), node.token(), "no token");
        assertEquals(Optional.of("node-node-1"), node.username());

        try (KafkaProducer<String, String> producer = producer(node, address)) {
            producer.send(new ProducerRecord<>("mount-done", "node-1", "{}")).get(30, TimeUnit.SECONDS);
        }
        assertNull(pollFailure(node, address, "node-commands", "node-mount-worker-node-1"), "node-1 reads its commands");
        Throwable refused = sendFailure(node, address, "claim-requested");
        assertInstanceOf(TopicAuthorizationException.class, refused, "the node's certificate writes claim-requested: " + refused);
        Throwable noAcl = sendFailure(node, address, NO_ACL_TOPIC);
        assertInstanceOf(TopicAuthorizationException.class, noAcl, "the node's certificate writes a topic without ACLs: " + noAcl);
        Throwable group = pollFailure(node, address, "node-commands", "claim-service");
        assertInstanceOf(GroupAuthorizationException.class, group, "the node's certificate joins claim-service's group: " + group);

        Throwable foreign = sendFailure(foreignCertificate(), address, "mount-done");
        assertInstanceOf(SslAuthenticationException.class, foreign, "a certificate of another CA: " + foreign);
        Properties noCertificate = new Properties();
        noCertificate.put("security.protocol", "SSL");
        noCertificate.put("ssl.truststore.type", "PEM");
        noCertificate.put("ssl.truststore.location", dir.resolve("out/node/ca.pem").toString());
        Throwable none = sendFailure(noCertificate, address, "mount-done");
        assertInstanceOf(SslAuthenticationException.class, none, "a client without a certificate: " + none);

        // compose's revocation: deploy/compose/kafka-drop-acls.sh, with the image's kafka-acls.sh
        String dropped = runAdminScript("kafka-drop-acls.sh", Map.of(), "node-node-1");
        assertTrue(dropped.matches("(?s).*dropped [1-9][0-9]* ACL\\(s\\) of User:node-node-1.*"), dropped);
        try (Admin client = Kraft.admin(bootstrap, admin)) {
            assertTrue(new KafkaUsers(client).acls().stream()
                .noneMatch(b -> b.entry().principal().equals("User:node-node-1")), "node-node-1's ACLs are gone");
        }
        Throwable revoked = sendFailure(node, address, "mount-done");
        assertInstanceOf(TopicAuthorizationException.class, revoked, "a certificate whose ACLs were dropped: " + revoked);
    }

    /** A client certificate CN=node-node-1 made by a CA of its own (openssl), with compose's truststore. */
    private static KafkaClientSecurity foreignCertificate() throws IOException, InterruptedException {
        Path foreign = Files.createDirectories(dir.resolve("foreign"));
        Process openssl = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
            "-keyout", foreign.resolve("node.key").toString(), "-out", foreign.resolve("node.pem").toString(),
            "-subj", "/CN=node-node-1", "-days", "1").redirectErrorStream(true).start();
        String output = new String(openssl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, openssl.waitFor(), output);
        Files.setPosixFilePermissions(foreign.resolve("node.key"), PosixFilePermissions.fromString("rw-------"));
        return KafkaClientSecurity.certificate(foreign.resolve("node.pem"), foreign.resolve("node.key"),
            dir.resolve("out/node/ca.pem"));
    }

    /**
     * Waits (up to {@link #WAIT}) until the broker describes token {@code id}: the controller commits a new token
     * before the broker's token cache, which SCRAM logins read, has it; a login in between is refused as invalid
     * credentials (seen once on a loaded machine), as a worker started that early would be.
     */
    private static void awaitTokenOnBroker(String id) throws Exception {
        try (Admin client = Kraft.admin(bootstrap, admin)) {
            KafkaUsers users = new KafkaUsers(client);
            await().atMost(WAIT).pollInterval(Duration.ofMillis(100)).alias("the broker knows token " + id)
                    .until(() -> users.tokensOf("node-node-1").stream().anyMatch(t -> t.tokenId().equals(id)));
        }
    }

    /** The worker's Kafka settings when switched to a token (deploy/README.md; read as KafkaClientSecurity does). */
    private static KafkaClientSecurity workerSecurity(Path tokenFile) {
        Map<String, String> env = Map.of("CSI_KAFKA_SECURITY_PROTOCOL", "SASL_SSL",
            "CSI_KAFKA_TOKEN_FILE", tokenFile.toString(),
            "CSI_KAFKA_TRUSTSTORE", dir.resolve("out/node/ca.pem").toString());
        return KafkaClientSecurity.from(name -> Optional.ofNullable(env.get(KafkaClientSecurity.envName(name))));
    }

    /**
     * Runs deploy/compose/kafka-node-token.sh as kafka-setup.sh does, as csi-admin on the compose network's listener,
     * with the node's volume at {@code out/node}; its {@code kafka-delegation-tokens.sh} is the image's command
     * ({@code org.apache.kafka.tools.DelegationTokenCommand}) run on this JVM's class path.
     */
    private static String runTokenScript(String ttl) throws IOException, InterruptedException {
        String uid = String.valueOf(Files.getAttribute(dir, "unix:uid"));
        return runAdminScript("kafka-node-token.sh", Map.of("CSI_NODE_ID", "node-1",
            "CSI_KAFKA_TOKEN_OUT", dir.resolve("out/node/token").toString(), "CSI_WORKER_UID", uid,
            "CSI_KAFKA_NODE_TOKEN_TTL", ttl));
    }

    /**
     * Runs deploy/compose/{@code script} as csi-admin on the compose network's listener, its Kafka tools
     * ({@code kafka-delegation-tokens.sh}, {@code kafka-acls.sh}) the image's commands run on this JVM's class path.
     */
    private static String runAdminScript(String script, Map<String, String> env, String... args)
            throws IOException, InterruptedException {
        Path bin = dir.resolve("bin");
        if (!Files.exists(bin)) {
            Files.createDirectories(bin);
            String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
            for (String[] tool : new String[][] {{"kafka-delegation-tokens.sh", "DelegationTokenCommand"},
                    {"kafka-acls.sh", "AclCommand"}}) {
                Path file = bin.resolve(tool[0]);
                // A one-shot command on a 2-core test machine: C1 only and the serial collector (the image's
                // kafka-run-class.sh tunes for a long-running broker instead); each run is a JVM start.
                Files.writeString(file, "#!/bin/sh\n# kafka-run-class.sh's way: KAFKA_OPTS, then the class\nexec '"
                    + Path.of(System.getProperty("java.home"), "bin", "java")
                    + "' -XX:TieredStopAtLevel=1 -XX:+UseSerialGC $KAFKA_OPTS -cp '" + classPath
                    + "' org.apache.kafka.tools." + tool[1] + " \"$@\"\n");
                Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwx------"));
            }
            Properties settings = admin.applyTo(new Properties());
            try (var out = Files.newOutputStream(dir.resolve("admin.properties"))) {
                settings.store(out, "csi-admin, as kafka-setup.sh writes it");
            }
        }
        Map<String, String> all = new java.util.HashMap<>(env);
        all.put("KAFKA_BIN", bin.toString());
        all.put("KAFKA_BOOTSTRAP_SERVERS", bootstrap);
        all.put("KAFKA_COMMAND_CONFIG", dir.resolve("admin.properties").toString());
        return run(all, "deploy/compose/" + script, args);
    }

    /** Null when a consumer of {@code group} polls {@code topic} without error, else what it threw. */
    private static Throwable pollFailure(KafkaClientSecurity security, String topic, String group) {
        return pollFailure(security, bootstrap, topic, group);
    }

    private static Throwable pollFailure(KafkaClientSecurity security, String address, String topic, String group) {
        Properties p = security.applyTo(new Properties());
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, address);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            long end = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (consumer.assignment().isEmpty() && System.nanoTime() < end) {
                consumer.poll(Duration.ofMillis(500));
            }
            return consumer.assignment().isEmpty() ? new AssertionError("no partition of " + topic + " assigned") : null;
        } catch (RuntimeException e) {
            return e;
        }
    }

    private static Throwable sendFailure(KafkaClientSecurity security, String address, String topic) {
        return sendFailure(security.applyTo(new Properties()), address, topic);
    }

    private static Throwable sendFailure(Properties security, String address, String topic) {
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
        return producer(security.applyTo(new Properties()), address);
    }

    private static KafkaProducer<String, String> producer(Properties security, String address) {
        Properties p = new Properties();
        p.putAll(security);
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

    /** Runs {@code sh <script>} of the repository with {@code env}; its output; fails the test with it if it fails. */
    private static String run(Map<String, String> env, String script, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("sh", Manifests.root().resolve(script).toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(env);
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(2, TimeUnit.MINUTES)) {
            process.destroyForcibly();
            throw new AssertionError(script + " did not finish in 2 minutes: " + output);
        }
        assertEquals(0, process.exitValue(), script + ": " + output);
        return output;
    }
}
