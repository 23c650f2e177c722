package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.statusTopic;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A change committed but never acknowledged on plugin-status (the service stopped in between) is published
 * by the sweep: the rows are left in the database as such a stop leaves them.
 */
@QuarkusTest
@TestProfile(ShortTtlProfile.class)
class UnpublishedStatusTest {

    private static KafkaTestClient kafka;

    @BeforeAll
    static void client() {
        kafka = KafkaTestClient.forSharedBroker();
    }

    @AfterAll
    static void close() {
        kafka.close();
    }

    @Test
    void theSweepPublishesWhatWasCommittedButNotAcknowledged() throws SQLException {
        String changed = uniquePluginId("unpublished");
        String removed = uniquePluginId("unpublished-removal");
        Instant changedAt = Instant.now().minusSeconds(60);
        insertPlugin(changed, false, 3, 2, changedAt);
        insertPlugin(removed, true, 5, 4, changedAt);

        ConsumerRecord<String, String> status = kafka.awaitRecord(statusTopic(),
                r -> changed.equals(r.key()) && r.value() != null, HealthRecords.TIMEOUT);
        PluginStatus published = HealthRecords.decodeStatus(status);
        assertEquals(0, published.nodesExpected());
        assertEquals(changedAt.toEpochMilli(), published.updatedAt().toEpochMilli());
        await().atMost(Duration.ofSeconds(10)).until(() -> publishedVersion(changed) == 3L);

        ConsumerRecord<String, String> tombstone = kafka.awaitRecord(statusTopic(),
                r -> removed.equals(r.key()) && r.value() == null, HealthRecords.TIMEOUT);
        assertEquals(removed, tombstone.key());
        await().atMost(Duration.ofSeconds(10)).until(() -> publishedVersion(removed) == null);
        given().get("/v1/plugins/" + removed).then().statusCode(404);
        assertFalse(given().get("/v1/plugins").then().extract().jsonPath().getList("id").contains(removed));
        assertTrue(given().get("/v1/plugins").then().extract().jsonPath().getList("id").contains(changed));
    }

    private static PGSimpleDataSource dataSource() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(ConfigProvider.getConfig().getValue("quarkus.datasource.jdbc.url", String.class));
        ds.setUser(ConfigProvider.getConfig().getValue("quarkus.datasource.username", String.class));
        ds.setPassword(ConfigProvider.getConfig().getOptionalValue("quarkus.datasource.password", String.class).orElse(""));
        return ds;
    }

    private static void insertPlugin(String id, boolean removed, long statusVersion, long publishedVersion, Instant at)
            throws SQLException {
        try (Connection c = dataSource().getConnection();
             PreparedStatement insert = c.prepareStatement("insert into plugin (id, created_at, updated_at, status_version,"
                     + " published_version, removed) values (?, ?, ?, ?, ?, ?)")) {
            insert.setString(1, id);
            insert.setTimestamp(2, Timestamp.from(at));
            insert.setTimestamp(3, Timestamp.from(at));
            insert.setLong(4, statusVersion);
            insert.setLong(5, publishedVersion);
            insert.setBoolean(6, removed);
            insert.executeUpdate();
        }
    }

    /** The plugin's published version, or null when its row is gone. */
    private static Long publishedVersion(String id) throws SQLException {
        try (Connection c = dataSource().getConnection();
             PreparedStatement select = c.prepareStatement("select published_version from plugin where id = ?")) {
            select.setString(1, id);
            try (ResultSet rs = select.executeQuery()) {
                return rs.next() ? rs.getLong(1) : null;
            }
        }
    }
}
