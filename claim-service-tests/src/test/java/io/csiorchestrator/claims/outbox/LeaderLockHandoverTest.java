package io.csiorchestrator.claims.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.Bus;
import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.claims.ClaimSettings;
import io.csiorchestrator.claims.leader.LeaderElection;
import io.csiorchestrator.claims.leader.Leadership;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Tracer;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.RestAssured;
import io.vertx.core.Vertx;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.awaitility.Awaitility;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The leader lock handed over between two {@link LeaderElection}s in this one JVM, not two instances: the
 * application's relay and election, and a second {@link OutboxRelay} with its own {@link LeaderElection} (own lock
 * connection, own producer) wired by hand here on the application's Pool, settings and meters (no CDI, no
 * configuration of its own). Checked: only one holds the advisory lock; rows signalled by the non-leading relay
 * reach the leader by NOTIFY and are published once each, in order; when the leader's lock connection is
 * terminated ({@code pg_terminate_backend} from a third connection; the application keeps running) the other
 * election takes the lock and its relay publishes what was left, and the old leader stays a standby. A real
 * second instance and a SIGKILLed leader process are {@code it.ClaimServiceCrashIT}.
 */
@QuarkusTest
class LeaderLockHandoverTest {

    @Inject
    OutboxRelay relay;
    @Inject
    Leadership leadership;
    @Inject
    Pool pool;
    @Inject
    Vertx vertx;
    @Inject
    ClaimSettings settings;
    @Inject
    ClaimMetrics metrics;
    @Inject
    OpenTelemetry openTelemetry;
    @Inject
    Tracer tracer;
    @ConfigProperty(name = "kafka.bootstrap.servers")
    String bootstrapServers;
    @Inject
    io.csiorchestrator.events.KafkaClientSecurity kafkaSecurity;
    @ConfigProperty(name = "quarkus.datasource.reactive.url")
    String reactiveUrl;
    @ConfigProperty(name = "quarkus.datasource.username")
    Optional<String> username;
    @ConfigProperty(name = "quarkus.datasource.password")
    Optional<String> password;

    final KafkaTestClient kafka = KafkaTestClient.forSharedBroker();
    OutboxRelay second;
    OutboxProducer secondProducer;
    LeaderElection secondElection;

