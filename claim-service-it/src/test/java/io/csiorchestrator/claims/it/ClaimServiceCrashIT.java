package io.csiorchestrator.claims.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountOptions;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.MountSupport;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.EmbeddedPostgresServer;
import io.csiorchestrator.testkit.KafkaBroker;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.TcpProxy;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * claim-service as real processes: the packaged application ({@code target/quarkus-app/quarkus-run.jar}) runs in
 * its own JVM against an in-process Kafka broker and an embedded PostgreSQL (a fresh database and topic prefix per
 * test), is killed with SIGKILL and restarted, or runs twice on one database.
 *
 * <p>The outbox relay's producer ({@code kafka.bootstrap.servers}) reaches the broker only through a
 * {@link TcpProxy}: the broker has a second listener advertised at the proxy's address, so the relay's
 * reconnections go through the proxy too, and {@link TcpProxy#cut()} takes Kafka away from the relay alone. The
 * consumers (per-channel {@code bootstrap.servers}) and this test use the broker's own listener, so claims keep
 * arriving and being decided while nothing can be published.
 *
 * <p>The broker is closed as every deployment's is ({@code KafkaBroker.builder().secured(true)}: SASL_SSL, SCRAM, the
 * StandardAuthorizer, both listeners): claim-service connects as its principal {@code claim-service} with exactly its
 * ACLs from {@code KafkaAccess} on each test's prefix; the test writes as the part it plays (the scheduler, the node,
 * the registry) and reads as the super user.
 *
 * <p>Every test ends with {@link #assertEveryRowDeliveredAndNoneLeft()}: no row left unpublished, and the set of
 * ce_ids on the topics equals the set of outbox rows (a consumer that dedupes by ce_id sees every row once and
 * nothing else; a re-sent row shows up as a second record with the same ce_id).
 */
class ClaimServiceCrashIT {

    static final Duration WAIT = Duration.ofSeconds(90);
    static final String NODE = "node-a";
    static final AtomicInteger RUN = new AtomicInteger();
    /** The consumer group of claim-service's input channels. */
    static final String GROUP = "claim-service";
    /** SQL: an outbox row that is not a placement entry (see {@link #unpublishedClaimRows}). */
    static final String NOT_PLACEMENT = "topic NOT LIKE '%placement'";
    static final List<Topic> INPUTS = List.of(Topic.CLAIM_REQUESTED, Topic.MOUNT_DONE, Topic.PLUGIN_STATUS);

    static Path logDir;
    static EmbeddedPostgresServer pg;
    static TcpProxy relayKafka;
    static KafkaBroker broker;
    static KafkaTestClient kafka;
    /** The principals issued on the broker, and the prefixes each has its ACLs on. */
    static final Map<String, java.util.Set<String>> GRANTED = new java.util.HashMap<>();
    /** The producers of the parts the test plays, by principal name. */
    static final Map<String, KafkaTestClient> WRITERS = new java.util.HashMap<>();

    final List<ClaimServiceProcess> instances = new ArrayList<>();
    String database;
    DataSource db;
    String prefix;

    @BeforeAll
    static void infrastructure() throws Exception {
        logDir = Files.createDirectories(Path.of("target", "claim-service-crash-it"));
        pg = EmbeddedPostgresServer.start();
        relayKafka = TcpProxy.reserve();
        broker = KafkaBroker.builder().secured(true).advertisedListener("RELAY", relayKafka.port()).start();
        relayKafka.forwardTo("127.0.0.1", broker.listenerPort("RELAY"));
        kafka = new KafkaTestClient(broker.bootstrapServers(), broker.adminSecurity());
    }

    @AfterAll
    static void closeInfrastructure() {
        if (kafka != null) {
            kafka.close();
        }
        WRITERS.values().forEach(KafkaTestClient::close);
        WRITERS.clear();
        GRANTED.clear();
        if (broker != null) {
            broker.close();
        }
        if (relayKafka != null) {
            relayKafka.close();
        }
        if (pg != null) {
            pg.close();
        }
    }

    @BeforeEach
    void freshDatabaseAndTopics() {
        database = pg.createDatabase();
        db = pg.dataSource(database);
        prefix = "crash" + RUN.incrementAndGet() + ".";
        kafka.createTopic(prefix + Topic.NODE_COMMANDS.baseName(), 4, Map.of());
        relayKafka.restore();
    }

    @AfterEach
    void stopInstances() throws InterruptedException {
        for (ClaimServiceProcess instance : instances) {
            instance.destroy();
        }
    }

    /**
     * Finding 12 of the test audit, for real: claims are decided and committed while the relay cannot reach
     * Kafka (the rows stay unpublished), the process is killed with SIGKILL, Kafka comes back,
     * and a new process on the same database publishes every committed row with its ce_id: every claim is answered.
     */
    @Test
    void rowsCommittedButUnsentWhenTheProcessIsKilledArePublishedByTheRestartedProcess() throws Exception {
        ClaimServiceProcess first = startInstance("single");
        await().atMost(WAIT).until(first::leads);
        String vol = warmVolume(first, "crash");

        relayKafka.cut();
        List<ClaimRequested> claims = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            claims.add(claim(vol, "alloc-" + i));
        }
        claims.forEach(this::send);
        // Decided and committed, each with its accepted status and mount command, none published (the relay
        // cannot reach the broker).
        await().atMost(WAIT).until(() -> unpublishedClaimRows() == 2 * claims.size());

        assertEquals(137, first.kill9(), "killed by SIGKILL");
        assertEquals(2 * claims.size(), unpublishedClaimRows(), "the kill left the rows committed and unpublished");

        relayKafka.restore();
        ClaimServiceProcess restarted = startInstance("single-restarted");
        await().atMost(WAIT).until(restarted::leads);
        awaitAnswered(claims);
        assertEveryRowDeliveredAndNoneLeft();
        assertTrue(restarted.log().contains("outbox recovery sweep"), "the restarted process ran its recovery sweep");
    }

    /**
     * Issue 17's batch path under a real crash: five claims arrive in one poll and are decided in one transaction; the
     * test's own transaction inserted the third one's request id first, so the shared transaction stops there, with the
     * first two claims written but not committed, and the process is killed with SIGKILL while it waits. Nothing of the
     * poll is committed (no request id, no claim, no outbox row of the five); a new process reads the poll again and
     * answers each request exactly once, every row delivered once.
     */
    @Test
    void aProcessKilledInTheMiddleOfAPollsTransactionCommitsNoneOfItAndTheNextAnswersEachRequestOnce() throws Exception {
        ClaimServiceProcess first = startInstance("batch");
        await().atMost(WAIT).until(first::leads);
        String vol = warmVolume(first, "batch");
        long rowsBefore = outboxRows();

        List<ClaimRequested> claims = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            claims.add(claim(vol, "alloc-" + i));
        }
        String ids = claims.stream().map(c -> "'" + c.requestId() + "'").collect(java.util.stream.Collectors.joining(","));
        try (Connection held = db.getConnection()) {
            held.setAutoCommit(false);
            try (PreparedStatement insert = held.prepareStatement(
                    "INSERT INTO handled_requests (request_id, handled_at) VALUES (?, now())")) {
                insert.setString(1, claims.get(2).requestId());
                insert.executeUpdate();
            }
            sendTogether(claims);
            // The five share one transaction, which waits at the third one's request id.
            String together = "claim-requested batch of 5 (claim-requested " + claims.get(0).requestId()
                    + " .. claim-requested " + claims.get(4).requestId() + "): one transaction";
            await().atMost(WAIT).until(() -> first.log().contains(together));
            await().atMost(WAIT).until(() -> backendsWaitingToInsertARequestId() == 1);
            assertEquals(137, first.kill9(), "killed by SIGKILL");
            held.rollback();
        }
        assertEquals(0, count("SELECT count(*) FROM handled_requests WHERE request_id IN (" + ids + ")"),
                "no request id of the poll committed");
        assertEquals(0, count("SELECT count(*) FROM claims WHERE request_id IN (" + ids + ")"), "no claim of the poll committed");
        assertEquals(rowsBefore, outboxRows(), "no outbox row of the poll committed");

        ClaimServiceProcess restarted = startInstance("batch-restarted");
        await().atMost(WAIT).until(restarted::leads);
        awaitAnswered(claims);
        assertEveryRowDeliveredAndNoneLeft();
        assertEquals(5, count("SELECT count(*) FROM claims WHERE request_id IN (" + ids + ")"), "one claim per request");
        Map<String, Integer> answers = new TreeMap<>();
        for (ConsumerRecord<String, String> r : kafka.readAll(topic(Topic.CLAIM_STATUS))) {
            ClaimStatus status = EventCodec.decode(ClaimStatus.class, r.value());
            answers.merge(status.requestId(), 1, Integer::sum);
        }
        for (ClaimRequested c : claims) {
            assertEquals(1, answers.getOrDefault(c.requestId(), 0), "request of " + c.allocationId() + " answered once");
        }
    }

    /**
     * Findings 14 and 19 of the test audit, for real: two packaged instances (own JVMs, own HTTP ports, own
     * configuration) on one database and broker; one leads. Claims are committed (by either instance) while the
     * leader's relay cannot reach Kafka, the leader's process is killed with SIGKILL, and the other instance takes
     * the advisory lock, publishes every row left behind, and answers the claims sent after the kill alone.
     */
    @Test
    void whenTheLeaderProcessIsKilledTheOtherInstanceTakesOverTheRelay() throws Exception {
        ClaimServiceProcess leader = startInstance("leader");
        await().atMost(WAIT).until(leader::leads);
        ClaimServiceProcess standby = startInstance("standby");
        await().atMost(WAIT).until(standby::isStandby);
        assertTrue(leader.leads(), "the first instance still leads");
        assertEquals(1, lockHolders(), "one holder of the advisory lock");
        String vol = schedulableVolume(standby, "failover");

        relayKafka.cut();
        List<ClaimRequested> claims = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            claims.add(claim(vol, "alloc-" + i));
        }
        claims.forEach(this::send);
        await().atMost(WAIT).until(() -> unpublishedClaimRows() == 2 * claims.size());

        assertEquals(137, leader.kill9(), "killed by SIGKILL");
        relayKafka.restore();
        await().atMost(WAIT).until(standby::leads);
        assertEquals(1, lockHolders(), "the survivor holds the advisory lock");
        awaitAnswered(claims);
        assertEveryRowDeliveredAndNoneLeft();

        // The survivor alone consumes and publishes now (the dead instance's partitions moved to it).
        List<ClaimRequested> later = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            later.add(claim(vol, "alloc-later-" + i));
        }
        later.forEach(this::send);
        awaitAnswered(later);
        assertEveryRowDeliveredAndNoneLeft();
        assertTrue(standby.log().contains("leadership acquired"), "the survivor logged its takeover");
    }

    /**
     * Publish after commit with two replicas (issue 36 item 2): each sends what it committed, and a volume's claim-status
     * records keep their commit order although one replica decided its claim and the other took its node's answer. Kafka
     * is away from both replicas' producers (every row is committed, none delivered: each writer holds its own); the
     * node's answers arrive and the replica that takes them commits each READY behind the ACCEPTED of the same volume;
     * where the other replica wrote that ACCEPTED, the READY is left to the relay. The leader is killed with SIGKILL
     * between its commits and its sends, Kafka comes back: the survivor's producer delivers its own rows, its relay the
     * dead writer's and the ones left to it, each after the rows before it on its volume. Every row is delivered once
     * and every volume's statuses in commit order ({@link #assertEveryRowDeliveredAndNoneLeft}).
     */
    @Test
    void twoReplicasEachSendWhatTheyCommittedAndEachVolumeKeepsItsOrderThroughAKillBetweenCommitAndSend() throws Exception {
        ClaimServiceProcess leader = startInstance("replica-a");
        await().atMost(WAIT).until(leader::leads);
        ClaimServiceProcess other = startInstance("replica-b");
        await().atMost(WAIT).until(other::isStandby);
        // both consume: each owns some of claim-requested's partitions
        await().atMost(WAIT).until(() -> !partitionsOf(prefix + "replica-a", Topic.CLAIM_REQUESTED).isEmpty()
                && !partitionsOf(prefix + "replica-b", Topic.CLAIM_REQUESTED).isEmpty());
        List<String> volumes = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            volumes.add(warmVolume(other, "two-" + i));
        }

        relayKafka.cut();
        List<ClaimRequested> claims = new ArrayList<>();
        for (String vol : volumes) {
            claims.add(claim(vol, "alloc-" + vol));
        }
        claims.forEach(this::send);
        await().atMost(WAIT).until(() -> unpublishedClaimRows() == 2 * claims.size());
        for (ClaimRequested c : claims) {
            NodeCommand command = EventCodec.decode(NodeCommand.class, payloadOf(c.allocationId(), Topic.NODE_COMMANDS));
            send(new MountDone(command.commandId(), command.nodeId(), command.kind(), command.namespace(), command.volumeId(),
                    command.allocationId(), true, null, null, Map.of(), "/var/lib/csi/" + command.volumeId(), null, Instant.now()));
        }
        await().atMost(WAIT).until(() -> unpublishedClaimRows() == 3 * claims.size());

        // Who wrote what: [writer of ACCEPTED, writer of READY, READY direct] per volume.
        Map<String, List<Object>> writers = new TreeMap<>();
        query("SELECT record_key, writer, direct, payload LIKE '%\"ready\"%' FROM outbox WHERE topic = '" + topic(Topic.CLAIM_STATUS)
                + "' AND published_at IS NULL ORDER BY seq", r -> {
                    List<Object> w = writers.computeIfAbsent(r.getString(1), k -> new ArrayList<>(List.of(0L, 0L, true)));
                    w.set(r.getBoolean(4) ? 1 : 0, r.getLong(2));
                    if (r.getBoolean(4)) {
                        w.set(2, r.getBoolean(3));
                    }
                });
        assertEquals(claims.size(), writers.size(), writers.toString());
        List<String> crossed = writers.entrySet().stream().filter(e -> !e.getValue().get(0).equals(e.getValue().get(1)))
                .map(Map.Entry::getKey).toList();
        assertTrue(!crossed.isEmpty() && crossed.size() < claims.size(),
                "some volumes decided by one replica and answered by the other, some by one replica alone: " + writers);
        for (Map.Entry<String, List<Object>> e : writers.entrySet()) {
            assertEquals(!crossed.contains(e.getKey()), e.getValue().get(2),
                    e.getKey() + ": READY is its writer's own unless another writer's ACCEPTED waits before it: " + e.getValue());
        }

        assertEquals(137, leader.kill9(), "killed by SIGKILL between its commits and its sends");
        relayKafka.restore();
        await().atMost(WAIT).until(other::leads);
        awaitAnswered(claims);
        assertEveryRowDeliveredAndNoneLeft();
    }

    /** The payload of the one row of {@code allocationId} on {@code topic}. */
    private String payloadOf(String allocationId, Topic topic) throws SQLException {
        List<String> payloads = new ArrayList<>();
        query("SELECT payload FROM outbox WHERE topic = '" + topic(topic) + "' AND payload LIKE '%\"" + allocationId + "\"%'",
                r -> payloads.add(r.getString(1)));
        assertEquals(1, payloads.size(), payloads.toString());
        return payloads.get(0);
    }

    /**
     * Issue 16, wanted 1 (a restarted instance gets its partitions back): one instance, named {@code claims-0}, owns
     * every partition of its three input topics as the static group members {@code claims-0.<channel>}; it is
     * killed with SIGKILL, a claim is sent while it is down, and the process restarted under the same name rejoins
     * as the same static members, owns every partition again, and answers the claim.
     */
    @Test
    void anInstanceKilledAndRestartedUnderItsNameGetsItsPartitionsBackAndAnswersAClaimSentWhileItWasDown() throws Exception {
        String name = prefix + "claims-0";
        ClaimServiceProcess first = startInstance("static", name);
        await().atMost(WAIT).until(first::leads);
        String vol = schedulableVolume(first, "static");
        ClaimRequested warmUp = claim(vol, "alloc-warm");
        send(warmUp);
        awaitAnswered(List.of(warmUp));
        for (Topic input : INPUTS) {
            await().atMost(WAIT).until(() -> ownsEveryPartition(name, input));
        }

        assertEquals(137, first.kill9(), "killed by SIGKILL");
        long killed = System.nanoTime();
        ClaimRequested meanwhile = claim(vol, "alloc-meanwhile");
        send(meanwhile);

        ClaimServiceProcess restarted = startInstance("static-restarted", name);
        long started = System.nanoTime();
        awaitAnswered(List.of(meanwhile));
        System.out.printf("[failover] restart under the same name: claim sent while down answered %d ms after the"
                + " restart began (%d ms after the kill)%n", (System.nanoTime() - started) / 1_000_000,
                (System.nanoTime() - killed) / 1_000_000);
        // The answer shows claim-requested's member back; each channel is a consumer of its own, and when the restart
        // took longer than the session timeout (6 s) the broker expired the old members, so mount-done's and
        // plugin-status' may join a moment after it: waited for, each with the restarted name and every partition.
        for (Topic input : INPUTS) {
            await().atMost(WAIT).untilAsserted(() -> assertTrue(ownsEveryPartition(name, input),
                    "the restarted " + name + " owns every partition of " + input + ": " + group()));
        }
        assertTrue(restarted.isAlive(), "the restarted instance runs");
        assertEveryRowDeliveredAndNoneLeft();
    }

    /**
     * Issue 16, wanted 1 (a surviving replica takes over): two instances share the partitions of the input topics
     * (each owns some of {@code claim-requested}); one is killed with SIGKILL and not restarted; the broker
     * expires its members and the survivor owns every partition of every input topic (read from the group's
     * description, {@code Admin.describeConsumerGroups}), and answers claims on every partition.
     */
    @Test
    void whenOneOfTwoInstancesIsKilledTheOtherConsumesEveryPartition() throws Exception {
        String victimName = prefix + "claims-a";
        String survivorName = prefix + "claims-b";
        ClaimServiceProcess victim = startInstance("group-a", victimName);
        await().atMost(WAIT).until(victim::leads);
        ClaimServiceProcess survivor = startInstance("group-b", survivorName);
        await().atMost(WAIT).until(survivor::isStandby);
        await().atMost(WAIT).untilAsserted(() -> assertTrue(!partitionsOf(victimName, Topic.CLAIM_REQUESTED).isEmpty()
                && !partitionsOf(survivorName, Topic.CLAIM_REQUESTED).isEmpty(), "each owns some partitions: " + group()));

        assertEquals(137, victim.kill9(), "killed by SIGKILL");
        long killed = System.nanoTime();
        for (Topic input : INPUTS) {
            await().atMost(WAIT).untilAsserted(() -> assertTrue(ownsEveryPartition(survivorName, input),
                    survivorName + " owns every partition of " + input + ": " + group()));
        }
        System.out.printf("[failover] one of two instances killed: the survivor owned every partition %d ms after the kill%n",
                (System.nanoTime() - killed) / 1_000_000);

        // Claims on many volumes (keys), so on every partition of claim-requested, are answered by the survivor.
        List<ClaimRequested> claims = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            claims.add(claim(schedulableVolume(survivor, "survivor" + i), "alloc-" + i));
        }
        claims.forEach(this::send);
        awaitAnswered(claims);
        assertEveryRowDeliveredAndNoneLeft();
    }

    /**
     * Coverage gap 1 of the test audit: the relay's failure paths, each ending with every row published once per
     * ce_id and none left. (1) A row committed with no signal and no NOTIFY (what a standby whose NOTIFY to the
     * leader failed leaves behind) is published by the leader's safety sweep. (2) A send failing mid-batch: the
     * broker refuses node-commands records (max.message.bytes 64: MESSAGE_TOO_LARGE), so the accepted status of a
     * claim is published and its mount command, next in the same batch, is not; a second claim's rows wait behind
     * it; once the broker takes the records again, the safety sweep alone (no new commit signals it) publishes them. (3) A drain that throws: marking a sent batch
     * published fails once (a trigger raises), the rows stay unpublished although the broker has them, and the
     * sweep sends them again with the same ce_ids.
     */
    @Test
    void theSafetySweepRepublishesRowsWhosePublishFailedMidBatchOrWhoseMarkFailed() throws Exception {
        ClaimServiceProcess instance = startInstance("failures");
        await().atMost(WAIT).until(instance::leads);
        String vol = schedulableVolume(instance, "failures");

        // (1) No signal, no NOTIFY: only the safety sweep finds this row.
        String orphan = UUID.randomUUID().toString();
        execute("INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, payload, created_at)"
                + " VALUES ('" + orphan + "', 'io.csiorchestrator.claim.status.v1', now(), '" + topic(Topic.CLAIM_STATUS)
                + "', '" + vol + "', '" + EventCodec.encodeToString(new ClaimStatus("req-orphan", "ns1", vol, "alloc-orphan",
                NODE, ClaimMode.WRITE, ClaimState.ACCEPTED, null, null, Instant.now())) + "', now())");
        await().atMost(WAIT).until(() -> unpublishedRows() == 0);
        assertEquals(1, deliveries(Topic.CLAIM_STATUS, orphan));

        // (2) node-commands refuses the records (max.message.bytes below a node command's size: MESSAGE_TOO_LARGE,
        // not retried by the producer): the batch [accepted status, mount command] breaks after its first row.
        setTopicConfig(topic(Topic.NODE_COMMANDS), "max.message.bytes", "64");
        ClaimRequested first = claim(vol, "alloc-1");
        send(first);
        await().atMost(WAIT).until(() -> instance.log().contains("outbox publish failed after"));
        Map<String, Boolean> firstRows = rowsOf(first.allocationId());
        assertEquals(2, firstRows.size());
        assertEquals(Boolean.TRUE, firstRows.get(topic(Topic.CLAIM_STATUS)), "the status before the failed send is published");
        assertEquals(Boolean.FALSE, firstRows.get(topic(Topic.NODE_COMMANDS)), "the failed mount command is not");
        ClaimRequested second = claim(vol, "alloc-2");
        send(second);
        await().atMost(WAIT).until(() -> rowsOf(second.allocationId()).size() == 2);
        // The second claim's command waits behind the first's (same topic and key: the relay's, in order); its status,
        // on another topic, is not held back by a refused node command (publish after commit, issue 36 item 2).
        await().atMost(WAIT).until(() -> unpublishedClaimRows() == 2);
        assertEquals(Map.of(topic(Topic.CLAIM_STATUS), true, topic(Topic.NODE_COMMANDS), false), rowsOf(second.allocationId()));
        setTopicConfig(topic(Topic.NODE_COMMANDS), "max.message.bytes", null);
        await().atMost(WAIT).until(() -> unpublishedRows() == 0);
        awaitAnswered(List.of(first, second));

        // (3) The broker acks a claim's rows, marking them published fails once: the process that sent them marks them
        // again (issue 36 item 2: its own rows), nothing is sent twice.
        ClaimRequested third = claim(vol, "alloc-3");
        failFirstMarkOf("third", third.allocationId());
        send(third);
        await().atMost(WAIT).until(() -> instance.log().contains("delivered outbox rows published failed"));
        await().atMost(WAIT).until(() -> unpublishedRows() == 0);
        awaitAnswered(List.of(third));
        assertEquals(1, deliveries(Topic.CLAIM_STATUS, ceIdOf(third.allocationId(), Topic.CLAIM_STATUS)),
                "sent once, its mark retried");

        // (4) The relay acks a row left to it, marking it published fails once: the drain throws, the sweep sends it again.
        String orphanAllocation = "alloc-orphan-4";
        failFirstMarkOf("orphan", orphanAllocation);
        String orphan4 = UUID.randomUUID().toString();
        execute("INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, payload, created_at)"
                + " VALUES ('" + orphan4 + "', 'io.csiorchestrator.claim.status.v1', now(), '" + topic(Topic.CLAIM_STATUS)
                + "', '" + vol + "', '" + EventCodec.encodeToString(new ClaimStatus("req-orphan-4", "ns1", vol, orphanAllocation,
                NODE, ClaimMode.WRITE, ClaimState.ACCEPTED, null, null, Instant.now())) + "', now())");
        await().atMost(WAIT).until(() -> instance.log().contains("outbox drain failed"));
        await().atMost(WAIT).until(() -> unpublishedRows() == 0);
        assertEquals(2, deliveries(Topic.CLAIM_STATUS, orphan4),
                "sent, not marked (the drain threw), sent again by the sweep: two records, one ce_id");

        assertEveryRowDeliveredAndNoneLeft();
    }

    // ------------------------------------------------------------------------------------------------ helpers

    /** Makes the first UPDATE that marks a row of {@code allocationId} published fail (a trigger named by {@code name}). */
    private void failFirstMarkOf(String name, String allocationId) throws SQLException {
        execute("CREATE SEQUENCE test_mark_failures_" + name);
        execute("CREATE FUNCTION test_fail_first_mark_" + name + "() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                + " IF OLD.published_at IS NULL AND NEW.published_at IS NOT NULL"
                + "    AND NEW.payload LIKE '%\"" + allocationId + "\"%' THEN"
                + "  IF nextval('test_mark_failures_" + name + "') = 1 THEN"
                + "   RAISE EXCEPTION 'test: marking outbox row % published fails once', NEW.ce_id;"
                + "  END IF;"
                + " END IF;"
                + " RETURN NEW; END $$");
        execute("CREATE TRIGGER test_fail_first_mark_" + name + " BEFORE UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION test_fail_first_mark_"
                + name + "()");
    }

    /** Starts an instance named {@code name} (its log file, and its {@code CSI_INSTANCE_NAME}). */
    private ClaimServiceProcess startInstance(String name) {
        return startInstance(name, prefix + name);
    }

    /**
     * Starts an instance logging to {@code <prefix><name>.log} whose consumers join the group as static members
     * {@code <instanceName>.<channel>} ({@code CSI_INSTANCE_NAME}); the consumer group settings are the packaged ones.
     */
    private ClaimServiceProcess startInstance(String name, String instanceName) {
        Map<String, String> env = Map.of(
                "CSI_INSTANCE_NAME", instanceName,
                "QUARKUS_DATASOURCE_REACTIVE_URL", pg.reactiveUrl(database),
                "QUARKUS_DATASOURCE_USERNAME", pg.username(),
                "QUARKUS_DATASOURCE_PASSWORD", pg.password());
        Map<String, String> props = new LinkedHashMap<>();
        props.put("csi.topics.prefix", prefix);
        // The relay's producer (and the topic admin) through the proxy; the consumers straight to the broker.
        props.put("kafka.bootstrap.servers", "127.0.0.1:" + relayKafka.port());
        for (String channel : List.of("claim-requested", "mount-done", "node-reports")) {
            props.put("mp.messaging.incoming." + channel + ".bootstrap.servers", broker.bootstrapServers());
        }
        // its own principal on the closed broker, with its ACLs on this test's prefix
        io.csiorchestrator.events.KafkaClientSecurity security = security(io.csiorchestrator.events.KafkaAccess.Principal.claimService());
        props.put(io.csiorchestrator.events.KafkaClientSecurity.PROTOCOL, "SASL_SSL");
        props.put(io.csiorchestrator.events.KafkaClientSecurity.USERNAME, security.username().orElseThrow());
        props.put(io.csiorchestrator.events.KafkaClientSecurity.PASSWORD_FILE,
                broker.passwordFileOf(security.username().orElseThrow()).toString());
        props.put(io.csiorchestrator.events.KafkaClientSecurity.TRUSTSTORE, broker.truststore().toString());
        props.put("csi.claims.outbox.send-timeout", "2s");
        props.put("csi.claims.outbox.sweep-interval", "1s");
        props.put("csi.claims.leader.retry-interval", "1s");
        // the line that says which records shared a transaction
        props.put("quarkus.log.category.\"io.csiorchestrator.claims.messaging.RecordBatches\".level", "DEBUG");
        ClaimServiceProcess instance = ClaimServiceProcess.start(prefix + name, logDir, env, props);
        instances.add(instance);
        return instance;
    }

    /**
     * {@code principal}'s client settings on the closed broker, with its {@code KafkaAccess} ACLs on this test's prefix
     * (issued on first use; a later prefix only adds its ACLs, the password stays).
     */
    private io.csiorchestrator.events.KafkaClientSecurity security(io.csiorchestrator.events.KafkaAccess.Principal principal) {
        io.csiorchestrator.events.TopicCatalog topics = new io.csiorchestrator.events.TopicCatalog(prefix);
        java.util.Set<String> prefixes = GRANTED.get(principal.name());
        if (prefixes == null) {
            broker.issue(principal, topics);
            GRANTED.put(principal.name(), new java.util.HashSet<>(List.of(prefix)));
        } else if (prefixes.add(prefix)) {
            try (Admin admin = broker.admin()) {
                new io.csiorchestrator.localinfra.KafkaUsers(admin).grant(principal, topics);
            }
        }
        return io.csiorchestrator.events.KafkaClientSecurity.scram(principal.name(), broker.passwordFileOf(principal.name()),
                broker.truststore());
    }

    /** A producer as {@code principal} (the part the test plays), with its ACLs on this test's prefix. */
    private KafkaTestClient writer(io.csiorchestrator.events.KafkaAccess.Principal principal) {
        io.csiorchestrator.events.KafkaClientSecurity security = security(principal);
        return WRITERS.computeIfAbsent(principal.name(), n -> new KafkaTestClient(broker.bootstrapServers(), security));
    }

    private String topic(Topic topic) {
        return prefix + topic.baseName();
    }

    private void send(ContractEvent event) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(event.eventType(), "/test").writeTo(headers);
        Map<String, String> h = new LinkedHashMap<>();
        headers.forEach(header -> h.put(header.key(), new String(header.value(), StandardCharsets.UTF_8)));
        String value = EventCodec.encodeToString(event);
        io.csiorchestrator.events.identity.IdentityKey signer = io.csiorchestrator.testkit.TestIdentities.signerOf(event);
        writer(io.csiorchestrator.testkit.TestIdentities.writerOf(event)).send(topic(event.eventType().topic()), event.recordKey(), value,
                signer == null ? h : io.csiorchestrator.testkit.TestIdentities.signed(signer, event.recordKey(), value, h));
    }

    /**
     * A {@link #schedulableVolume} with one claim through while Kafka is there, and every row of it published (its mount
     * command goes out in the same drain as the answer, but to a topic the relay's producer has no metadata for yet: cut
     * or killed before that send ends, it would stay unpublished and be counted with a test's own rows).
     */
    private String warmVolume(ClaimServiceProcess via, String name) throws SQLException {
        String vol = schedulableVolume(via, name);
        ClaimRequested warmUp = claim(vol, "alloc-warm");
        send(warmUp);
        awaitAnswered(List.of(warmUp));
        await().atMost(WAIT).until(() -> unpublishedRows() == 0);
        return vol;
    }

    /** Sends {@code claims} (one volume: one partition) in one produce request, so one poll reads them together. */
    private void sendTogether(List<ClaimRequested> claims) {
        List<org.apache.kafka.clients.producer.ProducerRecord<String, String>> records = new ArrayList<>();
        for (ClaimRequested event : claims) {
            RecordHeaders headers = new RecordHeaders();
            CloudEventHeaders.create(event.eventType(), "/test").writeTo(headers);
            Map<String, String> h = new LinkedHashMap<>();
            headers.forEach(header -> h.put(header.key(), new String(header.value(), StandardCharsets.UTF_8)));
            String value = EventCodec.encodeToString(event);
            Map<String, String> signed = io.csiorchestrator.testkit.TestIdentities.signed(io.csiorchestrator.testkit.TestIdentities.signerOf(event),
                    event.recordKey(), value, h);
            RecordHeaders out = new RecordHeaders();
            signed.forEach((k, v) -> out.add(k, v.getBytes(StandardCharsets.UTF_8)));
            records.add(new org.apache.kafka.clients.producer.ProducerRecord<>(topic(Topic.CLAIM_REQUESTED), null,
                    event.recordKey(), value, out));
        }
        writer(io.csiorchestrator.testkit.TestIdentities.writerOf(claims.get(0))).sendTogether(records);
    }

    /** claim-service's connections waiting for a lock in an INSERT INTO handled_requests. */
    private long backendsWaitingToInsertARequestId() throws SQLException {
        return count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
                + " AND query ILIKE 'insert into handled_requests%'");
    }

    private long outboxRows() throws SQLException {
        return count("SELECT count(*) FROM outbox WHERE " + NOT_PLACEMENT);
    }

    private long count(String sql) throws SQLException {
        long[] n = {0};
        query(sql, r -> n[0] = r.getLong(1));
        return n[0];
    }

    private static ClaimRequested claim(String vol, String alloc) {
        return new ClaimRequested(UUID.randomUUID().toString(), "ns1", vol, alloc, NODE, ClaimMode.WRITE,
                AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM, false, MountOptions.NONE, null,
                MountSupport.ALL, Instant.now());
    }

    /** A multi-writer volume of a node-only plugin healthy on {@link #NODE}, registered through {@code via}, once schedulable. */
    private String schedulableVolume(ClaimServiceProcess via, String name) {
        String vol = name + "-" + UUID.randomUUID().toString().substring(0, 8);
        String plugin = "plug-" + vol;
        HttpResponse<String> created = via.postJson("/v1/volumes", "{\"volumes\":[{\"id\":\"" + vol + "\",\"namespace\":\"ns1\","
                + "\"externalId\":\"ext-" + vol + "\",\"pluginId\":\"" + plugin + "\",\"accessMode\":\""
                + AccessMode.MULTI_NODE_MULTI_WRITER.wire() + "\",\"attachmentMode\":\"file-system\","
                + "\"mountOptions\":{\"fsType\":\"ext4\"}}]}");
        assertNotNull(created, via + " answers");
        assertEquals(201, created.statusCode(), created.body());
        send(new PluginStatus(plugin, "test.csi", "1.0", false, 0, 0, 1, 1, List.of(),
                List.of(new PluginStatus.NodeInstance(NODE, "ext-" + NODE, 10L, Map.of(), true, "ok", Instant.now())), Instant.now()));
        await().atMost(WAIT).until(() -> {
            HttpResponse<String> r = via.get("/v1/volumes/ns1/" + vol);
            return r != null && r.statusCode() == 200 && r.body().replace(" ", "").contains("\"schedulable\":true");
        });
        return vol;
    }

    /** Waits until every claim has its ACCEPTED answer on claim-status. */
    private void awaitAnswered(List<ClaimRequested> claims) {
        await().atMost(WAIT).untilAsserted(() -> {
            Set<String> accepted = new TreeSet<>();
            for (ConsumerRecord<String, String> r : kafka.readAll(topic(Topic.CLAIM_STATUS))) {
                ClaimStatus s = EventCodec.decode(ClaimStatus.class, r.value());
                if (s.state() == ClaimState.ACCEPTED) {
                    accepted.add(s.requestId());
                }
            }
            for (ClaimRequested c : claims) {
                assertTrue(accepted.contains(c.requestId()), "claim " + c.allocationId() + " answered");
            }
        });
    }

    /**
     * No row unpublished, and the ce_ids on the rows' topics are exactly the rows' ce_ids, each on its row's
     * topic (what a consumer deduping by ce_id sees: every row, once, nothing else).
     */
    private void assertEveryRowDeliveredAndNoneLeft() {
        // Awaited as a whole: the placement publisher may write (and publish) a row of its own between reading the
        // table and reading the topics, at its own moment after the claims' last change; once it is quiet, the two
        // must be equal, and a record without its row (or a row never delivered) keeps them apart until WAIT fails.
        await().atMost(WAIT).untilAsserted(() -> {
            assertEquals(0, unpublishedRows(), "unpublished outbox rows");
            Map<String, String> rows = new TreeMap<>();
            query("SELECT ce_id, topic FROM outbox", r -> rows.put(r.getString(1), r.getString(2)));
            Map<String, String> delivered = new TreeMap<>();
            for (String topic : new TreeSet<>(rows.values())) {
                for (ConsumerRecord<String, String> r : kafka.readAll(topic)) {
                    delivered.put(KafkaTestClient.header(r, CloudEventHeaders.CE_ID), topic);
                }
            }
            assertEquals(rows, delivered, "ce_id -> topic of every outbox row = of every record on those topics");
            assertEachVolumesStatusesInCommitOrder();
        });
    }

    /**
     * On claim-status, each volume's records arrive in the order their rows were committed (outbox seq; a volume's rows
     * are written under its lock): what a consumer deduping by ce_id sees, a re-sent record ignored.
     */
    private void assertEachVolumesStatusesInCommitOrder() throws SQLException {
        Map<String, Long> seqOf = new HashMap<>();
        query("SELECT ce_id, seq FROM outbox WHERE topic = '" + topic(Topic.CLAIM_STATUS) + "'", r -> seqOf.put(r.getString(1), r.getLong(2)));
        Map<String, Long> lastSeq = new HashMap<>();
        Set<String> seen = new java.util.HashSet<>();
        for (ConsumerRecord<String, String> r : kafka.readAll(topic(Topic.CLAIM_STATUS))) {
            String ceId = KafkaTestClient.header(r, CloudEventHeaders.CE_ID);
            Long seq = seqOf.get(ceId);
            if (seq == null || !seen.add(ceId)) {
                continue;
            }
            Long before = lastSeq.put(r.key(), seq);
            assertTrue(before == null || before < seq, "volume " + r.key() + ": row " + seq + " arrived after row " + before
                    + " although committed before it");
        }
    }

    /**
     * The unpublished rows of the claim flow: the placement publisher (issue 34) writes rows of its own through the
     * outbox whenever a claim changes a node's count, coalesced and at its own moment; the exact counts here are of the
     * claims' rows. {@link #assertEveryRowDeliveredAndNoneLeft} still checks every row, placement's included.
     */
    private long unpublishedClaimRows() throws SQLException {
        return count("SELECT count(*) FROM outbox WHERE published_at IS NULL AND " + NOT_PLACEMENT);
    }

    private long unpublishedRows() throws SQLException {
        long[] n = {0};
        query("SELECT count(*) FROM outbox WHERE published_at IS NULL", r -> n[0] = r.getLong(1));
        return n[0];
    }

    /** topic -> published, of the rows of one allocation's claim. */
    private Map<String, Boolean> rowsOf(String allocationId) throws SQLException {
        Map<String, Boolean> rows = new HashMap<>();
        query("SELECT topic, published_at IS NOT NULL FROM outbox WHERE payload LIKE '%\"" + allocationId + "\"%'",
                r -> rows.put(r.getString(1), r.getBoolean(2)));
        return rows;
    }

    private String ceIdOf(String allocationId, Topic topic) throws SQLException {
        List<String> ids = new ArrayList<>();
        query("SELECT ce_id FROM outbox WHERE topic = '" + topic(topic) + "' AND payload LIKE '%\"" + allocationId + "\"%'",
                r -> ids.add(r.getString(1)));
        assertEquals(1, ids.size(), ids.toString());
        return ids.get(0);
    }

    /** How many records of {@code topic} carry {@code ceId}. */
    private long deliveries(Topic topic, String ceId) {
        return kafka.readAll(topic(topic)).stream().filter(r -> ceId.equals(KafkaTestClient.header(r, CloudEventHeaders.CE_ID))).count();
    }

    /** The channel that reads {@code input}: plugin-status, node-state and node-events share node-reports (issue 36). */
    private static String channelOf(Topic input) {
        return switch (input) {
            case PLUGIN_STATUS, NODE_STATE, NODE_EVENTS -> "node-reports";
            default -> input.baseName();
        };
    }

    /**
     * Whether the static member {@code <instanceName>.<channel of input>} owns every partition of {@code input} (so no
     * other member owns any: a group assigns each partition to one member).
     */
    private boolean ownsEveryPartition(String instanceName, Topic input) throws Exception {
        Set<Integer> all = new TreeSet<>();
        try (Admin admin = broker.admin()) {
            admin.describeTopics(List.of(topic(input))).allTopicNames().get(30, TimeUnit.SECONDS).get(topic(input))
                    .partitions().forEach(p -> all.add(p.partition()));
        }
        return !all.isEmpty() && all.equals(partitionsOf(instanceName, input));
    }

    /**
     * The partitions of {@code input} assigned to the static member {@code <instanceName>.<channel>} of the group
     * {@code claim-service}, as the broker describes the group.
     */
    private Set<Integer> partitionsOf(String instanceName, Topic input) throws Exception {
        String memberId = instanceName + "." + channelOf(input);
        Set<Integer> partitions = new TreeSet<>();
        try (Admin admin = broker.admin()) {
            ConsumerGroupDescription group = admin.describeConsumerGroups(List.of(GROUP)).all().get(30, TimeUnit.SECONDS).get(GROUP);
            for (MemberDescription member : group.members()) {
                if (memberId.equals(member.groupInstanceId().orElse(null))) {
                    member.assignment().topicPartitions().stream().filter(tp -> tp.topic().equals(topic(input)))
                            .forEach(tp -> partitions.add(tp.partition()));
                }
            }
        }
        return partitions;
    }

    /** The group as the broker describes it: state, and each member's instance id and partitions of this test's topics. */
    private String group() throws Exception {
        try (Admin admin = broker.admin()) {
            ConsumerGroupDescription group = admin.describeConsumerGroups(List.of(GROUP)).all().get(30, TimeUnit.SECONDS).get(GROUP);
            StringBuilder text = new StringBuilder(String.valueOf(group.groupState()));
            for (MemberDescription member : group.members()) {
                text.append("\n  ").append(member.groupInstanceId().orElse(member.consumerId())).append(' ')
                        .append(member.assignment().topicPartitions().stream().filter(tp -> tp.topic().startsWith(prefix)).toList());
            }
            return text.toString();
        }
    }

    /** How many connections hold the leader's advisory lock in this test's database. */
    private long lockHolders() throws SQLException {
        long[] n = {0};
        query("SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE l.locktype = 'advisory'"
                + " AND l.granted AND d.datname = current_database() AND l.classid = 1668508003 AND l.objid = 1818323309",
                r -> n[0] = r.getLong(1));
        return n[0];
    }

    /** Sets a topic config ({@code null}: back to the broker's default). */
    private void setTopicConfig(String topic, String key, String value) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        AlterConfigOp op = value == null
                ? new AlterConfigOp(new ConfigEntry(key, ""), AlterConfigOp.OpType.DELETE)
                : new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
        try (Admin admin = broker.admin()) {
            admin.incrementalAlterConfigs(Map.of(resource, List.of(op))).all().get(30, TimeUnit.SECONDS);
        }
    }

    private interface RowHandler {
        void accept(ResultSet row) throws SQLException;
    }

    private void query(String sql, RowHandler handler) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement(sql); ResultSet r = s.executeQuery()) {
            while (r.next()) {
                handler.accept(r);
            }
        }
    }

    private void execute(String sql) throws SQLException {
        try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }
}
