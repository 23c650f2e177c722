package io.csiorchestrator.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.events.identity.IdentityDirectory;
import io.csiorchestrator.events.identity.IdentityKey;
import io.csiorchestrator.events.identity.Principal;
import io.csiorchestrator.events.identity.RecordSignature;
import io.csiorchestrator.events.identity.TrustSet;

/**
 * {@code ./csi scheduler} (issue 33 item 3), what an upstream scheduler's author needs, against the system
 * {@code ./csi up} runs:
 * <ul>
 *   <li>{@code init <id> [--out DIR] [--ttl 30d]}: the scheduler kit in DIR (default {@code ./scheduler-<id>}):
 *       {@code ca.pem}, {@code kafka-client.pem}, {@code kafka-client.key} (its Kafka client certificate and key,
 *       PKCS#8 PEM, 0600), {@code signing.key} (its Ed25519 record-signing key, the IdentityKey JWK, registered in
 *       the trust file), {@code claim-service-sealing.jwk} (claim-service's X25519 sealing public key),
 *       {@code librdkafka.properties}, {@code java-client.properties} and {@code scheduler.env}; prints what to set;</li>
 *   <li>{@code check <id> [--last N]}: the scheduler's records on claim-requested-dead-letter (read as the broker's
 *       admin), newest last, with the dead-letter reason, time and requestId when readable. A record is the
 *       scheduler's when its {@code csi-sig-kid} is one of its keys (trust file or its key file).</li>
 * </ul>
 */
final class SchedulerCommand {

    static final Set<String> OPTIONS = Set.of("work-dir", "out", "ttl", "last", "kafka", "topic-prefix", "claims-url");
    static final String SIGNING_KEY = "signing.key";
    static final String SEALING_JWK = "claim-service-sealing.jwk";
    static final String LIBRDKAFKA = "librdkafka.properties";
    static final String JAVA_CLIENT = "java-client.properties";
    static final String ENV_FILE = "scheduler.env";
    private static final Duration READ_DEADLINE = Duration.ofSeconds(30);

    private final Args args;
    private final Path home;
    private final Path work;
    private final Endpoints endpoints;
    private final PrintStream out;

    SchedulerCommand(Args args, Path home, PrintStream out) {
        this.args = args;
        this.home = home;
        this.work = Up.workDir(args, home);
        this.endpoints = Endpoints.resolve(args, System.getenv(), home);
        this.out = out;
    }

    int run() {
        String verb = args.positional(0, "scheduler command (init, check)");
        String id = args.atMost(2).positional(1, "scheduler id");
        KafkaAccess.Principal kafka;
        try {
            kafka = KafkaAccess.Principal.scheduler(id);
        } catch (IllegalArgumentException e) {
            throw new Args.UsageException(e.getMessage());
        }
        return switch (verb) {
            case "init" -> init(id, kafka);
            case "check" -> check(id);
            default -> throw new Args.UsageException("unknown command 'scheduler " + verb + "'");
        };
    }

    private IdentityDirectory identities() {
        return new IdentityDirectory(work.resolve(Cluster.SECURITY_DIR).resolve(Cluster.IDENTITIES_DIR));
    }

