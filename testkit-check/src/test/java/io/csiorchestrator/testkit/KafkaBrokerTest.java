package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;

/** A standalone broker (not the shared one), used as a plain class: start, topics, records, close. */
class KafkaBrokerTest {

    @Test
    void startsCreatesTopicsCarriesRecordsAndCleansUp() throws Exception {
        long begin = System.nanoTime();
        Path dataDir;
        try (KafkaBroker broker = KafkaBroker.start()) {
            System.out.printf("KafkaBroker started in %d ms at %s%n",
                (System.nanoTime() - begin) / 1_000_000, broker.bootstrapServers());
            dataDir = broker.dataDir();
            assertTrue(Files.isDirectory(dataDir));
            assertTrue(broker.bootstrapServers().startsWith("127.0.0.1:"));

            assertTrue(broker.createTopic("compacted-commands", 3, Map.of("cleanup.policy", "compact")));
            assertFalse(broker.createTopic("compacted-commands", 3, Map.of()), "second create reports existing");
            try (Admin admin = broker.admin()) {
                TopicDescription description = admin.describeTopics(List.of("compacted-commands"))
                    .allTopicNames().get().get("compacted-commands");
                assertEquals(3, description.partitions().size());
                ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, "compacted-commands");
                Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
                assertEquals("compact", config.get("cleanup.policy").value());
            }

            try (KafkaTestClient client = new KafkaTestClient(broker.bootstrapServers())) {
                client.send("compacted-commands", "node-1", "first", Map.of("ce_type", "MountVolume"));
                Map<TopicPartition, Long> before = client.endOffsets("compacted-commands");
                client.send("compacted-commands", "node-1", "second", Map.of("ce_type", "UnmountVolume"));
                client.send("compacted-commands", "node-2", "third", Map.of());

                ConsumerRecord<String, String> first = client.awaitRecord("compacted-commands",
                    r -> "node-1".equals(r.key()), Duration.ofSeconds(15));
                assertEquals("first", first.value());
                assertEquals("MountVolume", KafkaTestClient.header(first, "ce_type"));

                List<ConsumerRecord<String, String>> newer = client.awaitRecords("compacted-commands", before,
                    r -> true, 2, Duration.ofSeconds(15));
                assertEquals(List.of("second", "third"), newer.stream().map(ConsumerRecord::value).sorted().toList());
                assertEquals(3, client.readAll("compacted-commands").size());

                // Auto-creation: producing to an unknown topic creates it with num.partitions=1.
                client.send("auto-created", "k", "v");
                assertEquals("v", client.awaitRecord("auto-created", r -> true).value());

                AssertionError missing = assertThrows(AssertionError.class, () -> client.awaitRecord(
                    "compacted-commands", r -> "never".equals(r.key()), Duration.ofMillis(500)));
                assertTrue(missing.getMessage().contains("compacted-commands"), missing.getMessage());
            }
        }
        assertFalse(Files.exists(dataDir), "close() deletes the data directory");
    }

    @Test
    void twoBrokersRunSideBySideWithTheirOwnSettings() {
        try (KafkaBroker a = KafkaBroker.start();
             KafkaBroker b = KafkaBroker.builder().brokerProperty("num.partitions", "3").start();
             KafkaTestClient clientB = new KafkaTestClient(b.bootstrapServers())) {
            assertNotEquals(a.bootstrapServers(), b.bootstrapServers());
            assertNotEquals(a.clusterId(), b.clusterId());
            clientB.send("auto-created-on-b", "k", "v");
            assertEquals(3, clientB.endOffsets("auto-created-on-b").size(), "override of num.partitions applies");
        }
    }

    @Test
    void invalidSettingFailsTheStart() {
        assertThrows(org.apache.kafka.common.config.ConfigException.class,
            () -> KafkaBroker.builder().brokerProperty("num.partitions", "zero").start());
    }

    @Test
    void parsesTopicSpecs() {
        assertEquals(Map.of("node-commands", 4, "claim-requested", 3, "plain", 1),
            KafkaBroker.parseTopics(" node-commands:4, claim-requested:3 ,plain,"));
        assertTrue(KafkaBroker.parseTopics(null).isEmpty());
        assertThrows(IllegalArgumentException.class, () -> KafkaBroker.parseTopics("bad:x"));
        assertThrows(IllegalArgumentException.class, () -> KafkaBroker.parseTopics("bad:0"));
    }
}
