package io.csiorchestrator.worker.kafka;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaBroker;
import io.csiorchestrator.worker.mount.VolumeSerializer;
import io.csiorchestrator.worker.telemetry.Telemetry;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/**
 * Issue 36: the command consumer of an idle worker fetches once per {@link CommandConsumer#FETCH_WAIT} and judges its
 * contact with the broker from those fetches alone, on a broker of its own that the test stops. While nothing is sent
 * the consumer stays connected for longer than {@link CommandConsumer#CONTACT_LOST_AFTER} (each held fetch answered
 * counts; the end-offsets question it asked before queued behind the held fetch and timed out), and once the broker
 * is gone readiness's view says so, with the reason.
 */
class CommandConsumerContactTest {

    @Test
    void anIdleConsumerKeepsContactThroughHeldFetchesAndLosesItWhenTheBrokerStops() throws Exception {
        TopicCatalog topics = new TopicCatalog("");
        ExecutorService volumeThreads = Executors.newFixedThreadPool(1);
        KafkaBroker broker = KafkaBroker.builder().start();
        try {
            broker.createTopic(topics.name(Topic.NODE_COMMANDS), 2);
            broker.createTopic(topics.name(Topic.MOUNT_DONE), 1);
            KafkaEventPublisher publisher = new KafkaEventPublisher(broker.bootstrapServers(), topics, "/test", 10);
            publisher.start();
            try (CommandConsumer consumer = new CommandConsumer(broker.bootstrapServers(), "node-mount-worker-contact",
                    topics.name(Topic.NODE_COMMANDS), topics.deadLetterName(Topic.NODE_COMMANDS), "node-contact",
                    new VolumeSerializer(volumeThreads), (command, context) -> {
                        throw new AssertionError("no command is sent: " + command);
                    }, publisher, Telemetry.none())) {
                consumer.start();
                await().atMost(Duration.ofSeconds(30)).until(() -> consumer.connectivity().connected());
                Instant idleFrom = Instant.now();
                Instant mustReach = idleFrom.plus(CommandConsumer.CONTACT_LOST_AFTER);
                // idle: every look at it finds it connected, until an answered fetch later than the loss limit
                await().atMost(CommandConsumer.CONTACT_LOST_AFTER.multipliedBy(3)).pollInterval(Duration.ofMillis(250))
                        .until(() -> {
                            CommandConsumer.Connectivity now = consumer.connectivity();
                            assertTrue(now.connected(), "idle, nothing sent, the broker up: " + now);
                            return now.lastBrokerContact().isAfter(mustReach);
                        });

                broker.close();
                await().atMost(CommandConsumer.CONTACT_LOST_AFTER.multipliedBy(3))
                        .until(() -> !consumer.connectivity().connected());
                CommandConsumer.Connectivity lost = consumer.connectivity();
                assertFalse(lost.connected());
                assertNotNull(lost.lastFailure());
                assertTrue(lost.lastFailure().contains("answered no fetch"), lost.toString());
            } finally {
                publisher.close(Duration.ofSeconds(2));
            }
        } finally {
            broker.close();
            volumeThreads.shutdownNow();
        }
    }
}
