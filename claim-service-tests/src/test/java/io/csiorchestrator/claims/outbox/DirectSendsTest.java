package io.csiorchestrator.claims.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.Bus;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.SqlConnection;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Publish after commit (issue 36 item 2) against the real broker and database: the process that commits a row sends
 * it ({@link DirectSends}), and each topic and key's records reach the topic in commit order, also when a transaction
 * committed first waits for one that inserted before it, and when another writer's row of the same key is unpublished.
 * The same with separate processes and a SIGKILL between commit and send: {@code it.ClaimServiceCrashIT}.
 */
@QuarkusTest
class DirectSendsTest {

    private static final Duration WAIT = Bus.WAIT;

    @Inject
    Outbox outbox;
    @Inject
    DirectSends sends;
    @Inject
    OutboxRelay relay;
    @Inject
    Pool pool;

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    @Test
    void aClaimsRecordsAreSentByTheProcessThatCommittedThemNotByTheRelay() {
        String vol = bus.schedulableVolume("ns1", "direct", AccessMode.SINGLE_NODE_WRITER, "node-a");
        long sentBefore = sends.sentCount();
        ClaimRequested write = Bus.claim("ns1", vol, "alloc-direct", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        bus.awaitStatus(write.requestId(), ClaimState.ACCEPTED);

        Awaitility.await().atMost(WAIT).until(() -> rowsOf("alloc-direct").stream().allMatch(r -> r.published));
        List<OutboxState> rows = rowsOf("alloc-direct");
        assertEquals(2, rows.size(), "the accepted status and the mount command: " + rows);
        assertTrue(rows.stream().allMatch(r -> r.direct), "both written as this process's own: " + rows);
        assertTrue(sends.sentCount() >= sentBefore + 2, "both sent directly");
    }

    /**
     * Two transactions write a row of one key: A inserts first and commits last, B inserts after A and commits at once.
     * B's record waits for A's: A's, then B's, on the partition.
     */
    @Test
    void aCommittedRowWaitsForTheRowOfItsKeyInsertedBeforeItAndCommittedAfter() throws Throwable {
        String vol = "fifo-" + UUID.randomUUID();
        ClaimStatus first = status(vol, "first");
        ClaimStatus second = status(vol, "second");
        CompletableFuture<io.vertx.core.Context> inserted = new CompletableFuture<>();
        CompletableFuture<Void> gate = new CompletableFuture<>();
        CompletableFuture<Void> a = CompletableFuture.runAsync(() -> {
            try {
                VertxContextSupport.subscribeAndAwait(() -> outbox.inTransaction(() -> outbox.add(first, null)
                        .invoke(() -> inserted.complete(io.vertx.core.Vertx.currentContext()))
                        .chain(() -> Uni.createFrom().completionStage(gate))));
            } catch (Throwable t) {
                inserted.completeExceptionally(t);
                throw new IllegalStateException(t);
            }
        });
        io.vertx.core.Context transactionA = inserted.get(30, TimeUnit.SECONDS);
        VertxContextSupport.subscribeAndAwait(() -> outbox.inTransaction(() -> outbox.add(second, null)));
        assertEquals(List.of(true, false), committedAndPublished(vol, "second"),
                "B committed and not sent, while A's transaction is open");
        transactionA.runOnContext(v -> gate.complete(null)); // A goes on on its own context, as Hibernate Reactive wants
        a.get(30, TimeUnit.SECONDS);

        List<String> order = awaitAllocations(vol, 2);
        assertEquals(List.of("first", "second"), order, "commit order of the key kept: A's record first");
    }

    /**
     * Another writer (this test, holding a writer's advisory lock) has an unpublished direct row of a key: a row this
     * process commits for the key then is the relay's (not direct), and is published only after the other writer's,
     * which the relay sends once that writer is gone (its lock released).
     */
    @Test
    void aRowBehindAnotherLiveWritersUnpublishedRowIsTheRelaysAndFollowsIt() throws Throwable {
        String vol = "behind-" + UUID.randomUUID();
        long otherWriter = 0x7e57000000L + (System.nanoTime() & 0xffffff);
        ClaimStatus others = status(vol, "others");
        SqlConnection held = pool.getConnection().await().atMost(WAIT);
        try {
            held.preparedQuery("SELECT pg_advisory_lock($1)").execute(Tuple.of(otherWriter)).await().atMost(WAIT);
            held.preparedQuery("INSERT INTO outbox (ce_id, ce_type, ce_time, topic, record_key, payload, created_at, writer, direct)"
                            + " VALUES ($1, $2, now(), $3, $4, $5, now(), $6, true)")
                    .execute(Tuple.tuple(List.of(UUID.randomUUID().toString(), others.eventType().cloudEventType(),
                            Bus.topic(Topic.CLAIM_STATUS), vol, EventCodec.encodeToString(others), otherWriter)))
                    .await().atMost(WAIT);

            VertxContextSupport.subscribeAndAwait(() -> outbox.inTransaction(() -> outbox.add(status(vol, "ours"), null)));
            List<OutboxState> ours = rowsOf("ours-" + vol);
            assertEquals(1, ours.size());
            assertTrue(!ours.get(0).direct, "written behind a live writer's row: the relay's");
            assertEquals(List.of(false, false), List.of(ours.get(0).published, committedAndPublished(vol, "others").get(1)),
                    "neither published while the other writer lives");

            held.preparedQuery("SELECT pg_advisory_unlock($1)").execute(Tuple.of(otherWriter)).await().atMost(WAIT);
        } finally {
            held.close().await().atMost(WAIT);
        }
        assertEquals(List.of("others", "ours"), awaitAllocations(vol, 2),
                "the other writer's row first (sent by the relay once that writer is gone), then ours");
    }

    private static ClaimStatus status(String vol, String alloc) {
        return new ClaimStatus("req-" + alloc, "ns1", vol, alloc + "-" + vol, "node-a", ClaimMode.WRITE, ClaimState.ACCEPTED,
                null, null, Instant.now());
    }

    /** The allocations (without the volume suffix) of the first {@code n} records of {@code vol} on claim-status. */
    private List<String> awaitAllocations(String vol, int n) {
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        Awaitility.await().atMost(WAIT).until(() -> {
            records.clear();
            bus.kafka.readAll(Bus.topic(Topic.CLAIM_STATUS)).stream().filter(r -> vol.equals(r.key())).forEach(records::add);
            return records.size() >= n;
        });
        List<String> allocations = new ArrayList<>();
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (ConsumerRecord<String, String> r : records) {
            if (seen.add(KafkaTestClient.header(r, CloudEventHeaders.CE_ID))) {
                String alloc = EventCodec.decode(ClaimStatus.class, r.value()).allocationId();
                allocations.add(alloc.substring(0, alloc.length() - vol.length() - 1));
            }
        }
        return allocations;
    }

    record OutboxState(boolean direct, boolean published) {
    }

    private List<OutboxState> rowsOf(String allocation) {
        List<OutboxState> rows = new ArrayList<>();
        for (Row r : pool.preparedQuery("SELECT direct, published_at IS NOT NULL AS published FROM outbox WHERE payload LIKE $1")
                .execute(Tuple.of("%\"" + allocation + "%")).await().atMost(WAIT)) {
            rows.add(new OutboxState(r.getBoolean("direct"), r.getBoolean("published")));
        }
        return rows;
    }

    /** [committed, published] of the row of {@code alloc} on {@code vol} (committed: visible to another connection). */
    private List<Boolean> committedAndPublished(String vol, String alloc) {
        List<OutboxState> rows = rowsOf(alloc + "-" + vol);
        return rows.isEmpty() ? List.of(false, false) : List.of(true, rows.get(0).published);
    }
}
