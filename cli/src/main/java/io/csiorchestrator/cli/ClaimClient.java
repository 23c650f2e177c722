package io.csiorchestrator.cli;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.MalformedEventException;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Plays an upstream scheduler: publishes {@code claim-requested} and waits for the answering
 * {@code claim-status} records (read from the end of the topic as it was before the request).
 */
public final class ClaimClient {

    static final String SOURCE = "/csi-cli";
    static final Set<ClaimState> CLAIM_DONE = EnumSet.of(ClaimState.READY, ClaimState.REJECTED, ClaimState.FAILED);
    static final Set<ClaimState> RELEASE_DONE = EnumSet.of(ClaimState.RELEASED, ClaimState.REJECTED, ClaimState.FAILED);

    /**
     * The outcome: the last status seen (null on timeout), every status seen, in order, and the time
     * the system took, from the claim-requested record's timestamp to the final claim-status record's
     * (-1 when there is none): the client's own start-up and connection set-up are not in it.
     */
    public record Outcome(ClaimStatus last, List<ClaimStatus> seen, boolean timedOut, long systemMillis,
                          String traceId, String statusTraceId) {

        Outcome(ClaimStatus last, List<ClaimStatus> seen, boolean timedOut, long systemMillis) {
            this(last, seen, timedOut, systemMillis, null, null);
        }

        /** True when the final claim-status carries the trace the request started. */
        public boolean traceCarried() {
            return traceId != null && traceId.equals(statusTraceId);
        }

        public boolean is(ClaimState state) {
            return last != null && last.state() == state;
        }

        public String describe() {
            if (timedOut) {
                return "no final claim-status within the timeout; seen: " + states();
            }
            return last.state().wire() + (last.reason() == null ? "" : " (" + last.reason() + ")");
        }

        public String states() {
            List<String> states = new ArrayList<>();
            seen.forEach(s -> states.add(s.state().wire()));
            return states.isEmpty() ? "none" : String.join(" -> ", states);
        }
    }

    static final String TRACEPARENT = "traceparent";

    /** The scheduler the CLI, the demo, chaos and the bench sign claim requests as ({@code scheduler:csi-cli}). */
    public static final String CLI_SCHEDULER = "csi-cli";
    private static volatile java.nio.file.Path schedulerKeyFile;
    private static volatile io.csiorchestrator.events.identity.IdentityKey schedulerKey;

    /**
     * Claim requests are signed from now on with the scheduler key in {@code file} (read on first use; issue 20
     * item 5): {@code CSI_IDENTITY_KEY_FILE}, else the work dir's {@code security/identities/scheduler-csi-cli.key}
     * that {@code ./csi up} makes. No such file: requests go unsigned (and the services dead-letter them).
     */
    static void signWithKeyFile(java.nio.file.Path file) {
        schedulerKeyFile = file;
        schedulerKey = null;
    }

    /**
     * Why a claim request cannot be signed, or empty when it can: no scheduler key at the file {@link #signWithKeyFile}
     * named (a closed system dead-letters unsigned requests "unsigned", so the CLI would wait for an answer that never
     * comes).
     */
    static java.util.Optional<String> cannotSign() {
        if (schedulerKey() != null) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of("cannot sign the claim request: no scheduler key at " + schedulerKeyFile
                + " (the services dead-letter unsigned claim requests); pass the --work-dir of ./csi up, or set"
                + " CSI_IDENTITY_KEY_FILE to a key from ./csi identity join-scheduler");
    }

    private static synchronized io.csiorchestrator.events.identity.IdentityKey schedulerKey() {
        if (schedulerKey == null && schedulerKeyFile != null && java.nio.file.Files.exists(schedulerKeyFile)) {
            schedulerKey = io.csiorchestrator.events.identity.IdentityKey.read(schedulerKeyFile);
        }
        return schedulerKey;
    }
    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

    private final String bootstrap;
    private final TopicCatalog topics;
    /** This client's Kafka settings; null: the CLI's ({@link CliKafkaSecurity#resolve()}, one per process). */
    private final io.csiorchestrator.events.KafkaClientSecurity security;
    /** The key this client signs its requests with; null: the CLI's scheduler key ({@link #signWithKeyFile}). */
    private final io.csiorchestrator.events.identity.IdentityKey signer;

