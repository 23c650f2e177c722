package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.send;
import static io.csiorchestrator.plugins.HealthRecords.sendToPartition0;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.plugins.metrics.RegistryMetrics;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.PostgresResource;
import io.csiorchestrator.testkit.TcpProxy;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
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

    /** The application is fully up (its lease authority too, which reads PostgreSQL at assignment) before any cut. */
    @BeforeEach
    void applicationServing() {
        HealthRecords.awaitLeaseAuthorityServing(kafka);
    }

    @AfterEach
    void after() {
        TcpProxy proxy = PostgresResource.proxy();
        if (proxy != null) {
            proxy.restore();
        }
        kafka.close();
    }

    /**
     * How long {@link #consumptionPausesForADatabaseOutageLongerThanAnyBoundAndResumesWithoutSkippingARecord} keeps
     * the database away: longer than a commit strategy's bound on a record waiting unacknowledged shortened to 3 s
     * (SmallRye's throttled {@code unprocessed-record-max-age}, checked every {@code auto.commit.interval.ms}, 5 s).
     */
    static final Duration OUTAGE = Duration.ofSeconds(12);
    static final String DATABASE_CHECK = "Reactive PostgreSQL connections health check";

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

    /**
     * Issue 16, wanted 2: the database is away for {@link #OUTAGE} while three reports of one plugin (three nodes)
     * arrive on one partition of {@code plugin-health}. Meanwhile readiness is DOWN with the PostgreSQL check DOWN,
     * and liveness stays UP at every look (the channel reported no failure, nothing would restart the pod). Once the
     * database is back, all three are recorded (the plugin's status counts three healthy nodes of three, none
     * dead-lettered), and readiness is UP again, the channel included.
     */
    @Test
    void consumptionPausesForADatabaseOutageLongerThanAnyBoundAndResumesWithoutSkippingARecord() {
        TcpProxy database = PostgresResource.proxy();
        assertNotNull(database, "the test datasource goes through a proxy (TestInfrastructure)");
        String plugin = uniquePluginId("long-outage");

        double before = metrics.retries(true);
        database.cut();
        long cutAt = System.nanoTime();
        for (String node : List.of("n1", "n2", "n3")) {
            sendToPartition0(kafka, node(plugin, node, true, now()));
        }
        Awaitility.await().atMost(HealthRecords.TIMEOUT).until(() -> metrics.retries(true) > before);
        Awaitility.await().atMost(HealthRecords.TIMEOUT).untilAsserted(() -> given().get("/q/health/ready").then()
                .statusCode(503).body("checks.find { it.name == '" + DATABASE_CHECK + "' }.status", equalTo("DOWN")));
        List<String> livenessNotUp = new ArrayList<>();
        Awaitility.await().atMost(OUTAGE.plus(HealthRecords.TIMEOUT)).pollInterval(Duration.ofMillis(500)).until(() -> {
            Response live = given().get("/q/health/live");
            if (live.statusCode() != 200) {
                livenessNotUp.add(live.asString());
            }
            return System.nanoTime() - cutAt >= OUTAGE.toNanos();
        });
        assertEquals(List.of(), livenessNotUp, "liveness stayed UP while the database was away");
        database.restore();

        awaitStatus(kafka, plugin, counts(0, 0, 3, 3));
        assertTrue(kafka.readAll(HealthRecords.deadLetterTopic()).stream()
                        .noneMatch(r -> r.key() != null && r.key().startsWith(plugin + "/")),
                "no report was dead-lettered");
        Awaitility.await().atMost(HealthRecords.TIMEOUT).untilAsserted(() -> given().get("/q/health/ready").then()
                .statusCode(200).body("status", equalTo("UP")));
        given().get("/q/health/live").then().statusCode(200).body("status", equalTo("UP"));
    }
}
