package io.csiorchestrator.claims.outbox;

import jakarta.enterprise.context.ApplicationScoped;
import java.util.concurrent.ThreadLocalRandom;

/**
 * This process as a writer of outbox rows (issue 36 item 2): a random key per process start, which it holds as a
 * PostgreSQL session advisory lock on its election connection ({@code leader.LeaderElection}) while it lives. Its rows
 * carry the key ({@code outbox.writer}); the relay leaves a direct row to its writer while the writer's lock is granted
 * and sends it itself once the lock is gone (the server drops it with the connection of a killed process). A new key per
 * start: a restarted process never takes its predecessor's unsent rows for its own.
 */
@ApplicationScoped
public class OutboxWriter {

    /** In [2^32, 2^62): positive, so (classid << 32 | objid) in pg_locks gives it back as it is. */
    private final long key = ThreadLocalRandom.current().nextLong(1L << 32, 1L << 62);
    private volatile boolean held;

    public long key() {
        return key;
    }

    /** Whether the lock is held now: only then are rows written as direct (else the relay could take them at once). */
    public boolean held() {
        return held;
    }

    /** The election connection took ({@code true}) or lost ({@code false}) the lock. */
    public void held(boolean now) {
        held = now;
    }
}
