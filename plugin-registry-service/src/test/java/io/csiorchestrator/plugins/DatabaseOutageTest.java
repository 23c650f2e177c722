package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.send;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.plugins.metrics.RegistryMetrics;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.PostgresResource;
import io.csiorchestrator.testkit.TcpProxy;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The database goes away (every connection closed, new ones closed at once, as in a crash or a
 * failover) while a report arrives, for longer than the eight tries a failure that is not the
 * database being away gets: the report waits for the database instead of being dead-lettered, and is
 * recorded once it is back.
 */
@QuarkusTest
class DatabaseOutageTest {

    @Inject
    RegistryMetrics metrics;

    final KafkaTestClient kafka = KafkaTestClient.forSharedBroker();

    @AfterEach
    void after() {
        TcpProxy proxy = PostgresResource.proxy();
        if (proxy != null) {
            proxy.restore();
        }
        kafka.close();
    }

    @Test
    void aReportArrivingWhileTheDatabaseIsAwayWaitsForItAndIsNotDeadLettered() {
        TcpProxy database = PostgresResource.proxy();
        assertNotNull(database, "the test datasource goes through a proxy (TestInfrastructure)");
        String plugin = uniquePluginId("outage");

        double before = metrics.retries(true);
        database.cut();
        send(kafka, node(plugin, "n1", true, now()));
        // More tries than the eight after which a failure that is not the database being away is dead-lettered.
        Awaitility.await().atMost(HealthRecords.TIMEOUT).until(() -> metrics.retries(true) - before >= 9);
        database.restore();

        awaitStatus(kafka, plugin, counts(0, 0, 1, 1));
        assertTrue(kafka.readAll(HealthRecords.deadLetterTopic()).stream()
                        .noneMatch(r -> r.key() != null && r.key().startsWith(plugin + "/")),
                "the report was not dead-lettered");
    }
}
