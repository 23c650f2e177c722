package io.csiorchestrator.testkit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import jakarta.inject.Inject;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import io.csiorchestrator.testkit.app.RoundTrip;
import io.quarkus.test.common.QuarkusTestResource;
import io.quarkus.test.common.ResourceArg;
import io.quarkus.test.junit.QuarkusTest;

/** A real SmallRye Reactive Messaging Kafka application against the in-process broker of {@link KafkaResource}. */
@QuarkusTest
@QuarkusTestResource(value = KafkaResource.class, restrictToAnnotatedClass = false, parallel = true,
    initArgs = @ResourceArg(name = KafkaResource.TOPICS, value = "testkit-upper-in:4,testkit-upper-out:2"))
class KafkaChannelQuarkusTest {

    private static KafkaTestClient kafka;

    @Inject
    RoundTrip roundTrip;

    @ConfigProperty(name = "kafka.bootstrap.servers")
    String bootstrapServers;

    @BeforeAll
    static void client() {
        kafka = KafkaTestClient.forSharedBroker();
    }

    @AfterAll
    static void closeClient() {
        kafka.close();
    }

    @Test
    void applicationUsesTheSharedBroker() throws Exception {
        assertEquals(KafkaResource.bootstrapServers(), bootstrapServers);
        try (Admin admin = KafkaBroker.admin(bootstrapServers)) {
            var topics = admin.describeTopics(List.of("testkit-upper-in", "testkit-upper-out")).allTopicNames().get();
            assertEquals(4, topics.get("testkit-upper-in").partitions().size(), "pre-created with init arg");
            assertEquals(2, topics.get("testkit-upper-out").partitions().size(), "pre-created with init arg");
        }
    }

    @Test
    void processorConsumesAndProducesThroughChannels() {
        String key = "node-" + UUID.randomUUID();
        kafka.send("testkit-upper-in", key, "mount volume vol-1", Map.of("ce_type", "MountVolume"));

        ConsumerRecord<String, String> out = kafka.awaitRecord("testkit-upper-out",
            r -> key.equals(r.key()), Duration.ofSeconds(30));
        assertEquals("MOUNT VOLUME VOL-1", out.value());
        assertEquals("MountVolume", KafkaTestClient.header(out, "ce_type"));
        assertEquals("uppercase", KafkaTestClient.header(out, "processed-by"));
    }

    @Test
    void emitterAndIncomingRoundTrip() {
        String value = "hello-" + UUID.randomUUID();
        roundTrip.send(value);
        await().atMost(Duration.ofSeconds(30)).until(() -> roundTrip.received().contains(value));
        assertTrue(kafka.readAll("testkit-roundtrip").stream().anyMatch(r -> value.equals(r.value())));
    }
}
