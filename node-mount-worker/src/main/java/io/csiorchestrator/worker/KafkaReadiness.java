package io.csiorchestrator.worker;

import io.csiorchestrator.worker.kafka.CommandConsumer;
import io.csiorchestrator.worker.kafka.KafkaEventPublisher;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Readiness check {@code kafka}: the worker's own Kafka clients. Up when its node-commands
 * consumer has its partitions and the broker answered it within the last seconds, and its event
 * producer's last send did not fail (an idle producer that has sent nothing yet counts as up).
 */
@Readiness
@ApplicationScoped
public class KafkaReadiness implements HealthCheck {

    public static final String NAME = "kafka";

    private final NodeMountWorker worker;

    public KafkaReadiness(NodeMountWorker worker) {
        this.worker = worker;
    }

    @Override
    public HealthCheckResponse call() {
        CommandConsumer consumer = worker.consumer();
        KafkaEventPublisher publisher = worker.publisher();
        return evaluate(consumer == null ? null : consumer.connectivity(), publisher);
    }

    public static HealthCheckResponse evaluate(CommandConsumer.Connectivity consumer, KafkaEventPublisher publisher) {
        HealthCheckResponseBuilder builder = HealthCheckResponse.named(NAME);
        boolean consumerUp = consumer != null && consumer.connected();
        if (consumer == null) {
            builder.withData("consumer", "not started");
        } else if (consumerUp) {
            builder.withData("consumer", "reads " + consumer.partitions() + " (node partition " + consumer.partition()
                    + "); broker answered at "
                    + consumer.lastBrokerContact());
        } else {
            builder.withData("consumer", why(consumer.lastFailure() == null ? "no partition assigned yet" : consumer.lastFailure()));
        }
        boolean producerUp = publisher != null && publisher.lastSendFailure() == null;
        if (publisher == null) {
            builder.withData("producer", "not started");
        } else {
            builder.withData("producer", producerUp ? "ok" : why(publisher.lastSendFailure()));
            builder.withData("queued events", publisher.queued());
        }
        return builder.status(consumerUp && producerUp).build();
    }

    /**
     * A client's failure as operators read it: a refused login (a revoked or expired delegation token, a deleted SCRAM
     * user) is not an unreachable broker. The credential is read at start: a new token file needs a restart of the
     * worker (a renewal keeps the token and needs nothing).
     */
    static String why(String failure) {
        if (failure != null && failure.contains("AuthenticationException")) {
            return "the broker refused this node's Kafka credential (revoked or expired? a new token file needs a restart"
                    + " of the worker): " + failure;
        }
        return "cannot reach the broker: " + failure;
    }
}
