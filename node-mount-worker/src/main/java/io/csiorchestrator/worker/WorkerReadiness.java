package io.csiorchestrator.worker;

import io.csiorchestrator.worker.plugin.PluginSupervisor;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.HealthCheckResponseBuilder;
import org.eclipse.microprofile.health.Readiness;

/**
 * Readiness of the worker with every plugin of the node: up when the worker runs, its restore is
 * done and every registered plugin is healthy; each plugin is listed with its state.
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
        if (worker.plugins() != null) {
            for (PluginSupervisor s : worker.plugins().all()) {
                boolean healthy = s.healthy();
                up &= healthy;
                builder.withData("plugin " + s.pluginId(), healthy ? "healthy (" + s.type().wire() + ")"
                        : "unhealthy: " + s.description());
            }
        }
        return builder.status(up).build();
    }
}