    @BeforeEach
    void secondInstance() {
        Awaitility.await().atMost(Bus.WAIT).until(leadership::isLeader);
        secondProducer = new OutboxProducer();
        secondProducer.settings = settings;
        secondProducer.metrics = metrics;
        secondProducer.openTelemetry = openTelemetry;
        secondProducer.tracer = tracer;
        secondProducer.bootstrapServers = bootstrapServers;
        secondProducer.kafkaSecurity = kafkaSecurity; // a second replica of claim-service: the same principal
        secondProducer.start();
        second = new OutboxRelay();
        second.pool = pool;
        second.settings = settings;
        second.metrics = metrics;
        second.producer = secondProducer;
        secondElection = new LeaderElection(vertx, Leadership.connectOptions(reactiveUrl, username.orElse(null), password.orElse(null)),
                LeaderElection.LOCK_KEY, Duration.ofMillis(200), second::leadershipChanged, second::signal);
        secondElection.start();
        // The second election is connected and has tried the lock (more than once) without getting it.
        Awaitility.await().atMost(Bus.WAIT).until(() -> secondElection.backendPid() > 0);
        Awaitility.await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(5)).until(() -> !secondElection.isLeader());
    }

    @AfterEach
    void after() {
        relay.resume();
        secondElection.close();
        second.stop();
        secondProducer.onStop(null);
        kafka.close();
        // The application's election leads again (its next try after the lock was released).
        Awaitility.await().atMost(Bus.WAIT).until(leadership::isLeader);
    }

    @Test
    void onlyOneElectionHoldsTheLockAndRowsSignalledByTheOtherRelayArePublishedByTheLeaderOnNotify() {
        assertTrue(leadership.isLeader());
        assertFalse(secondElection.isLeader());
        assertTrue(relay.isLeader());
        assertFalse(second.isLeader());
        assertEquals(List.of(leadership.election().backendPid()), lockHolders(), "one holder of the advisory lock: the leader's connection");
        assertEquals(1.0, leaderGauge(), "csi_claims_leader on the leader");

        long notificationsBefore = leadership.election().notifications();
        long publishedBefore = relay.publishedCount();
        String key = "standby-" + UUID.randomUUID();
        List<String> ceIds = commitRows(key, 5);
        second.signal(); // the non-leading relay's signal is a NOTIFY to the leader

        List<ConsumerRecord<String, String>> records = awaitPublished(key, ceIds);
        assertEquals(ceIds, records.stream().map(r -> KafkaTestClient.header(r, CloudEventHeaders.CE_ID)).toList(),
                "each row once, in commit order");
        assertTrue(leadership.election().notifications() > notificationsBefore, "the leader learnt of the rows by NOTIFY");
        assertTrue(relay.publishedCount() >= publishedBefore + ceIds.size(), "published by the leader");
        assertEquals(0L, second.publishedCount(), "the standby published nothing");
        // Nothing more arrives for these rows (no second publisher).
        Awaitility.await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5))
                .until(() -> recordsWithKey(key).size() == ceIds.size());
    }

    @Test
    void whenTheLeadersLockConnectionIsTerminatedTheOtherElectionTakesTheLockAndItsRelayPublishesWhatWasLeft() {
        // The leading relay is suspended (the application keeps running) and rows are committed unpublished.
        relay.suspend();
        String key = "left-" + UUID.randomUUID();
        List<String> left = commitRows(key, 3);
        int leaderPid = leadership.election().backendPid();
        assertTrue(leaderPid > 0);
        long lossesBefore = leadership.election().losses();

        // Its lock connection is terminated from a third connection: the server releases the lock.
        assertTrue(pool.preparedQuery("SELECT pg_terminate_backend($1) AS killed").execute(Tuple.of(leaderPid))
                .await().atMost(Duration.ofSeconds(10)).iterator().next().getBoolean("killed"));
        // The old leader noticed (counted once its relay was told), and holds off one interval (5 s)
        // while the second election, trying every 200 ms, takes the lock.
        Awaitility.await().atMost(Bus.WAIT).until(() -> leadership.election().losses() > lossesBefore);
        Awaitility.await().atMost(Bus.WAIT).until(secondElection::isLeader);
        assertFalse(leadership.isLeader(), "the old leader did not take the lock back");
        assertFalse(relay.isLeader());
        assertEquals(List.of(secondElection.backendPid()), lockHolders());
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> assertEquals(0.0, leaderGauge(), "csi_claims_leader on the old leader"));

        // The new leader's recovery sweep publishes what was left, with the ce_ids it was committed with.
        List<ConsumerRecord<String, String>> records = awaitPublished(key, left);
        assertEquals(left, records.stream().map(r -> KafkaTestClient.header(r, CloudEventHeaders.CE_ID)).toList());
        assertTrue(second.publishedCount() >= left.size(), "published by the new leader");

        // The application's relay, now not leading, signals more rows: the new leader learns by NOTIFY and publishes them.
        relay.resume();
        long notificationsBefore = secondElection.notifications();
        List<String> more = commitRows(key, 2);
        relay.signal();
        List<String> all = new ArrayList<>(left);
        all.addAll(more);
        records = awaitPublished(key, all);
        assertEquals(all, records.stream().map(r -> KafkaTestClient.header(r, CloudEventHeaders.CE_ID)).toList(),
                "each row once, in commit order");
        assertTrue(secondElection.notifications() > notificationsBefore);
        assertFalse(leadership.isLeader(), "the old leader stays a standby while the new one holds the lock");
    }

    /** Commits {@code n} claim-status rows with record key {@code key} in one transaction; their ce_ids in seq order. */
    private List<String> commitRows(String key, int n) {
        List<String> ceIds = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ceIds.add(UUID.randomUUID().toString());
        }
        pool.withTransaction(c -> {
            io.smallrye.mutiny.Uni<Void> chain = io.smallrye.mutiny.Uni.createFrom().voidItem();
            for (int i = 0; i < n; i++) {
                String payload = EventCodec.encodeToString(new ClaimStatus("req-" + key + "-" + i, "ns1", key, "alloc-" + i, "node-a",
                        ClaimMode.WRITE, ClaimState.ACCEPTED, null, null, Instant.now()));
                Tuple row = Tuple.of(ceIds.get(i), Bus.topic(Topic.CLAIM_STATUS), key, payload);
                chain = chain.chain(() -> c.preparedQuery("INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, payload, created_at)"
                        + " VALUES ($1, 'io.csiorchestrator.claim.status.v1', now(), $2, $3, $4, now())").execute(row).replaceWithVoid());
            }
            return chain;
        }).await().atMost(Duration.ofSeconds(10));
        return ceIds;
    }

    /** Waits until the rows' records are on the topic and the rows are marked published; the records with {@code key}. */
    private List<ConsumerRecord<String, String>> awaitPublished(String key, List<String> ceIds) {
        Awaitility.await().atMost(Bus.WAIT).until(() -> recordsWithKey(key).size() >= ceIds.size());
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> assertEquals(0L,
                pool.preparedQuery("SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND record_key = $1")
                        .execute(Tuple.of(key)).await().atMost(Duration.ofSeconds(10)).iterator().next().getLong("n")));
        return recordsWithKey(key);
    }

    private List<ConsumerRecord<String, String>> recordsWithKey(String key) {
        return kafka.readAll(Bus.topic(Topic.CLAIM_STATUS)).stream().filter(r -> key.equals(r.key())).toList();
    }

    /** The backend pids holding the leader's advisory lock (a bigint key: classid high, objid low 32 bits). */
    private List<Integer> lockHolders() {
        List<Integer> pids = new ArrayList<>();
        pool.preparedQuery("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
                        + " AND classid::bigint = $1 AND objid::bigint = $2")
                .execute(Tuple.of(LeaderElection.LOCK_KEY >>> 32, LeaderElection.LOCK_KEY & 0xffffffffL))
                .await().atMost(Duration.ofSeconds(10)).forEach(r -> pids.add(r.getInteger("pid")));
        return pids;
    }

    /** The csi_claims_leader gauge as /q/metrics shows it. */
    static double leaderGauge() {
        String metrics = RestAssured.given().get("/q/metrics").then().statusCode(200).extract().asString();
        Matcher m = Pattern.compile("(?m)^csi_claims_leader(?:\\{[^}]*})? ([0-9.eE+-]+)").matcher(metrics);
        assertTrue(m.find(), "csi_claims_leader in /q/metrics");
        return Double.parseDouble(m.group(1));
    }
}
