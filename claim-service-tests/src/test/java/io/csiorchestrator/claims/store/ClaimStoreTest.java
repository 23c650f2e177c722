package io.csiorchestrator.claims.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.ClaimService;
import io.csiorchestrator.claims.domain.ClaimMachine.Phase;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.vertx.VertxContextSupport;
import io.smallrye.mutiny.Uni;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * A claim transaction's claims and volumes as prepared statements (issue 36 item 3), against the real database: one
 * object per row in a transaction, its queries answered with its own changes, the rows that changed (and only those)
 * written once at its end, nothing written when it fails, a volume deleted with its claims.
 */
@QuarkusTest
class ClaimStoreTest {

    @Inject
    Transactions transactions;
    @Inject
    ClaimService claims;

    @Test
    void theRowsThatChangedAreWrittenAtTheEndAndOnlyThose() throws Throwable {
        String key = "store-test/" + UUID.randomUUID();
        Instant t0 = Instant.parse("2026-12-01T06:00:00.000001Z");
        inTx(() -> {
            ClaimStore store = ClaimStore.current();
            store.insert(volume(key));
            store.insert(claim(key, "a-" + key, "alloc-a", t0, "cmd-a-" + key));
            store.insert(claim(key, "b-" + key, "alloc-b", t0.plusMillis(1), null));
            return Uni.createFrom().voidItem();
        });
        String volumeXmin = xmin("volumes", "volume_key", key);
        String bXmin = xmin("claims", "claim_id", "b-" + key);

        inTx(() -> {
            ClaimStore store = ClaimStore.current();
            return store.lockVolume(key).chain(v -> store.activeClaims(key).chain(first -> store.activeClaims(key).chain(again -> {
                assertEquals(List.of("alloc-a", "alloc-b"), first.stream().map(c -> c.allocationId).toList(), "oldest first");
                assertSame(first.get(0), again.get(0), "one object per claim in a transaction");
                first.get(0).phase = Phase.READY;
                first.get(0).commandId = "cmd-a2-" + key;
                return store.claimByCommand("cmd-a2-" + key).chain(byNewCommand -> store.claimByCommand("cmd-a-" + key).map(byOldCommand -> {
                    assertSame(first.get(0), byNewCommand, "found by the command this transaction gave it");
                    assertNull(byOldCommand, "the command it waited for before this transaction is not its command any more");
                    return null;
                }));
            })));
        });

        assertEquals("READY", column("claims", "phase", "claim_id", "a-" + key));
        assertEquals("cmd-a2-" + key, column("claims", "command_id", "claim_id", "a-" + key));
        assertEquals(bXmin, xmin("claims", "claim_id", "b-" + key), "an unchanged claim is not written");
        assertEquals(volumeXmin, xmin("volumes", "volume_key", key), "an unchanged volume is not written");

        inTx(() -> ClaimStore.current().lockVolume(key).invoke(v -> v.writeGeneration++));
        assertEquals(1L, ((Number) column("volumes", "write_generation", "volume_key", key)).longValue());
        assertEquals(1L, ((Number) column("volumes", "version", "volume_key", key)).longValue(),
                "a volume's version goes up with each write (the REST paths' managed volumes check it)");
    }

    @Test
    void aTransactionSeesItsOwnChangesAndAFailedOneWritesNothing() throws Throwable {
        String key = "store-test/" + UUID.randomUUID();
        Instant t0 = Instant.parse("2026-12-01T06:00:00Z");
        inTx(() -> {
            ClaimStore store = ClaimStore.current();
            store.insert(volume(key));
            store.insert(claim(key, "a-" + key, "alloc-a", t0, "cmd-a-" + key));
            return Uni.createFrom().voidItem();
        });

        RuntimeException failure = new RuntimeException("the step failed");
        RuntimeException thrown = assertThrows(RuntimeException.class, () -> inTx(() -> {
            ClaimStore store = ClaimStore.current();
            return store.lockVolumeOfCommand("cmd-a-" + key).chain(v -> store.claimByCommand("cmd-a-" + key).chain(a -> {
                assertEquals(key, v.volumeKey);
                a.past = true;
                store.insert(claim(key, "c-" + key, "alloc-c", t0.plusSeconds(1), null));
                return store.activeClaims(key);
            })).chain(active -> {
                assertEquals(List.of("alloc-c"), active.stream().map(c -> c.allocationId).toList(),
                        "the ended claim is gone from the volume's current claims, the new one is there");
                return Uni.createFrom().failure(failure);
            });
        }));
        assertSame(failure, thrown);
        assertEquals(false, column("claims", "past", "claim_id", "a-" + key), "rolled back: not ended");
        assertNull(column("claims", "claim_id", "claim_id", "c-" + key), "rolled back: not inserted");
    }

