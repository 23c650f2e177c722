package io.csiorchestrator.plugins.messaging;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.plugins.domain.RecordingWindow;
import io.csiorchestrator.testkit.KafkaBroker;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.TcpProxy;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link RecordingWatch} against a real broker that it reaches through a {@link TcpProxy} (its own listener):
 * a record the group has not committed holds the window's end back, a commit past it moves the end, Kafka
 * unreachable for the registry closes the window, and it opens again, later, once Kafka is back. The broker is closed
 * as every deployment's is (SASL_SSL, SCRAM, the StandardAuthorizer, both listeners): the watch connects as
 * {@code plugin-registry-service} with exactly its {@code KafkaAccess} ACLs, its group one of the registry's own; the
 * test acts as the super user.
 */
class RecordingWatchKafkaTest {

    private static final String PREFIX = "watch-test.";
    private static final String GROUP = io.csiorchestrator.events.KafkaAccess.PLUGIN_REGISTRY + "-watch-test";

    private static TcpProxy proxy;
    private static KafkaBroker broker;
    private static KafkaTestClient kafka;

    @BeforeAll
    static void broker() {
        proxy = TcpProxy.reserve();
        broker = KafkaBroker.builder().secured(true).advertisedListener("REGISTRY", proxy.port()).start();
        proxy.forwardTo("127.0.0.1", broker.listenerPort("REGISTRY"));
        kafka = new KafkaTestClient(broker.bootstrapServers(), broker.adminSecurity());
    }

    @AfterAll
    static void close() {
        if (kafka != null) {
            kafka.close();
        }
        if (broker != null) {
            broker.close();
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    @Test
    void aLaggingGroupHoldsTheWindowsEndBackAndKafkaUnreachableClosesItUntilItIsBack() throws Exception {
        String topic = PREFIX + Topic.PLUGIN_HEALTH.baseName();
        kafka.createTopic(topic, 2, Map.of());
        RecordingWatch watch = new RecordingWatch();
        watch.clock = Clock.systemUTC();
        watch.topics = new TopicCatalog(PREFIX);
        watch.bootstrapServers = "127.0.0.1:" + proxy.port();
        watch.groupId = GROUP;
        watch.kafkaSecurity = broker.issue(io.csiorchestrator.events.KafkaAccess.Principal.pluginRegistry(),
                new TopicCatalog(PREFIX));
        watch.start();
        try {
            assertFalse(watch.window().recording(), "nothing is counted before the first catch-up");
            // An empty topic: caught up at once.
            await().atMost(Duration.ofSeconds(30)).until(() -> probed(watch).recording());
            Instant upTo = watch.window().upTo();

            // A record the group has not committed: the end of the window stays where it was.
            kafka.send(topic, "p/n1", "{}");
            watch.probe();
            watch.probe();
            assertTrue(watch.window().recording());
            assertEquals(upTo, watch.window().upTo(), "a report waiting in the topic holds the window's end back");

            // The group commits past it: the end moves.
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            kafka.endOffsets(topic).forEach((partition, offset) -> commit.put(partition, new OffsetAndMetadata(offset)));
            try (Admin admin = broker.admin()) {
                admin.alterConsumerGroupOffsets(GROUP, commit).all().get();
            }
            watch.probe();
            assertTrue(watch.window().upTo().isAfter(upTo), "caught up past the record: " + watch.window());

            // Kafka unreachable for the registry: the window closes.
            proxy.cut();
            await().atMost(Duration.ofSeconds(30)).until(() -> !probed(watch).recording());
            Instant interruptedAt = watch.window().interruptedAt();

            // Back: it opens again, after the interruption.
            proxy.restore();
            await().atMost(Duration.ofSeconds(30)).until(() -> probed(watch).recording());
            assertTrue(watch.window().since().isAfter(interruptedAt), watch.window().toString());
        } finally {
            proxy.restore();
            watch.stop();
        }
    }

    private static RecordingWindow probed(RecordingWatch watch) {
        watch.probe();
        return watch.window();
    }
}