    /** A client with the CLI's Kafka settings and scheduler key (this process's, see {@link CliKafkaSecurity}). */
    public ClaimClient(String bootstrap, String topicPrefix) {
        this(bootstrap, topicPrefix, null, null);
    }

    /**
     * A client with Kafka settings and a scheduler key of its own, whatever the process's are ({@link Cluster#claimClient}:
     * a system's own client keeps its credentials while another system of the same process issues others).
     */
    ClaimClient(String bootstrap, String topicPrefix, io.csiorchestrator.events.KafkaClientSecurity security,
                io.csiorchestrator.events.identity.IdentityKey signer) {
        this.bootstrap = bootstrap;
        this.topics = new TopicCatalog(topicPrefix == null ? "" : topicPrefix);
        this.security = security;
        this.signer = signer;
    }

    public static ClaimRequested claim(String namespace, String volumeId, String allocationId, String nodeId,
                                       ClaimMode mode, AccessMode accessMode, AttachmentMode attachmentMode) {
        return new ClaimRequested("csi-cli-" + UUID.randomUUID(), namespace, volumeId, allocationId, nodeId, mode,
                accessMode, attachmentMode, mode == ClaimMode.READ, null, null, null, Instant.now());
    }

    /**
     * A claim whose mount flags (replacing the volume's) travel sealed for claim-service's public key
     * ({@code claimService}, the trust file's), as the contract requires.
     */
    public static ClaimRequested claim(String namespace, String volumeId, String allocationId, String nodeId,
                                       ClaimMode mode, AccessMode accessMode, AttachmentMode attachmentMode,
                                       List<String> mountFlags, io.csiorchestrator.events.identity.TrustSet.Entry claimService) {
        ClaimRequested plain = claim(namespace, volumeId, allocationId, nodeId, mode, accessMode, attachmentMode);
        if (mountFlags.isEmpty()) {
            return plain;
        }
        return new ClaimRequested(plain.requestId(), namespace, volumeId, allocationId, nodeId, mode, accessMode,
                attachmentMode, plain.readOnly(), null, ClaimRequested.sealFlags(claimService, namespace, volumeId, mountFlags),
                null, plain.requestedAt());
    }

    public static ClaimRequested release(String namespace, String volumeId, String allocationId) {
        return new ClaimRequested("csi-cli-" + UUID.randomUUID(), namespace, volumeId, allocationId, null,
                ClaimMode.RELEASE, null, null, false, null, null, null, Instant.now());
    }

