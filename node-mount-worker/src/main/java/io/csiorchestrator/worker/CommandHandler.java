package io.csiorchestrator.worker;

import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.worker.lease.LeaseGate;
import io.csiorchestrator.worker.mount.VolumeOperations;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.time.Clock;
import java.util.Map;
import java.util.function.BiFunction;
import org.jboss.logging.Logger;
import org.jboss.logging.MDC;

/**
 * Runs one node command on the volume thread inside {@code cause}, the context of its
 * {@code node-commands process} span: the CSI calls it awaits on this thread are its children and
 * the node events it emits carry it. An unexpected failure is still answered ({@code WORKER_ERROR}),
 * so the partition never stalls. The {@code CommandConsumer}'s handler, in the worker and in the
 * node simulator alike.
 */
public final class CommandHandler implements BiFunction<NodeCommand, Context, MountDone> {

    /** The worker's log category, as before this class was taken out of {@link NodeMountWorker}. */
    private static final Logger LOG = Logger.getLogger(NodeMountWorker.class);

    private final VolumeOperations operations;
    private final Clock clock;
    private final LeaseGate lease;

    /** A handler without lease checks (fencing off). */
    public CommandHandler(VolumeOperations operations, Clock clock) {
        this(operations, clock, null);
    }

    /**
     * @param lease checked before any plugin call (stale epoch, mount without valid lease) and stamped on every
     *              result; null: no checks
     */
    public CommandHandler(VolumeOperations operations, Clock clock, LeaseGate lease) {
        this.operations = operations;
        this.clock = clock;
        this.lease = lease;
    }

    @Override
    public MountDone apply(NodeCommand command, Context cause) {
        SpanContext span = Span.fromContext(cause).getSpanContext();
        // the log format's %X{traceId}: Quarkus fills the MDC on Vert.x threads only, this is a worker thread
        if (span.isValid()) {
            MDC.put("traceId", span.getTraceId());
            MDC.put("spanId", span.getSpanId());
        }
        try (Scope ignored = cause.makeCurrent()) {
            if (lease != null) {
                // checked here, on the volume thread right before acting: after any freeze the lease is looked at
                // again before a queued command runs
                java.util.Optional<MountDone> refused = lease.refusal(command, clock.instant());
                if (refused.isPresent()) {
                    LOG.warnf("%s of volume %s/%s refused: %s", command.kind().wire(), command.namespace(),
                            command.volumeId(), refused.get().errorMessage());
                    return refused.get();
                }
            }
            MountDone done = stamp(operations.execute(command), command);
            LOG.infof("%s of volume %s/%s%s: %s", command.kind().wire(), command.namespace(), command.volumeId(),
                    command.allocationId() == null ? "" : " for allocation " + command.allocationId(),
                    done.succeeded() ? "done" : "failed with " + done.errorCode());
            return done;
        } catch (RuntimeException e) {
            LOG.errorf(e, "command %s failed unexpectedly", command.commandId());
            return stamp(new MountDone(command.commandId(), command.nodeId(), command.kind(), command.namespace(),
                    command.volumeId(), command.allocationId(), false, "WORKER_ERROR",
                    "node-mount-worker failed on this command: " + e.getClass().getSimpleName() + ": " + e.getMessage(),
                    Map.of(), null, null, clock.instant()), command);
        } finally {
            MDC.remove("traceId");
            MDC.remove("spanId");
        }
    }

    /** The result with the worker's lease epoch and the command's claim generation (issue 19 fencing tokens). */
    private MountDone stamp(MountDone done, NodeCommand command) {
        Long epoch = lease == null ? null : lease.epochOrNull();
        if (epoch == null && command.claimGeneration() == null) {
            return done;
        }
        return done.withFencing(epoch, command.claimGeneration());
    }
}
