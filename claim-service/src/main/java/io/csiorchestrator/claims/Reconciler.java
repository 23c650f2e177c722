package io.csiorchestrator.claims;

import io.csiorchestrator.claims.store.SessionSql;
import io.csiorchestrator.claims.store.Transactions;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.List;
import org.jboss.logging.Logger;

/**
 * The reconcile pass over the claims, run by {@link ReconcileSchedule} when something falls due (never two at once,
 * never twice within {@code csi.claims.reconcile-interval}), each kind of work limited to
 * {@code csi.claims.reconcile-batch} claims per pass (the rate limit):
 * <ul>
 *   <li>failed steps whose backoff is over are sent again;</li>
 *   <li>commands without an answer past {@code csi.claims.command-timeout} count as DEADLINE_EXCEEDED;</li>
 *   <li>claims on a node whose lease ended (LAPSED or FENCED), and releases whose unmount keeps failing or got no
 *       answer, are checked against the lease book ({@link ClaimFences#fenceCheck}): assumed detached from the node
 *       only once its lease surely lapsed at the claim's epoch and the fence wait passed (issue 19; never by a plain
 *       timeout: the old "node gone past {@code node-gone-timeout}" path is gone), else the release says why it waits;</li>
 *   <li>past claims and answered request ids older than {@code csi.claims.past-claims-retention} are purged.</li>
 * </ul>
 * Only the leader instance runs passes.
 */
@ApplicationScoped
public class Reconciler {

    private static final Logger LOG = Logger.getLogger(Reconciler.class);

    @Inject
    ClaimService claims;
    @Inject
    ClaimFences fences;
    @Inject
    ClaimSettings settings;
    @Inject
    Fencing fencing;
    @Inject
    Transactions transactions;

    /** One reconcile pass. */
    public Uni<Void> reconcile() {
        Instant now = Instant.now();
        int batch = settings.reconcileBatch();
        return ids("SELECT claim_id FROM claims WHERE NOT past AND command_id IS NULL AND retry_at <= $1 ORDER BY retry_at LIMIT $2", now, batch)
                .chain(ids -> each(ids, claims::retryDue))
                .chain(() -> ids("SELECT claim_id FROM claims WHERE NOT past AND command_id IS NOT NULL AND command_deadline < $1"
                        + " ORDER BY command_deadline LIMIT $2", now, batch))
                .chain(ids -> each(ids, fences::commandTimedOut))
                .chain(() -> fenceCandidates(batch))
                .chain(ids -> each(ids, fences::fenceCheck))
                .chain(this::purge);
    }

    /**
     * Claims the lease book may free or a release waits on: every claim on a node whose lease ended, and every
     * release whose unmount failed or got no answer in time (being retried: attempt > 1).
     */
    private Uni<List<String>> fenceCandidates(int batch) {
        List<String> ended = fencing.book().endedNodes();
        String onEnded = ended.isEmpty() ? "" : "(c.node_id = ANY(CAST($2 AS varchar[])) AND c.phase IN ('CONTROLLER_PUBLISHING', 'MOUNTING', 'READY',"
                + " 'UNMOUNTING')) OR ";
        String sql = "SELECT c.claim_id FROM claims c WHERE NOT c.past AND (" + onEnded
                + "(c.phase = 'UNMOUNTING' AND c.release_requested AND NOT c.rolling_back AND c.attempt > 1"
                + " AND c.plugin_wait_since IS NULL)) ORDER BY c.updated_at LIMIT $1";
        return transactions.reading(() -> ended.isEmpty() ? SessionSql.strings(sql, batch)
                : SessionSql.strings(sql, batch, ended.toArray(String[]::new)));
    }

    private Uni<Void> purge() {
        Instant before = Instant.now().minus(settings.pastClaimsRetention());
        return transactions.inTransaction(() -> SessionSql.update("DELETE FROM claims WHERE past AND ended_at < $1", before)
                .call(() -> SessionSql.update("DELETE FROM handled_requests WHERE handled_at < $1", before))
                .invoke(n -> {
                    if (n > 0) {
                        LOG.infof("purged %d past claims ended before %s", n, before);
                    }
                })).replaceWithVoid();
    }

    private Uni<List<String>> ids(String sql, Instant at, int limit) {
        return transactions.reading(() -> SessionSql.strings(sql, at, limit));
    }

    private static Uni<Void> each(List<String> ids, java.util.function.Function<String, Uni<Void>> work) {
        if (ids.isEmpty()) {
            return Uni.createFrom().voidItem();
        }
        return Multi.createFrom().iterable(ids)
                .onItem().transformToUniAndConcatenate(id -> work.apply(id)
                        .onFailure().invoke(t -> LOG.warnf("reconcile of claim %s failed: %s", id, t.toString()))
                        .onFailure().recoverWithNull())
                .collect().last().replaceWithVoid();
    }
}
