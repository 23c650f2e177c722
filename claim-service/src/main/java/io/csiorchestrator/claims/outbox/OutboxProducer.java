package io.csiorchestrator.claims.outbox;

import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.claims.ClaimSettings;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.tracing.KafkaTraceHeaders;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.quarkus.runtime.ShutdownEvent;
import io.quarkus.runtime.StartupEvent;
import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import jakarta.interceptor.Interceptor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.logging.Logger;

/**
 * The one Kafka producer outbox rows leave by ({@link DirectSends} for a writer's own rows, {@link OutboxRelay} for the
 * rest): acks=all, idempotence (a partition keeps the order of the sends), linger.ms=0. Each row becomes a record with
 * its stored ce_id, ce_type and ce_time, sent inside a PRODUCER span that continues the trace of the row's cause.
 */
@ApplicationScoped
public class OutboxProducer {

    private static final Logger LOG = Logger.getLogger(OutboxProducer.class);
    private static final String SOURCE = "/claim-service";

    /** The Kafka client settings (service-support's KafkaSecurity); PLAINTEXT when built by hand in a test. */
    @Inject
    KafkaClientSecurity kafkaSecurity = KafkaClientSecurity.plaintext();
    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;
    @Inject
    OpenTelemetry openTelemetry;
    @Inject
    Tracer tracer;
    @ConfigProperty(name = "kafka.bootstrap.servers", defaultValue = "localhost:9092")
    String bootstrapServers;

    private final Map<String, Integer> partitionCounts = new ConcurrentHashMap<>();
    private volatile KafkaProducer<String, byte[]> producer;

    void onStart(@Observes @Priority(Interceptor.Priority.PLATFORM_BEFORE + 20) StartupEvent event) {
        start();
    }

    /** Creates the producer. */
    public void start() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        kafkaSecurity.applyTo(props);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "claim-service-outbox");
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        props.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, Long.toString(settings.outbox().metadataMaxAge().toMillis()));
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        producer = new KafkaProducer<>(props);
    }

    /** After the relay's and the direct sender's own stop (their observers run first): closes the producer. */
    void onStop(@Observes @Priority(Interceptor.Priority.APPLICATION + 1000) ShutdownEvent event) {
        KafkaProducer<String, byte[]> p = producer;
        if (p != null) {
            p.close(Duration.ofSeconds(5));
        }
    }

    /** Whether the producer exists (it is made at start). */
    public boolean started() {
        return producer != null;
    }

    /**
     * Sends one row inside a PRODUCER span {@code <topic> publish} whose parent is the trace context stored
     * with the row (a new trace when it has none), injected into the record's traceparent/tracestate headers.
     * The span ends, and {@code csi.outbox.publish} records row written → ack, when the broker answers; then
     * {@code then} hears the outcome (on the producer's I/O thread: it must not block). The relay's drains and
     * {@link DirectSends} send through here.
     */
    Future<RecordMetadata> send(OutboxRow row, Callback then) {
        ProducerRecord<String, byte[]> record = toRecord(row);
        String traceparent = row.traceparent();
        SpanBuilder builder = tracer.spanBuilder(record.topic() + " publish").setSpanKind(SpanKind.PRODUCER)
                .setAttribute("messaging.system", "kafka")
                .setAttribute("messaging.destination.name", record.topic())
                .setAttribute("messaging.operation.type", "send")
                .setAttribute("messaging.message.id", row.ceId());
        Context parent = traceparent == null ? Context.root()
                : KafkaTraceHeaders.fromStored(openTelemetry, traceparent, row.tracestate());
        if (traceparent == null) {
            builder.setNoParent();
        } else {
            builder.setParent(parent);
        }
        Span span = builder.startSpan();
        KafkaTraceHeaders.inject(openTelemetry, parent.with(span), record.headers());
        Instant written = row.createdAt();
        try {
            return producer.send(record, (metadata, error) -> {
                if (error != null) {
                    span.recordException(error);
                    span.setStatus(StatusCode.ERROR, error.toString());
                } else {
                    if (written != null) {
                        metrics.outboxPublished(Duration.between(written, Instant.now()));
                    }
                    span.setAttribute("messaging.destination.partition.id", String.valueOf(metadata.partition()));
                }
                span.end();
                then.onCompletion(metadata, error);
            });
        } catch (RuntimeException e) {
            span.recordException(e);
            span.setStatus(StatusCode.ERROR, e.toString());
            span.end();
            throw e;
        }
    }

    /**
     * The partition count of {@code topic} as the producer's metadata has it now (refreshed every
     * {@code csi.claims.outbox.metadata-max-age}); a change is logged once.
     */
    public int partitionCount(String topic) {
        int count = producer.partitionsFor(topic).size();
        Integer before = partitionCounts.put(topic, count);
        if (before != null && before != count) {
            LOG.infof("%s now has %d partitions (was %d): node commands follow NodePartitioner with %d", topic, count, before, count);
        }
        return count;
    }

    /**
     * The record of an outbox row. A node command's partition is the node's under the topic's partition count
     * now, not the one stored at commit ({@code partition_no}): partitions added to node-commands since then
     * are followed, as the workers follow them.
     */
    private ProducerRecord<String, byte[]> toRecord(OutboxRow row) {
        Integer partition = row.partitionNo();
        if (partition != null) {
            partition = NodePartitioner.partitionFor(row.recordKey(), partitionCount(row.topic()));
        }
        ProducerRecord<String, byte[]> record = new ProducerRecord<>(row.topic(), partition, row.recordKey(),
                row.payload().getBytes(StandardCharsets.UTF_8));
        CloudEventHeaders.withId(row.ceId(), EventType.forCloudEventType(row.ceType()), SOURCE, row.ceTime()).writeTo(record.headers());
        return record;
    }
}
