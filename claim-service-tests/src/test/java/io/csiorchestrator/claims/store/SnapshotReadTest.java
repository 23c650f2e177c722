package io.csiorchestrator.claims.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import jakarta.inject.Inject;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A view read by several statements (a volume with its claims, conditions and usage) reads one snapshot: a commit
 * made by another connection between two of its statements is not seen by the second, as it is on a plain
 * {@link Transactions#reading} connection (the control, which shows the probe can tell them apart). The snapshot is
 * read-only: a write in it is refused.
 */
@QuarkusTest
class SnapshotReadTest {

    private static final String COUNT = "SELECT count(*)::text FROM snapshot_probe";

    @Inject
    Transactions transactions;
    @Inject
    Pool pool;

    @BeforeEach
    void probeTable() throws Throwable {
        await(() -> pool.query("CREATE TABLE IF NOT EXISTS snapshot_probe (n int)").execute().replaceWithVoid());
    }

    @Test
    void aCommitBetweenTwoStatementsIsNotSeenInOneSnapshotButIsOnAPlainReadingConnection() throws Throwable {
        List<String> snapshot = await(() -> transactions.readingOneSnapshot(this::countCommitCount));
        assertEquals(snapshot.get(0), snapshot.get(1), "one snapshot: the commit between the reads is not seen");

        List<String> plain = await(() -> transactions.reading(this::countCommitCount));
        assertEquals(Integer.parseInt(plain.get(0)) + 1, Integer.parseInt(plain.get(1)),
                "a plain reading connection sees the commit made between its two reads");
    }

    @Test
    void aWriteInASnapshotReadIsRefused() {
        Throwable refused = org.junit.jupiter.api.Assertions.assertThrows(Throwable.class, () -> await(() ->
                transactions.readingOneSnapshot(() -> SessionSql.update("INSERT INTO snapshot_probe VALUES (2)"))));
        assertTrue(String.valueOf(refused.getMessage()).contains("read-only"), String.valueOf(refused));
    }

    /** Counts, commits a row on another connection of the pool, counts again. */
    private Uni<List<String>> countCommitCount() {
        return SessionSql.strings(COUNT).chain(first -> pool.query("INSERT INTO snapshot_probe VALUES (1)").execute()
                .chain(() -> SessionSql.strings(COUNT)).map(second -> List.of(first.get(0), second.get(0))));
    }

    private static <T> T await(Supplier<Uni<T>> work) throws Throwable {
        return VertxContextSupport.subscribeAndAwait(work);
    }
}