    /** Publishes the request, then waits for a final claim-status of it; {@code progress} sees each status. */
    public Outcome request(ClaimRequested request, Duration timeout, Consumer<ClaimStatus> progress) {
        Set<ClaimState> done = request.mode() == ClaimMode.RELEASE ? RELEASE_DONE : CLAIM_DONE;
        String statusTopic = topics.name(Topic.CLAIM_STATUS);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerProps())) {
            List<PartitionInfo> infos = consumer.partitionsFor(statusTopic, Duration.ofSeconds(15));
            if (infos == null || infos.isEmpty()) {
                throw new KafkaException("topic " + statusTopic + " does not exist on " + bootstrap);
            }
            List<TopicPartition> partitions = new ArrayList<>();
            infos.forEach(i -> partitions.add(new TopicPartition(i.topic(), i.partition())));
            consumer.assign(partitions);
            consumer.seekToEnd(partitions);
            partitions.forEach(p -> consumer.position(p, Duration.ofSeconds(15)));
            String traceparent = newTraceparent();
            String traceId = traceparent.substring(3, 35);
            long sentAt = send(request, traceparent);
            List<ClaimStatus> seen = new ArrayList<>();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(250))) {
                    ClaimStatus status;
                    try {
                        status = EventCodec.decode(ClaimStatus.class, record.value());
                    } catch (MalformedEventException e) {
                        continue;
                    }
                    if (!answers(request, status)) {
                        continue;
                    }
                    seen.add(status);
                    if (progress != null) {
                        progress.accept(status);
                    }
                    if (done.contains(status.state())) {
                        return new Outcome(status, seen, false, sentAt < 0 ? -1 : record.timestamp() - sentAt,
                                traceId, traceIdOf(record.headers().lastHeader(TRACEPARENT)));
                    }
                }
            }
            return new Outcome(seen.isEmpty() ? null : seen.get(seen.size() - 1), seen, true, -1, traceId, null);
        }
    }

    /** A status answers the request when it names it, or (for a release) when it ends the allocation's claim. */
    static boolean answers(ClaimRequested request, ClaimStatus status) {
        if (!request.volumeId().equals(status.volumeId()) || !request.namespace().equals(status.namespace())) {
            return false;
        }
        if (request.requestId().equals(status.requestId())) {
            return true;
        }
        return request.mode() == ClaimMode.RELEASE && request.allocationId().equals(status.allocationId())
                && (status.state() == ClaimState.RELEASING || status.state() == ClaimState.RELEASED);
    }

    /**
     * A new W3C trace context, as an upstream scheduler would start one per request: the services
     * carry it through every record the request causes, so the answer comes back in the same trace.
     */
    static String newTraceparent() {
        byte[] trace = new byte[16];
        byte[] span = new byte[8];
        RANDOM.nextBytes(trace);
        RANDOM.nextBytes(span);
        return "00-" + HexFormat.of().formatHex(trace) + "-" + HexFormat.of().formatHex(span) + "-01";
    }

    /** The trace id of a {@code traceparent} header, or null when there is none or it is not one. */
    static String traceIdOf(org.apache.kafka.common.header.Header header) {
        if (header == null || header.value() == null) {
            return null;
        }
        String value = new String(header.value(), java.nio.charset.StandardCharsets.UTF_8);
        return value.matches("[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}") ? value.substring(3, 35) : null;
    }

    /** Publishes the request in the trace {@code traceparent}; returns its record's timestamp (ms). */
    long send(ClaimRequested request, String traceparent) {
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(producerProps(),
                new StringSerializer(), new ByteArraySerializer())) {
            return producer.send(record(topics, request, traceparent, signer != null ? signer : schedulerKey()))
                    .get(30, TimeUnit.SECONDS).timestamp();
        } catch (ExecutionException e) {
            throw new KafkaException("could not publish claim-requested to " + bootstrap + ": "
                    + e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new KafkaException("Kafka at " + bootstrap + " did not acknowledge claim-requested within 30 s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted");
        }
    }

    /** The claim-requested record of {@code request}: key, CloudEvents headers and the trace it starts. */
    static ProducerRecord<String, byte[]> record(TopicCatalog topics, ClaimRequested request, String traceparent) {
        return record(topics, request, traceparent, schedulerKey());
    }

    /** As {@link #record(TopicCatalog, ClaimRequested, String)}, signed with {@code key} (none: unsigned). */
    static ProducerRecord<String, byte[]> record(TopicCatalog topics, ClaimRequested request, String traceparent,
                                                 io.csiorchestrator.events.identity.IdentityKey key) {
        ProducerRecord<String, byte[]> record = new ProducerRecord<>(topics.name(Topic.CLAIM_REQUESTED),
                request.recordKey(), EventCodec.encode(request));
        CloudEventHeaders.create(request.eventType(), SOURCE).writeTo(record.headers());
        if (key != null) {
            io.csiorchestrator.events.identity.RecordSignature.sign(key, record.key(), record.value(), record.headers());
        }
        record.headers().add(TRACEPARENT, traceparent.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return record;
    }

    /** A scheduler's producer: acks=all, idempotent, no linger, bounded waits. */
    static Properties producerProps(String bootstrap, String clientId) {
        Properties props = CliKafkaSecurity.resolve().applyTo(new Properties());
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        return props;
    }

    /** This client's producer settings: its own Kafka settings when it has them, else the CLI's. */
    Properties producerProps() {
        Properties props = producerProps(bootstrap, "csi-cli");
        return security != null ? security.applyTo(props) : props;
    }

    /** This client's consumer settings: its own Kafka settings when it has them, else the CLI's. */
    Properties consumerProps() {
        Properties props = consumerProps(bootstrap, "csi-cli");
        return security != null ? security.applyTo(props) : props;
    }

    /** A reader of the contract's topics from assigned positions: no group, no commits, committed records only. */
    static Properties consumerProps(String bootstrap, String clientId) {
        Properties props = CliKafkaSecurity.resolve().applyTo(new Properties());
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "15000");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        return props;
    }
}