    private int init(String id, KafkaAccess.Principal kafka) {
        Path dir = args.option("out").map(Path::of).orElse(Path.of("scheduler-" + id)).toAbsolutePath();
        Duration ttl = args.option("ttl").map(TokenCommand::ttl).orElse(KafkaCredentialCommand.DEFAULT_TTL);
        if (ttl.compareTo(io.csiorchestrator.localinfra.ClientCertificates.MAX_LIFETIME) > 0) {
            throw new Args.UsageException("--ttl is at most " + io.csiorchestrator.localinfra.ClientCertificates.MAX_LIFETIME
                    .toDays() + "d, not '" + args.option("ttl").orElse("") + "'");
        }
        TrustSet.Entry sealing = ClaimServiceKey.resolve(java.util.Optional.empty(), Map.of(), work);
        String bootstrap = CertificateCredential.bootstrap(work).orElseThrow(() -> new Args.UsageException(
                "no client-certificate listener known: " + work.resolve(Endpoints.FILE) + " has no "
                        + CertificateCredential.BOOTSTRAP_KEY + " (./csi up writes it; --work-dir D for another)"));
        KafkaCredentialCommand credentials = new KafkaCredentialCommand(args, home, out);
        CertificateCredential.Files files = credentials.withUsers(users -> CertificateCredential.issue(work, users,
                kafka, new TopicCatalog(endpoints.topicPrefix()), ttl, dir));
        Principal principal = Principal.scheduler(id);
        IdentityKey key = identities().ensure(principal);
        try {
            io.csiorchestrator.localinfra.BrokerSecurity.writeOwnerOnly(dir.resolve(SIGNING_KEY),
                    Files.readString(identities().keyFile(principal), StandardCharsets.UTF_8));
            ObjectMapper json = new ObjectMapper();
            JsonNode jwk = json.readTree(TrustSet.of(List.of(sealing)).toJson()).path("keys").get(0);
            Files.writeString(dir.resolve(SEALING_JWK), jwk.toPrettyString() + "\n", StandardCharsets.UTF_8);
            Files.writeString(dir.resolve(LIBRDKAFKA), String.join("\n",
                    "# librdkafka (confluent-kafka, kcat, ...): scheduler-" + id + "'s client-certificate login",
                    "bootstrap.servers=" + bootstrap,
                    "security.protocol=SSL",
                    "ssl.ca.location=" + files.ca(),
                    "ssl.certificate.location=" + files.certificate(),
                    "ssl.key.location=" + files.key(), ""), StandardCharsets.UTF_8);
            Files.writeString(dir.resolve(JAVA_CLIENT), String.join("\n",
                    "# the Java Kafka client (3.x, 4.x): scheduler-" + id + "'s client-certificate login; the key and",
                    "# certificate are read from their files by Kafka's DirectoryConfigProvider",
                    "bootstrap.servers=" + bootstrap,
                    "security.protocol=SSL",
                    "ssl.truststore.type=PEM",
                    "ssl.truststore.location=" + files.ca(),
                    "ssl.keystore.type=PEM",
                    "config.providers=dir",
                    "config.providers.dir.class=org.apache.kafka.common.config.provider.DirectoryConfigProvider",
                    "ssl.keystore.certificate.chain=${dir:" + dir + ":" + CertificateCredential.CERTIFICATE + "}",
                    "ssl.keystore.key=${dir:" + dir + ":" + CertificateCredential.KEY + "}", ""), StandardCharsets.UTF_8);
            Files.writeString(dir.resolve(ENV_FILE), String.join("\n",
                    "CSI_SCHEDULER_ID=" + id,
                    "CSI_TOPICS_PREFIX=" + endpoints.topicPrefix(),
                    "CSI_KAFKA_BOOTSTRAP=" + bootstrap,
                    "CSI_CLAIMS_URL=" + endpoints.claimsUrl(), ""), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the scheduler kit to " + dir, e);
        }
        out.println("scheduler-" + id + ": kit in " + dir);
        out.println("  Kafka: client certificate serial " + files.serial() + ", expires " + files.expires()
                + " (renew: ./csi kafka-credential renew scheduler:" + id + " --kind cert --out " + dir + ")");
        out.println("  bootstrap " + bootstrap + ", protocol SSL: " + LIBRDKAFKA + " (librdkafka) or " + JAVA_CLIENT
                + " (Java client)");
        out.println("  topics: write " + endpoints.topicPrefix() + "claim-requested, read " + endpoints.topicPrefix()
                + "claim-status in a group starting scheduler-" + id + "-");
        out.println("  sign each claim request with " + SIGNING_KEY + " (kid " + key.kid() + ", in the trust file "
                + identities().trustFile() + "); seal mount flags for " + SEALING_JWK + " (kid " + sealing.kid() + ")");
        out.println("  set: " + ENV_FILE + " (CSI_SCHEDULER_ID, CSI_TOPICS_PREFIX, CSI_KAFKA_BOOTSTRAP, CSI_CLAIMS_URL);"
                + " refused records: ./csi scheduler check " + id);
        return 0;
    }

    private int check(String id) {
        Principal principal = Principal.scheduler(id);
        Set<String> kids = new java.util.HashSet<>();
        identities().trust().entries().stream().filter(e -> e.principal().equals(principal))
                .forEach(e -> kids.add(e.kid()));
        Path keyFile = identities().keyFile(principal);
        if (Files.isRegularFile(keyFile)) {
            kids.add(IdentityKey.read(keyFile).kid());
        }
        if (kids.isEmpty()) {
            throw new Args.UsageException("scheduler:" + id + " has no key in " + identities().trustFile()
                    + " (./csi scheduler init " + id + " makes one)");
        }
        int last = args.option("last").map(SchedulerCommand::count).orElse(20);
        String topic = new TopicCatalog(endpoints.topicPrefix()).deadLetterName(Topic.CLAIM_REQUESTED);
        List<ConsumerRecord<byte[], byte[]>> mine = new ArrayList<>();
        int total = 0;
        Properties p = KafkaCredentialCommand.adminSecurity(work).applyTo(new Properties());
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, endpoints.kafkaBootstrap());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "csi-scheduler-check-" + UUID.randomUUID());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, READ_DEADLINE).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = new HashMap<>(consumer.endOffsets(partitions, READ_DEADLINE));
            long deadline = System.nanoTime() + READ_DEADLINE.toNanos();
            while (partitions.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new Operator.Failure("could not read " + topic + " to its end within " + READ_DEADLINE.toSeconds()
                            + " s");
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    total++;
                    if (kids.contains(header(r, RecordSignature.KID))) {
                        mine.add(r);
                    }
                }
            }
        }
        List<ConsumerRecord<byte[], byte[]>> shown = mine.subList(Math.max(0, mine.size() - last), mine.size());
        out.println("scheduler-" + id + ": " + mine.size() + " of " + total + " records on " + topic
                + " signed with its keys (" + String.join(", ", new java.util.TreeSet<>(kids)) + ")"
                + (shown.size() < mine.size() ? ", the last " + shown.size() + ":" : mine.isEmpty() ? "" : ":"));
        for (ConsumerRecord<byte[], byte[]> r : shown) {
            out.println("  " + Instant.ofEpochMilli(r.timestamp()) + "  requestId " + requestId(r.value())
                    + "  volume " + (r.key() == null ? "-" : new String(r.key(), StandardCharsets.UTF_8))
                    + "  reason: " + header(r, DeadLetters.REASON));
        }
        if (total > mine.size()) {
            out.println("  (" + (total - mine.size()) + " others: other schedulers', or unsigned, which no one's key names)");
        }
        return 0;
    }

    private static int count(String text) {
        if (!text.matches("[1-9][0-9]{0,5}")) {
            throw new Args.UsageException("--last takes a number of records from 1 to 999999, not '" + text + "'");
        }
        return Integer.parseInt(text);
    }

    private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    /** The body's requestId, or {@code (unreadable)} when the value is no JSON object with a text requestId. */
    private static String requestId(byte[] value) {
        if (value == null) {
            return "(none)";
        }
        try {
            JsonNode id = new ObjectMapper().readTree(value).path("requestId");
            return id.isTextual() ? id.asText() : "(unreadable)";
        } catch (IOException e) {
            return "(unreadable)";
        }
    }
}
