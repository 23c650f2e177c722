package io.csiorchestrator.claims.messaging;

import io.csiorchestrator.claims.ClaimMetrics;
import io.csiorchestrator.claims.ClaimService;
import io.csiorchestrator.claims.Tx;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.smallrye.mutiny.Uni;
import io.smallrye.reactive.messaging.kafka.KafkaRecord;
import io.smallrye.reactive.messaging.kafka.KafkaRecordBatch;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jboss.logging.Logger;

/**
 * The records of one poll, handled together (issue 17, batching). Each record is first checked and decoded on its own
 * ({@code parse}); one that fails that (malformed, forged, stale) is dead-lettered with the reason and touches nothing.
 * The rest are handled in the order of the poll (per partition, by offset: a volume's records keep their order) and
 * consecutive {@linkplain Step#joinable joinable} ones share one database transaction: the locks of their volumes are
 * taken up front in key order ({@code prelock}), then each record's step runs inside the transaction and sees the
 * effects of the steps before it; the commit writes every claim, every outbox row and every request id of the run at
 * once, and the relay is signalled once. Nothing of a run is committed unless all of it is: a crash in the middle
 * leaves the offsets uncommitted and the records are delivered again, and each step is idempotent (a request id is
 * handled once, an answer matches the claim's pending command or nothing).
 *
 * <p>A run that fails transiently (the database away, a deadlock) is tried again whole for as long as that lasts. A run
 * that fails for any other reason is handled again one record at a time, each in its own transaction with the usual
 * retries ({@link Retries#retried}), so one record that cannot be handled is dead-lettered alone with its reason and
 * the others of its poll take effect. A step that is not joinable (it opens its own transactions) runs alone, in its
 * place. The batch is acknowledged (its offsets committed) only after every record took effect or was dead-lettered.
 */
@ApplicationScoped
public class RecordBatches {

    private static final Logger LOG = Logger.getLogger(RecordBatches.class);

    @Inject
    ClaimService claims;
    @Inject
    Retries retries;
    @Inject
    ClaimMetrics metrics;

    /**
     * One record of a batch, checked and decoded.
     *
     * @param record   the record (dead-lettered through it when its handling is given up)
     * @param what     how the logs name it
     * @param trace    the record's span (from its traceparent): current while its step runs, so the step's log lines
     *                 carry its trace id
     * @param tx       its transaction's cause and observations (null when not joinable)
     * @param lockKey  the key {@code prelock} locks for it (a volume key, a command id), or null
     * @param inTx     its work inside the caller's transaction (null when not joinable)
     * @param alone    its work in transactions of its own
     */
    public record Step(KafkaRecord<String, String> record, String what, Context trace, Tx tx, String lockKey,
                       Supplier<Uni<Void>> inTx, Supplier<Uni<Void>> alone) {

        /** A step that can share a transaction with its neighbours; {@code trace}: the record's span, current while it runs. */
        public static Step joinable(KafkaRecord<String, String> record, String what, Context trace, Tx tx, String lockKey,
                                    Supplier<Uni<Void>> inTx, Supplier<Uni<Void>> alone) {
            return new Step(record, what, trace, tx, lockKey, inTx, alone);
        }

        /** A step that runs in transactions of its own. */
        public static Step alone(KafkaRecord<String, String> record, String what, Context trace, Supplier<Uni<Void>> alone) {
            return new Step(record, what, trace, null, null, null, alone);
        }

        boolean isJoinable() {
            return inTx != null;
        }
    }

    /** A record to parse: its step, or an exception saying why it is dead-lettered. */
    @FunctionalInterface
    public interface Parser {
        Step parse(KafkaRecord<String, String> record) throws Exception;
    }

    /**
     * Handles {@code batch} of {@code channel}: parses each record, dead-letters those that fail it, runs the steps
     * (joinable runs in one transaction after {@code prelock} of their lock keys) and acknowledges the batch. Never
     * fails: a failed batch would be dead-lettered whole by the connector.
     */
    public Uni<Void> handle(String channel, KafkaRecordBatch<String, String> batch, Parser parse,
                            Function<Set<String>, Uni<Void>> prelock) {
        List<KafkaRecord<String, String>> records = batch.getRecords();
        metrics.batch(channel, records.size());
        List<Supplier<Uni<Void>>> segments = new ArrayList<>();
        List<Step> run = new ArrayList<>();
        for (KafkaRecord<String, String> record : records) {
            Step step;
            try {
                step = parse.parse(record);
            } catch (Throwable t) {
                segments.add(() -> deadLetter(record, t));
                continue;
            }
            if (step.isJoinable()) {
                run.add(step);
            } else {
                flush(channel, run, prelock, segments);
                segments.add(() -> alone(step));
            }
        }
        flush(channel, run, prelock, segments);
        // Each segment continues on the batch's own Vert.x context (the connector's duplicated one, which Hibernate
        // Reactive requires): a dead letter completes on the dead-letter producer's context, and a transaction begun
        // from there fails ("requires a safe (isolated) Vert.x sub-context").
        java.util.concurrent.Executor onBatchContext = onContext(io.vertx.core.Vertx.currentContext());
        Uni<Void> all = Uni.createFrom().voidItem();
        for (Supplier<Uni<Void>> segment : segments) {
            all = all.chain(() -> segment.get()).emitOn(onBatchContext);
        }
        return all.chain(() -> Uni.createFrom().completionStage(batch::ack));
    }

