package io.csiorchestrator.worker;

import io.csiorchestrator.worker.plugin.PluginSupervisor;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Readiness of the worker itself: up when the worker runs and its restore (its record) is done, with fencing on only
 * with a valid lease and, with the guard on, a running fence guard. A plugin's
 * health is the plugin's own (plugin-health, node events, {@code csi_plugins}), not the worker's: one broken
 * plugin does not take the node out. Each plugin is still listed with its state, for operators.
 */
@Readiness
@ApplicationScoped
public class WorkerReadiness implements HealthCheck {

    private final NodeMountWorker worker;

    public WorkerReadiness(NodeMountWorker worker) {
        this.worker = worker;
    }

    @Override
    public HealthCheckResponse call() {
        HealthCheckResponseBuilder builder = HealthCheckResponse.named("node-mount-worker");
        boolean up = worker.started() && !worker.restoring();
        builder.withData("restoring", worker.restoring());
        if (worker.lease() != null && worker.lease().isEnabled()) {
            // issue 19: no valid lease, no mounts: not ready (so ./csi up waits for the first grant)
            String noLease = worker.lease().invalidReason();
            builder.withData("lease", noLease == null ? "valid (epoch " + worker.lease().epochOrNull() + ")" : noLease);
            up = up && noLease == null;
        }
        io.csiorchestrator.worker.lease.FenceGuard guard = worker.fenceGuard();
        if (guard != null) {
            // a worker whose guard cannot be (re)started holds fenced mounts that nothing unmounts if it freezes
            String down = guard.down();
            builder.withData("fence guard", down == null ? "running (pid " + guard.pid() + ")" : "down: " + down);
            up = up && down == null;
        }
        if (worker.plugins() != null) {
            for (PluginSupervisor s : worker.plugins().all()) {
                boolean healthy = s.healthy();
                builder.withData("plugin " + s.pluginId(), healthy ? "healthy (" + s.type().wire() + ")"
                        : "unhealthy: " + s.description());
            }
        }
        return builder.status(up).build();
    }
}
