package io.csiorchestrator.worker;

import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
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

    public CommandHandler(VolumeOperations operations, Clock clock) {
        this.operations = operations;
        this.clock = clock;
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
            MountDone done = operations.execute(command);
            LOG.infof("%s of volume %s/%s%s: %s", command.kind().wire(), command.namespace(), command.volumeId(),
                    command.allocationId() == null ? "" : " for allocation " + command.allocationId(),
                    done.succeeded() ? "done" : "failed with " + done.errorCode());
            return done;
        } catch (RuntimeException e) {
            LOG.errorf(e, "command %s failed unexpectedly", command.commandId());
            return new MountDone(command.commandId(), command.nodeId(), command.kind(), command.namespace(),
                    command.volumeId(), command.allocationId(), false, "WORKER_ERROR",
                    "node-mount-worker failed on this command: " + e.getClass().getSimpleName() + ": " + e.getMessage(),
                    Map.of(), null, null, clock.instant());
        } finally {
            MDC.remove("traceId");
            MDC.remove("spanId");
        }
    }
}