    @Test
    void aVolumeDeletedGoesWithAllItsClaimsAndAPollLocksVolumesWithTheirClaims() throws Throwable {
        String key = "store-test/" + UUID.randomUUID();
        String other = "store-test/" + UUID.randomUUID();
        Instant t0 = Instant.parse("2026-12-01T06:00:00Z");
        inTx(() -> {
            ClaimStore store = ClaimStore.current();
            store.insert(volume(key));
            store.insert(volume(other));
            store.insert(claim(key, "a-" + key, "alloc-a", t0, null));
            ClaimEntity past = claim(key, "p-" + key, "alloc-p", t0, null);
            past.past = true;
            store.insert(past);
            store.insert(claim(other, "o-" + other, "alloc-o", t0, null));
            return Uni.createFrom().voidItem();
        });

        inTx(() -> {
            ClaimStore store = ClaimStore.current();
            return store.lockVolumes(List.of(other, key)).chain(() -> store.lockVolume(key)).chain(v -> store.activeClaims(other)
                    .chain(o -> {
                        assertEquals(List.of("alloc-o"), o.stream().map(c -> c.allocationId).toList());
                        return store.deleteVolume(v);
                    })).chain(() -> store.lockVolume(key)).chain(gone -> {
                        assertNull(gone, "deleted in this transaction");
                        return store.claim("a-" + key);
                    }).map(a -> {
                        assertNull(a);
                        return null;
                    });
        });
        assertNull(column("volumes", "volume_key", "volume_key", key));
        assertNull(column("claims", "claim_id", "claim_id", "a-" + key));
        assertNull(column("claims", "claim_id", "claim_id", "p-" + key), "its past claims too");
        assertEquals("o-" + other, column("claims", "claim_id", "claim_id", "o-" + other), "another volume's claim stays");
    }

    @Test
    void aClaimsPhaseModeAndAccessAreTypedColumnsThatRefuseAnyOtherValue() throws Throwable {
        List<Object[]> types = VertxContextSupport.subscribeAndAwait(() -> transactions.inTransaction(() -> SessionSql.select(
                "SELECT column_name, udt_name FROM information_schema.columns WHERE table_name = 'claims'"
                        + " AND column_name IN ('phase', 'mode', 'access_mode', 'attachment_mode') ORDER BY column_name")));
        assertEquals(List.of("access_mode=csi_access_mode", "attachment_mode=csi_attachment_mode", "mode=claim_mode",
                "phase=claim_phase"), types.stream().map(r -> r[0] + "=" + r[1]).toList());
        String key = "store-test/" + UUID.randomUUID();
        Exception refused = assertThrows(Exception.class, () -> VertxContextSupport.subscribeAndAwait(() -> transactions.inTransaction(
                () -> SessionSql.update("UPDATE claims SET phase = $1 WHERE claim_id = $2", "BOUND", key))));
        assertTrue(refused.getMessage().contains("claim_phase"), refused.getMessage());
    }

    @Test
    void claimsAndVolumesOutsideAClaimTransactionAreRefusedWithTheReason() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> VertxContextSupport.subscribeAndAwait(
                () -> transactions.inTransaction(() -> Uni.createFrom().deferred(() -> ClaimStore.current().lockVolume("x/y")))));
        assertTrue(e.getMessage().contains("ClaimService.inTransaction"), e.getMessage());
    }

    private <T> void inTx(Supplier<Uni<T>> work) throws Throwable {
        VertxContextSupport.subscribeAndAwait(() -> claims.inTransaction(work));
    }

    private Object column(String table, String column, String keyColumn, String key) throws Throwable {
        List<Object[]> rows = VertxContextSupport.subscribeAndAwait(() -> transactions.inTransaction(() -> SessionSql.select(
                "SELECT " + column + " FROM " + table + " WHERE " + keyColumn + " = $1", key)));
        return rows.isEmpty() ? null : rows.get(0)[0];
    }

    private String xmin(String table, String keyColumn, String key) throws Throwable {
        String xmin = (String) column(table, "CAST(xmin AS text)", keyColumn, key);
        assertNotEquals(null, xmin);
        return xmin;
    }

    private static VolumeEntity volume(String key) {
        VolumeEntity v = new VolumeEntity();
        v.volumeKey = key;
        v.namespace = key.substring(0, key.indexOf('/'));
        v.id = key.substring(key.indexOf('/') + 1);
        v.name = v.id;
        v.externalId = "ext-" + v.id;
        v.pluginId = "store-test-plugin";
        v.accessMode = "single-node-writer";
        v.attachmentMode = "file-system";
        v.parametersJson = "{}";
        v.contextJson = "{}";
        v.topologyJson = "{}";
        v.secretKeysJson = "[]";
        v.createdAt = Instant.now();
        v.updatedAt = v.createdAt;
        return v;
    }

    private static ClaimEntity claim(String volumeKey, String id, String allocation, Instant createdAt, String commandId) {
        ClaimEntity c = new ClaimEntity();
        c.claimId = id;
        c.volumeKey = volumeKey;
        c.namespace = volumeKey.substring(0, volumeKey.indexOf('/'));
        c.volumeId = volumeKey.substring(volumeKey.indexOf('/') + 1);
        c.allocationId = allocation;
        c.nodeId = "node-1";
        c.mode = ClaimMode.WRITE;
        c.requestId = "req-" + id;
        c.accessMode = AccessMode.SINGLE_NODE_WRITER;
        c.attachmentMode = AttachmentMode.FILE_SYSTEM;
        c.phase = Phase.MOUNTING;
        c.commandId = commandId;
        c.publishContextJson = "{}";
        c.createdAt = createdAt;
        c.updatedAt = createdAt;
        return c;
    }
}