    private void flush(String channel, List<Step> run, Function<Set<String>, Uni<Void>> prelock, List<Supplier<Uni<Void>>> segments) {
        if (run.isEmpty()) {
            return;
        }
        List<Step> steps = List.copyOf(run);
        run.clear();
        segments.add(steps.size() == 1 ? () -> alone(steps.get(0)) : () -> together(channel, steps, prelock));
    }

    /** Runs on {@code context} (the calling thread when there is none: a test calling without Vert.x). */
    static java.util.concurrent.Executor onContext(io.vertx.core.Context context) {
        return context == null ? Runnable::run : work -> context.runOnContext(ignored -> work.run());
    }

    /** The steps in one transaction; one at a time when that fails for a reason other than the database being away. */
    private Uni<Void> together(String channel, List<Step> steps, Function<Set<String>, Uni<Void>> prelock) {
        Set<String> keys = new LinkedHashSet<>();
        List<Tx> txs = new ArrayList<>(steps.size());
        for (Step s : steps) {
            if (s.lockKey() != null) {
                keys.add(s.lockKey());
            }
            txs.add(s.tx());
        }
        String what = channel + " batch of " + steps.size() + " (" + steps.get(0).what() + " .. " + steps.get(steps.size() - 1).what() + ")";
        return retries.retriedWhileTransient(() -> claims.inOneTransaction(txs, () -> {
                    LOG.debugf("%s: one transaction", what);
                    Uni<Void> chain = prelock.apply(keys);
                    for (Step s : steps) {
                        chain = chain.chain(() -> inTrace(s.trace(), s.inTx()));
                    }
                    return chain;
                }), what)
                .onFailure().recoverWithUni(t -> {
                    LOG.warnf("%s failed (%s); handling its records one at a time", what, t.toString());
                    // each record of the run is handled again: counted as a retry of each
                    steps.forEach(s -> metrics.consumerRetry(false));
                    Uni<Void> oneByOne = Uni.createFrom().voidItem();
                    for (Step s : steps) {
                        oneByOne = oneByOne.chain(() -> alone(s));
                    }
                    return oneByOne;
                });
    }

    /** One step in transactions of its own, retried; dead-lettered with the reason when given up. */
    private Uni<Void> alone(Step step) {
        return retries.retried(() -> inTrace(step.trace(), step.alone()), step.what())
                .onFailure().recoverWithUni(t -> deadLetter(step.record(), t));
    }

    /**
     * {@code work} with {@code trace} current from its start to its end: the records of a poll share the batch's Vert.x
     * context, where the connector made none of their spans current, and a step's continuations run on that context,
     * so the trace stays attached there (and in the logging MDC) until the step's Uni ends.
     */
    static Uni<Void> inTrace(Context trace, Supplier<Uni<Void>> work) {
        if (trace == null) {
            return Uni.createFrom().deferred(work::get);
        }
        return Uni.createFrom().deferred(() -> {
            Scope scope = trace.makeCurrent();
            Uni<Void> started;
            try {
                started = work.get();
            } catch (RuntimeException e) {
                scope.close();
                throw e;
            }
            return started.onTermination().invoke(scope::close);
        });
    }

    /**
     * Sends {@code record} to its channel's dead-letter topic with {@code reason} (the connector's dead-letter
     * handler: reason, cause and origin headers, the record's own headers); tried again until the broker took it,
     * since the batch's offsets are committed only after. (The handler then acknowledges the record itself; the
     * throttled commit strategy tracks only the last record of each partition of a poll, so a record before it adds an
     * offset the strategy never clears until the partition is revoked: a few bytes per dead letter.)
     */
    private static Uni<Void> deadLetter(KafkaRecord<String, String> record, Throwable reason) {
        return Uni.createFrom().completionStage(() -> record.nack(reason))
                .onFailure().invoke(t -> LOG.warnf("dead-lettering a record of %s-%d (key %s) failed, trying again: %s", record.getTopic(),
                        record.getPartition(), record.getKey(), t.toString()))
                .onFailure().retry().withBackOff(Duration.ofSeconds(1), Duration.ofSeconds(30)).indefinitely();
    }
}
