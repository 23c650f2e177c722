package io.csiorchestrator.claims.outbox;

import io.vertx.core.Context;
import io.vertx.core.Vertx;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The outbox rows of the transaction running on the current Vert.x context ({@link Outbox#inTransaction}): the ones
 * this process sends itself once it committed ({@link DirectSends}), and whether any was left to the relay. Kept as a
 * local of the (duplicated) context the transaction runs on, where its connection is kept too.
 */
final class OutboxBatch {

    private static final Object KEY = OutboxBatch.class;

    final List<DirectSends.Pending> direct = new ArrayList<>();
    /** Its direct rows not yet answered by the broker ({@link DirectSends}). */
    final AtomicInteger unanswered = new AtomicInteger();
    /** A row of this transaction is the relay's (written behind another writer's, or this writer had no lock). */
    boolean toRelay;

    /** The batch of the transaction on the current context, or null (none opened by {@link Outbox#inTransaction}). */
    static OutboxBatch current() {
        Context context = Vertx.currentContext();
        return context == null ? null : context.getLocal(KEY);
    }

    /** Opens a batch on {@code context}. */
    static OutboxBatch open(Context context) {
        OutboxBatch batch = new OutboxBatch();
        context.putLocal(KEY, batch);
        return batch;
    }

    static void close(Context context, OutboxBatch batch) {
        if (context.getLocal(KEY) == batch) {
            context.removeLocal(KEY);
        }
    }
}
