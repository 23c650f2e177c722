package io.csiorchestrator.claims.provision;

import io.csiorchestrator.claims.ClaimSettings;
import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Transactions;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * The provisions' reconcile pass, on the leader only, run by {@link io.csiorchestrator.claims.ReconcileSchedule} after
 * the claims' when something falls due: due retries send their command again, commands without an answer past
 * {@code csi.claims.command-timeout} count as DEADLINE_EXCEEDED; at most {@code csi.claims.reconcile-batch} of each
 * per pass. After a restart this is what
 * re-sends a create whose answer was lost (the same CSI name: the same volume).
 */
@ApplicationScoped
public class ProvisionReconciler {

    private static final Logger LOG = Logger.getLogger(ProvisionReconciler.class);

    @Inject
    ProvisionService provisions;
    @Inject
    SnapshotService snapshots;
    @Inject
    ClaimSettings settings;
    @Inject
    Transactions transactions;

    /** One pass: due retries, then timed-out commands; the provisions', then the snapshots' (issue 14 item 2). */
    public Uni<Void> reconcile() {
        Instant now = Instant.now();
        int batch = settings.reconcileBatch();
        return keys("SELECT volume_key FROM provisions WHERE command_id IS NULL AND retry_at <= $1 ORDER BY retry_at LIMIT $2",
                now, batch)
                .chain(keys -> each(keys, provisions::retryDue))
                .chain(() -> keys("SELECT volume_key FROM provisions WHERE command_id IS NOT NULL AND command_deadline < $1"
                        + " ORDER BY command_deadline LIMIT $2", now, batch))
                .chain(keys -> each(keys, provisions::commandTimedOut))
                .chain(() -> keys("SELECT snapshot_key FROM snapshots WHERE command_id IS NULL AND retry_at <= $1"
                        + " ORDER BY retry_at LIMIT $2", now, batch))
                .chain(keys -> each(keys, snapshots::retryDue))
                .chain(() -> keys("SELECT snapshot_key FROM snapshots WHERE command_id IS NOT NULL AND command_deadline < $1"
                        + " ORDER BY command_deadline LIMIT $2", now, batch))
                .chain(keys -> each(keys, snapshots::commandTimedOut));
    }

    private Uni<List<String>> keys(String sql, Instant at, int limit) {
        return transactions.reading(() -> SessionSql.select(sql, at, (long) limit))
                .map(rows -> rows.stream().map(r -> (String) r[0]).toList());
    }

    private static Uni<Void> each(List<String> keys, Function<String, Uni<Void>> work) {
        if (keys.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        return Multi.createFrom().iterable(keys)
                .onItem().transformToUniAndConcatenate(key -> work.apply(key)
                        .onFailure().invoke(t -> LOG.warnf("provision reconcile of %s failed: %s", key, t.toString()))
                        .onFailure().recoverWithNull())
                .collect().last().replaceWithVoid();
    }
}
