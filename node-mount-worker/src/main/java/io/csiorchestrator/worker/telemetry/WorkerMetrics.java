package io.csiorchestrator.worker.telemetry;

import io.csiorchestrator.csi.CsiAttempt;
import io.csiorchestrator.csi.CsiAttemptListener;
import io.csiorchestrator.events.NodeCommandKind;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.function.ToDoubleFunction;

/**
 * The worker's Micrometer meters. Tags are low cardinality only: plugin id, CSI method, gRPC
 * status code, command kind, outcome; never a volume, allocation or node id (except {@link VolumeStatsGauges}'
 * per-volume series, as kubelet's volume stats name the claim).
 *
 * <ul>
 *   <li>{@code csi.rpc} (timer, histogram): every attempt of every CSI call, tags {@code plugin},
 *       {@code rpc} (e.g. NodeStageVolume), {@code code} (gRPC status code name, OK on success)</li>
 *   <li>{@code csi.rpc.retries} (counter): attempts after the first, tags {@code plugin}, {@code rpc}</li>
 *   <li>{@code csi.node.command} (timer, histogram): from taking a node command off the topic to the
 *       broker's acknowledgement of its mount-done, tags {@code kind} (mount, unmount,
 *       controller-publish, controller-unpublish) and {@code outcome} (succeeded, failed)</li>
 *   <li>{@code csi.node.heals} (counter): staging and publish targets the healer found damaged where
 *       the record says mounted and mounted again, tags {@code kind} ({@code not-mounted},
 *       {@code corrupted}), {@code path} ({@code staging}, {@code target}), {@code outcome}
 *       (succeeded, failed)</li>
 * </ul>
 * The gauges ({@code csi.plugins}, {@code csi.node.volumes.staged}, ...) are registered by
 * {@link #gauge}.
 */
public final class WorkerMetrics {

    public static final String CSI_RPC = "csi.rpc";
    public static final String CSI_RPC_RETRIES = "csi.rpc.retries";
    public static final String NODE_COMMAND = "csi.node.command";
    public static final String NODE_HEALS = "csi.node.heals";

    /** Histogram buckets of every latency timer: a CSI call or a command takes milliseconds to minutes. */
    static final Duration[] BUCKETS = {
            Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50),
            Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
            Duration.ofMillis(2500), Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(30),
            Duration.ofSeconds(60), Duration.ofMinutes(2), Duration.ofMinutes(5)};

    private final MeterRegistry registry;

    public WorkerMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    /** Meters nobody reads (plain unit tests). */
    public static WorkerMetrics unregistered() {
        return new WorkerMetrics(new SimpleMeterRegistry());
    }

    public MeterRegistry registry() {
        return registry;
    }

    /** Records every attempt of the calls made to {@code pluginId}; give it to the plugin's client options. */
    public CsiAttemptListener csiAttempts(String pluginId) {
        return attempt -> csiAttempt(pluginId, attempt);
    }

    void csiAttempt(String pluginId, CsiAttempt attempt) {
        String rpc = attempt.rpc().methodName();
        Timer.builder(CSI_RPC)
                .description("Duration and outcome of every attempt of every CSI call to a plugin on this node")
                .tag("plugin", pluginId)
                .tag("rpc", rpc)
                .tag("code", attempt.outcome().name())
                .serviceLevelObjectives(BUCKETS)
                .register(registry)
                .record(attempt.elapsed());
        if (attempt.number() > 1) {
            Counter.builder(CSI_RPC_RETRIES)
                    .description("CSI call attempts after the first (retries under the csi-client retry policy)")
                    .tag("plugin", pluginId)
                    .tag("rpc", rpc)
                    .register(registry)
                    .increment();
        }
    }

    /** One node command answered: {@code elapsed} from taking it to the acknowledged mount-done. */
    public void nodeCommand(NodeCommandKind kind, boolean succeeded, Duration elapsed) {
        Timer.builder(NODE_COMMAND)
                .description("Node commands from taking them off node-commands to the acknowledged mount-done")
                .tag("kind", kind.wire())
                .tag("outcome", succeeded ? "succeeded" : "failed")
                .serviceLevelObjectives(BUCKETS)
                .register(registry)
                .record(elapsed);
    }

    /** One damaged path healed (or tried): {@code kind} not-mounted or corrupted, {@code path} staging or target. */
    public void heal(String kind, String path, boolean succeeded) {
        Counter.builder(NODE_HEALS)
                .description("Staging and publish targets found damaged (not mounted, corrupted) where the record "
                        + "says mounted, and mounted again by the healer")
                .tag("kind", kind)
                .tag("path", path)
                .tag("outcome", succeeded ? "succeeded" : "failed")
                .register(registry)
                .increment();
    }

    /** A gauge read from {@code owner} (held strongly: the worker outlives restarts of its parts). */
    public <T> void gauge(String name, String description, T owner, ToDoubleFunction<T> value, String... tags) {
        Gauge.builder(name, owner, value).description(description).tags(tags).strongReference(true).register(registry);
    }
}
