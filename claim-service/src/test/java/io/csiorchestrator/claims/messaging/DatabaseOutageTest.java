package io.csiorchestrator.claims.messaging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.Bus;
import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.PostgresResource;
import io.csiorchestrator.testkit.TcpProxy;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
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
}
