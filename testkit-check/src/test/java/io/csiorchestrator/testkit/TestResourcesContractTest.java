package io.csiorchestrator.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.admin.Admin;
import org.junit.jupiter.api.Test;

/** The resources' config contract, driven directly (no Quarkus application), on the JVM's shared servers. */
class TestResourcesContractTest {

    @Test
    void kafkaResourceReturnsTheSharedBrokerAndCreatesTopics() throws Exception {
        KafkaResource resource = new KafkaResource();
        resource.init(Map.of(KafkaResource.TOPICS, "contract-commands:3, contract-events"));
        Map<String, String> config = resource.start();
        try {
            assertEquals(Map.of(
                "kafka.bootstrap.servers", KafkaResource.bootstrapServers(),
                "quarkus.kafka.devservices.enabled", "false"), config);
            try (Admin admin = KafkaBroker.admin(config.get("kafka.bootstrap.servers"))) {
                var topics = admin.describeTopics(List.of("contract-commands", "contract-events")).allTopicNames().get();
                assertEquals(3, topics.get("contract-commands").partitions().size());
                assertEquals(1, topics.get("contract-events").partitions().size());
            }
            assertFalse(KafkaResource.createTopic("contract-commands", 5, Map.of()), "existing topic left alone");
        } finally {
            resource.stop();
        }
        // stop() leaves the shared broker running for the next test class.
        assertTrue(KafkaResource.createTopic("contract-after-stop", 1, Map.of()));
    }

    @Test
    void postgresResourceGivesEachStartAFreshDatabaseAndDropsItOnStop() throws Exception {
        PostgresResource resource = new PostgresResource();
        resource.init(Map.of(PostgresResource.DATASOURCE, "inventory"));
        Map<String, String> config = resource.start();
        String database = resource.database();
        assertTrue(database.matches("test_\\d+"), database);
        String jdbcUrl = config.get("quarkus.datasource.\"inventory\".jdbc.url");
        assertTrue(jdbcUrl.matches("jdbc:postgresql://127\\.0\\.0\\.1:\\d+/" + database), jdbcUrl);
        assertEquals(jdbcUrl.substring("jdbc:".length()), config.get("quarkus.datasource.\"inventory\".reactive.url"));
        String user = config.get("quarkus.datasource.\"inventory\".username");
        String password = config.get("quarkus.datasource.\"inventory\".password");
        assertEquals(4, config.size(), config.toString());

        try (Connection c = DriverManager.getConnection(jdbcUrl, user, password); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("select current_database(), count(*) from pg_tables where schemaname = 'public'")) {
            assertTrue(rs.next());
            assertEquals(database, rs.getString(1));
            assertEquals(0, rs.getInt(2), "fresh database");
        }

        PostgresResource another = new PostgresResource();
        another.init(Map.of(PostgresResource.JDBC, "false"));
        Map<String, String> anotherConfig = another.start();
        try {
            assertEquals(3, anotherConfig.size(), anotherConfig.toString());
            assertFalse(anotherConfig.get("quarkus.datasource.reactive.url").endsWith("/" + database));
        } finally {
            another.stop();
        }

        resource.stop();
        assertNull(resource.database());
        SQLException gone = assertThrows(SQLException.class,
            () -> DriverManager.getConnection(jdbcUrl, user, password).close());
        assertTrue(gone.getMessage().contains(database), gone.getMessage());
    }
}
