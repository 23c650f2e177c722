package io.csiorchestrator.claims.messaging;

import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.KafkaClientSecurity;
import io.quarkus.arc.Unremovable;
import io.quarkus.runtime.ShutdownEvent;
import io.smallrye.common.annotation.Identifier;
import io.smallrye.mutiny.Uni;
import io.smallrye.reactive.messaging.kafka.IncomingKafkaRecord;
import io.smallrye.reactive.messaging.kafka.KafkaConnectorIncomingConfiguration;
import io.smallrye.reactive.messaging.kafka.KafkaConsumer;
import io.smallrye.reactive.messaging.kafka.api.OutgoingKafkaRecordMetadata;
import io.smallrye.reactive.messaging.kafka.fault.KafkaFailureHandler;
import io.smallrye.reactive.messaging.kafka.impl.ReactiveKafkaProducer;
import io.vertx.mutiny.core.Vertx;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BiConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.eclipse.microprofile.reactive.messaging.Metadata;
import org.jboss.logging.Logger;

/**
 * claim-service's dead-letter queue ({@code failure-strategy=claim-service-dead-letters} on each incoming channel):
 * the records SmallRye's own dead-letter-queue strategy would write (the original key and value, the record's headers,
 * and {@link DeadLetters}' headers naming the reason and the origin; the topic, key or partition a nack's
 * {@link OutgoingKafkaRecordMetadata} names instead), through <em>one</em> producer for every channel. SmallRye's
 * strategy builds a producer of its own per channel, with its sending thread and network thread: four producers and
 * eight threads in claim-service that sent nothing unless a record was refused (issue 36, memory). This one is made
 * at the first dead letter ({@code lazy-client}): until a record is refused it has no thread and no connection.
 *
 * <p>A send that fails fails the nack (the record is not acknowledged); the callers try again until the broker took it
 * ({@link RecordBatches}), so a dead letter is never lost and the poll's offsets wait for it.
 */
@ApplicationScoped
@Unremovable // looked up by its identifier, the channels' failure-strategy
@Identifier(DeadLetterQueue.STRATEGY)
public class DeadLetterQueue implements KafkaFailureHandler.Factory {

    /** The channels' {@code failure-strategy}. */
    public static final String STRATEGY = "claim-service-dead-letters";
    /** The shared producer's client id. */
    static final String CLIENT_ID = "claim-service-dead-letters";

    private static final Logger LOG = Logger.getLogger(DeadLetterQueue.class);
    /** A header SmallRye's deserialization-failure handler adds for its own use; never copied to a dead letter. */
    private static final String DESERIALIZATION_FAILURE = "deserialization-failure-dlq";

    @Inject
    KafkaClientSecurity security;

    @ConfigProperty(name = "kafka.bootstrap.servers")
    String bootstrapServers;

    private ReactiveKafkaProducer<String, String> producer;

    @Override
    public KafkaFailureHandler create(KafkaConnectorIncomingConfiguration config, Vertx vertx, KafkaConsumer<?, ?> consumer,
                                      BiConsumer<Throwable, Boolean> reportFailure) {
        String channel = config.getChannel();
        String topic = config.getDeadLetterQueueTopic().orElse("dead-letter-topic-" + channel);
        LOG.debugf("channel %s dead-letters to %s", channel, topic);
        return new Handler(channel, topic, producer());
    }

    private synchronized ReactiveKafkaProducer<String, String> producer() {
        if (producer == null) {
            Map<String, Object> props = new HashMap<>();
            props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
            security.applyTo(props);
            props.put(ProducerConfig.CLIENT_ID_CONFIG, CLIENT_ID);
            props.put(ProducerConfig.ACKS_CONFIG, "all");
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            // made at the first send (lazy), closed within 10 s at the stop
            producer = new ReactiveKafkaProducer<>(props, CLIENT_ID, 10_000, true, null, null, null, (p, c) -> { });
        }
        return producer;
    }

    synchronized void onStop(@Observes ShutdownEvent event) {
        if (producer != null) {
            producer.close();
        }
    }

    /** One channel's dead letters, through the shared producer. */
    record Handler(String channel, String topic, ReactiveKafkaProducer<String, String> producer) implements KafkaFailureHandler {

        @Override
        public <K, V> Uni<Void> handle(IncomingKafkaRecord<K, V> record, Throwable reason, Metadata metadata) {
            ProducerRecord<String, String> dead = deadLetter(record, reason, metadata);
            // one line per refused record, as SmallRye's own strategy logs it; the reason is the handler's message,
            // which never carries a secret (the record's value is not logged)
            LOG.warnf("channel %s: the record %s-%d@%d is refused and dead-lettered to %s: %s", channel, record.getTopic(),
                    record.getPartition(), record.getOffset(), dead.topic(), message(reason));
            return producer.send(dead)
                    .replaceWithVoid()
                    .chain(() -> Uni.createFrom().completionStage(record.ack()))
                    .emitOn(record::runOnMessageContext);
        }

        /** The dead letter of {@code record}: as SmallRye's dead-letter-queue strategy writes it. */
        <K, V> ProducerRecord<String, String> deadLetter(IncomingKafkaRecord<K, V> record, Throwable reason, Metadata metadata) {
            OutgoingKafkaRecordMetadata<?> outgoing = metadata == null ? null
                    : metadata.get(OutgoingKafkaRecordMetadata.class).orElse(null);
            String to = outgoing != null && outgoing.getTopic() != null ? outgoing.getTopic() : topic;
            Object key = outgoing != null && outgoing.getKey() != null ? outgoing.getKey() : record.getKey();
            Integer partition = outgoing != null && outgoing.getPartition() >= 0 ? outgoing.getPartition() : null;
            ProducerRecord<String, String> dead = new ProducerRecord<>(to, partition, text(key), text(record.getPayload()));
            header(dead, "dead-letter-exception-class-name", reason.getClass().getName());
            header(dead, DeadLetters.REASON, message(reason));
            if (reason.getCause() != null) {
                header(dead, "dead-letter-cause-class-name", reason.getCause().getClass().getName());
                header(dead, DeadLetters.CAUSE, message(reason.getCause()));
            }
            header(dead, DeadLetters.TOPIC, record.getTopic());
            header(dead, DeadLetters.PARTITION, Integer.toString(record.getPartition()));
            header(dead, DeadLetters.OFFSET, Long.toString(record.getOffset()));
            record.getHeaders().forEach(h -> dead.headers().add(h));
            if (outgoing != null && outgoing.getHeaders() != null) {
                outgoing.getHeaders().forEach(h -> dead.headers().add(h));
            }
            dead.headers().remove(DESERIALIZATION_FAILURE);
            return dead;
        }

        private static String text(Object keyOrValue) {
            return keyOrValue == null ? null : keyOrValue instanceof byte[] bytes
                    ? new String(bytes, StandardCharsets.UTF_8) : keyOrValue.toString();
        }

        private static String message(Throwable t) {
            return t.getMessage() != null ? t.getMessage() : t.toString();
        }

        private static void header(ProducerRecord<?, ?> record, String name, String value) {
            record.headers().add(name, value.getBytes(StandardCharsets.UTF_8));
        }
    }
}
