package io.csiorchestrator.claims.messaging;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.Bus;
import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.Topic;
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
import org.junit.jupiter.api.Test;

/**
 * The database goes away (every connection of the service to it closed, new ones closed at once, as
 * in a crash or a failover) while a claim arrives, for longer than the retry budget (2 s here, 45 s
 * by default): the claim waits for the database instead of being dead-lettered, and is answered once
 * it is back.
 */
@QuarkusTest
class DatabaseOutageTest {

    @Inject
    ClaimMetrics metrics;

    final Bus bus = new Bus();

    @AfterEach
    void after() {
        TcpProxy proxy = PostgresResource.proxy();
        if (proxy != null) {
            proxy.restore();
        }
        bus.close();
    }

    /**
     * How long {@link #consumptionPausesForADatabaseOutageLongerThanAnyBoundAndResumesWithoutSkippingARecord} keeps
     * the database away: longer than a commit strategy's bound on a record waiting unacknowledged shortened to 3 s
     * (SmallRye's throttled {@code unprocessed-record-max-age}, checked every {@code auto.commit.interval.ms}, 5 s).
     */
    static final Duration OUTAGE = Duration.ofSeconds(12);
    static final String DATABASE_CHECK = "Reactive PostgreSQL connections health check";

    @Test
    void aClaimArrivingWhileTheDatabaseIsAwayWaitsForItAndIsNotDeadLettered() {
        String vol = bus.schedulableVolume("ns1", "outage", AccessMode.SINGLE_NODE_WRITER, "node-a");
        TcpProxy database = PostgresResource.proxy();
        assertNotNull(database, "the test datasource goes through a proxy (TestResources)");

        double before = metrics.consumerRetries(true);
        database.cut();
        ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(claim);
        // Six retries with backoff from 100 ms (jitter at most halves each wait) take more than 3 s: past the
        // 2 s budget after which a failure that is not the database being away is dead-lettered.
        Awaitility.await().atMost(Bus.WAIT).until(() -> metrics.consumerRetries(true) - before >= 6);
        database.restore();

        assertEquals(ClaimState.ACCEPTED, bus.awaitStatus(claim.requestId(), ClaimState.ACCEPTED).state());
        assertTrue(bus.kafka.readAll(Bus.topic(Topic.CLAIM_REQUESTED) + "-dead-letter").stream()
                        .noneMatch(r -> r.value() != null && r.value().contains(claim.requestId())),
                "the claim was not dead-lettered");
    }

    /**
     * Issue 16, wanted 2: the database is away for {@link #OUTAGE} while three claims arrive on one partition of
     * {@code claim-requested} (one volume). Meanwhile readiness is DOWN with the PostgreSQL check DOWN, and liveness
     * stays UP at every look (no channel reported a failure, nothing would restart the pod). Once the database is
     * back, every claim is answered ACCEPTED in the order sent (nothing lost or skipped), readiness is UP again,
     * every channel included.
     */
    @Test
    void consumptionPausesForADatabaseOutageLongerThanAnyBoundAndResumesWithoutSkippingARecord() {
        String vol = bus.schedulableVolume("ns1", "long-outage", AccessMode.MULTI_NODE_MULTI_WRITER, "node-a");
        TcpProxy database = PostgresResource.proxy();
        assertNotNull(database, "the test datasource goes through a proxy (TestResources)");
        List<ClaimRequested> claims = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            claims.add(Bus.claim("ns1", vol, "alloc-" + i, "node-a", ClaimMode.WRITE, AccessMode.MULTI_NODE_MULTI_WRITER));
        }

        double before = metrics.consumerRetries(true);
        database.cut();
        long cutAt = System.nanoTime();
        claims.forEach(bus::send);
        Awaitility.await().atMost(Bus.WAIT).until(() -> metrics.consumerRetries(true) > before);
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(503)
                .body("checks.find { it.name == '" + DATABASE_CHECK + "' }.status", equalTo("DOWN")));
        List<String> livenessNotUp = new ArrayList<>();
        Awaitility.await().atMost(OUTAGE.plus(Bus.WAIT)).pollInterval(Duration.ofMillis(500)).until(() -> {
            Response live = given().get("/q/health/live");
            if (live.statusCode() != 200) {
                livenessNotUp.add(live.asString());
            }
            return System.nanoTime() - cutAt >= OUTAGE.toNanos();
        });
        assertEquals(List.of(), livenessNotUp, "liveness stayed UP while the database was away");
        database.restore();

        for (ClaimRequested claim : claims) {
            bus.awaitStatus(claim.requestId(), ClaimState.ACCEPTED);
        }
        List<String> answered = bus.kafka.readAll(Bus.topic(Topic.CLAIM_STATUS)).stream()
                .map(r -> EventCodec.decode(ClaimStatus.class, r.value()))
                .filter(s -> s.volumeId().equals(vol) && s.state() == ClaimState.ACCEPTED)
                .map(ClaimStatus::requestId).toList();
        assertEquals(claims.stream().map(ClaimRequested::requestId).toList(), answered, "each claim answered once, in order");
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/q/health/ready").then().statusCode(200)
                .body("status", equalTo("UP")));
        given().get("/q/health/live").then().statusCode(200).body("status", equalTo("UP"));
    }
}
