package io.csiorchestrator.claims;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.outbox.OutboxRelay;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The relay suspended inside this JVM ({@link OutboxRelay#suspend()}: signals and safety sweeps are ignored),
 * not a crash: nothing is killed here. While suspended, a claim is decided and committed with its events in the
 * outbox and nothing reaches the topics ({@code csi_outbox_pending} counts the rows); after
 * {@link OutboxRelay#resume()} (it runs the recovery sweep, {@link OutboxRelay#recover()}; the 5 s safety sweep
 * would find the rows too, this test does not tell them apart) exactly those rows are published with the ce_id
 * they were committed with. A row inserted by another connection while suspended is published the same way. A real
 * SIGKILL of the packaged service between commit and publish, and its restart, is {@code it.ClaimServiceCrashIT}.
 */
@QuarkusTest
class SuspendedRelayTest {

    @Inject
    OutboxRelay relay;
    @Inject
    Pool pool;

    final Bus bus = new Bus();

    @AfterEach
    void after() {
        relay.resume();
        bus.close();
    }

    @Test
    void eventsCommittedWhileTheRelayIsSuspendedArePublishedWithTheirCeIdsAfterResume() {
        String vol = bus.schedulableVolume("ns1", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");

        relay.suspend();
        ClaimRequested write = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        // The decision is committed: the claim row and its two events (accepted, mount) in the outbox.
        List<Row> pending = new ArrayList<>();
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> {
            pending.clear();
            pool.preparedQuery("SELECT ce_id, topic, partition_no FROM outbox WHERE published_at IS NULL AND payload LIKE $1 ORDER BY seq")
                    .execute(Tuple.of("%" + vol + "%")).await().atMost(Duration.ofSeconds(10)).forEach(pending::add);
            assertEquals(2, pending.size());
        });
        Row claimRow = pool.preparedQuery("SELECT phase FROM claims WHERE volume_id = $1").execute(Tuple.of(vol))
                .await().atMost(Duration.ofSeconds(10)).iterator().next();
        assertEquals("MOUNTING", claimRow.getString("phase"));
        assertTrue(bus.statuses(write.requestId()).isEmpty(), "nothing published while the relay is down");
        assertTrue(bus.commands(vol).isEmpty(), "nothing published while the relay is down");

        // csi.outbox.pending counts them (refreshed by the safety sweep while the relay is suspended).
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> assertTrue(outboxPendingGauge() >= 2, "csi_outbox_pending"));

        relay.resume(); // runs recover(), the sweep a relay also runs on becoming leader
        ConsumerRecord<String, String> accepted = bus.kafka.awaitRecord(Bus.topic(Topic.CLAIM_STATUS),
                r -> r.value().contains(write.requestId()), Bus.WAIT);
        ConsumerRecord<String, String> mount = bus.kafka.awaitRecord(Bus.topic(Topic.NODE_COMMANDS),
                r -> r.value().contains(vol), Bus.WAIT);
        Row statusRow = pending.stream().filter(r -> r.getString("topic").endsWith("claim-status")).findFirst().orElseThrow();
        Row commandRow = pending.stream().filter(r -> r.getString("topic").endsWith("node-commands")).findFirst().orElseThrow();
        assertEquals(statusRow.getString("ce_id"), KafkaTestClient.header(accepted, CloudEventHeaders.CE_ID));
        assertEquals(commandRow.getString("ce_id"), KafkaTestClient.header(mount, CloudEventHeaders.CE_ID));
        assertEquals(commandRow.getInteger("partition_no"), mount.partition());
        bus.awaitStatus(write.requestId(), ClaimState.ACCEPTED);
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> assertEquals(0L,
                pool.preparedQuery("SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND payload LIKE $1")
                        .execute(Tuple.of("%" + vol + "%")).await().atMost(Duration.ofSeconds(10)).iterator().next().getLong("n")));
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> assertEquals(0.0, outboxPendingGauge(), "csi_outbox_pending after the sweep"));
    }

    /** The csi_outbox_pending gauge as /q/metrics shows it. */
    static double outboxPendingGauge() {
        String metrics = io.restassured.RestAssured.given().get("/q/metrics").then().statusCode(200).extract().asString();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^csi_outbox_pending(?:\\{[^}]*})? ([0-9.eE+-]+)").matcher(metrics);
        assertTrue(m.find(), "csi_outbox_pending in /q/metrics");
        return Double.parseDouble(m.group(1));
    }

    @Test
    void aRowInsertedByAnotherConnectionWhileSuspendedIsPublishedAfterResume() {
        String vol = ClaimFlowTest.unique("orphan");
        String ceId = java.util.UUID.randomUUID().toString();
        String payload = io.csiorchestrator.events.EventCodec.encodeToString(new io.csiorchestrator.events.ClaimStatus(
                "req-" + vol, "ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, ClaimState.ACCEPTED, null, null, java.time.Instant.now()));
        relay.suspend();
        pool.preparedQuery("INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, payload, created_at)"
                        + " VALUES ($1, 'io.csiorchestrator.claim.status.v1', now(), $2, $3, $4, now())")
                .execute(Tuple.of(ceId, Bus.topic(Topic.CLAIM_STATUS), vol, payload)).await().atMost(Duration.ofSeconds(10));
        relay.resume();
        ConsumerRecord<String, String> record = bus.kafka.awaitRecord(Bus.topic(Topic.CLAIM_STATUS), r -> vol.equals(r.key()), Bus.WAIT);
        assertEquals(ceId, KafkaTestClient.header(record, CloudEventHeaders.CE_ID));
    }
}
