package io.csiorchestrator.simulator;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.csiorchestrator.events.PathSafeId;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.worker.mount.SecretOpener;
import io.csiorchestrator.worker.telemetry.Telemetry;
import io.csiorchestrator.worker.telemetry.WorkerMetrics;
import io.csiorchestrator.worker.telemetry.WorkerTracing;
import io.micrometer.prometheus.PrometheusConfig;
import io.micrometer.prometheus.PrometheusMeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.jboss.logging.Logger;

/**
 * The node simulator's process: {@code --nodes N} simulated nodes ({@link NodeFleet}) and one HTTP port for
 * all of them with the worker's endpoints: {@code /q/health/live}, {@code /q/health/ready} (200 once every node
 * reads its partition of node-commands and the broker acknowledged its first report) and {@code /q/metrics}
 * (Prometheus text of the worker's meters, summed over the nodes: no meter carries a node id). Stops on SIGTERM.
 */
public final class NodeSimulator {

    private static final Logger LOG = Logger.getLogger(NodeSimulator.class);

    static final String USAGE = """
            usage: java -jar node-simulator.jar --nodes N --root DIR [options]
              --nodes N                   how many simulated nodes (1..10000)
              --root DIR                  each node's worker root is DIR/<node id> (records, stagings, event spool)
              --node-prefix P             node ids P1..PN (default sim-node-)
              --kafka HOST:PORT           bootstrap servers (default localhost:9092)
              --topic-prefix P            csi.topics.prefix (default empty)
              --plugin-id ID              the simulated plugin's id on every node (default simulated)
              --plugin-delay D            time each plugin call takes, e.g. 1ms, 0, 20ms, 1s (default 1ms)
              --controller-publish        advertise PUBLISH_UNPUBLISH_VOLUME (claims then need a controller publish)
              --heartbeat-interval D      plugin-health heartbeat (default 30s, the worker's)
              --lease-ttl D               request every node's lease every D/6 from plugin-registry-service, so claims
                                          on the nodes keep working with fencing (default env CSI_FENCING_LEASE_TTL
                                          or 30s; 0 = no lease requests)
              --concurrency N             volumes operated on at the same time per node (default 4, the worker's)
              --http-port N               health and metrics (default 8083; 0 for a free port)
            Keys: CSI_IDENTITY_DIR names the directory of each node's node-<id>.key (record signatures) and
            node-<id>.seal.key (opens the secrets sealed for that node), as ./csi up makes them.
            """;

    private static final Set<String> FLAGS = Set.of("controller-publish");

    /** The command line, checked. */
    record Options(int nodes, Path root, String nodePrefix, String kafka, String topicPrefix, String pluginId,
                   Duration pluginDelay, boolean controllerPublish, Duration heartbeatInterval, int concurrency,
                   int httpPort, Duration leaseTtl) {

        List<String> nodeIds() {
            List<String> ids = new ArrayList<>();
            for (int i = 1; i <= nodes; i++) {
                ids.add(PathSafeId.require("node id", nodePrefix + i));
            }
            return ids;
        }
    }

    private NodeSimulator() {
    }

    public static void main(String[] argv) throws Exception {
        Options options;
        try {
            options = parse(argv);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.print(USAGE);
            System.exit(2);
            return;
        }
        PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Telemetry telemetry = new Telemetry(new WorkerMetrics(meters), tracing());
        NodeFleet fleet = new NodeFleet(new NodeFleet.Settings(options.kafka(), new TopicCatalog(options.topicPrefix()),
                options.root().toAbsolutePath().normalize(), options.nodeIds(), options.pluginId(),
                options.pluginDelay(), options.controllerPublish(), options.heartbeatInterval(), options.concurrency(),
                options.leaseTtl(), SecretOpener.none()),
                telemetry);
        HttpServer http = HttpServer.create(new InetSocketAddress("0.0.0.0", options.httpPort()), 50);
        http.createContext("/q/health/live", ex -> answer(ex, 200, "application/json", "{\"status\":\"UP\"}"));
        http.createContext("/q/health/ready", ex -> {
            int ready = fleet.readyNodes();
            int all = options.nodes();
            answer(ex, ready == all ? 200 : 503, "application/json", "{\"status\":\"" + (ready == all ? "UP" : "DOWN")
                    + "\",\"checks\":[{\"name\":\"simulated nodes\",\"status\":\"" + (ready == all ? "UP" : "DOWN")
                    + "\",\"data\":{\"ready\":" + ready + ",\"nodes\":" + all + "}}]}");
        });
        http.createContext("/q/metrics", ex -> answer(ex, 200, "text/plain; version=0.0.4; charset=utf-8",
                meters.scrape()));
        http.start();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping the simulated nodes");
            fleet.close();
            http.stop(0);
            stopped.countDown();
        }, "sim-shutdown"));
        fleet.start();
        LOG.infof("node simulator: %d nodes (%s1..%s%d), plugin %s, %d us per call, health and metrics on port %d",
                options.nodes(), options.nodePrefix(), options.nodePrefix(), options.nodes(), options.pluginId(),
                options.pluginDelay().toNanos() / 1000, http.getAddress().getPort());
        stopped.await();
    }

    /** Spans as the worker makes them (parent-based, always on, W3C context in the records), exported nowhere. */
    static WorkerTracing tracing() {
        OpenTelemetry otel = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().build())
                .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
                .build();
        return new WorkerTracing(otel, otel.getTracer("node-simulator"));
    }

    private static void answer(HttpExchange ex, int status, String type, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(bytes);
        }
    }

    static Options parse(String[] argv) {
        Map<String, String> opts = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i++) {
            String arg = argv[i];
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + arg + "'");
            }
            String name = arg.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else if (FLAGS.contains(name)) {
                value = "true";
            } else if (i + 1 < argv.length) {
                value = argv[++i];
            } else {
                throw new IllegalArgumentException("--" + name + " needs a value");
            }
            if (!Set.of("nodes", "root", "node-prefix", "kafka", "topic-prefix", "plugin-id", "plugin-delay",
                    "controller-publish", "heartbeat-interval", "concurrency", "http-port", "lease-ttl").contains(name)) {
                throw new IllegalArgumentException("unknown option --" + name);
            }
            opts.put(name, value);
        }
        if (!opts.containsKey("nodes") || !opts.containsKey("root")) {
            throw new IllegalArgumentException("--nodes and --root are required");
        }
        Options options = new Options(number(opts, "nodes", 1, 10_000, 0), Path.of(opts.get("root")),
                opts.getOrDefault("node-prefix", "sim-node-"), opts.getOrDefault("kafka", "localhost:9092"),
                opts.getOrDefault("topic-prefix", ""),
                PathSafeId.require("--plugin-id", opts.getOrDefault("plugin-id", "simulated")),
                duration("plugin-delay", opts.getOrDefault("plugin-delay", "1ms")),
                Boolean.parseBoolean(opts.getOrDefault("controller-publish", "false")),
                duration("heartbeat-interval", opts.getOrDefault("heartbeat-interval", "30s")),
                number(opts, "concurrency", 1, 256, 4), number(opts, "http-port", 0, 65535, 8083),
                duration("lease-ttl", opts.getOrDefault("lease-ttl",
                        Optional.ofNullable(System.getenv("CSI_FENCING_LEASE_TTL")).orElse("30s"))));
        if (options.heartbeatInterval().isZero()) {
            throw new IllegalArgumentException("--heartbeat-interval must be positive");
        }
        options.nodeIds(); // every id a PathSafeId
        return options;
    }

    private static int number(Map<String, String> opts, String name, int min, int max, int fallback) {
        String value = opts.get(name);
        if (value == null) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(value);
            if (n < min || n > max) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a whole number from " + min + " to " + max
                    + ", not '" + value + "'");
        }
    }

    /** {@code 0}, {@code 250us}, {@code 1ms}, {@code 2s}, {@code 1m}. */
    static Duration duration(String name, String value) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d{1,9})(us|ms|s|m)?").matcher(value.trim());
        if (!m.matches() || (m.group(2) == null && !m.group(1).equals("0"))) {
            throw new IllegalArgumentException("--" + name + " must be a duration like 0, 500us, 1ms, 2s or 1m, not '"
                    + value + "'");
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2) == null ? "ms" : m.group(2)) {
            case "us" -> Duration.ofNanos(n * 1000);
            case "ms" -> Duration.ofMillis(n);
            case "s" -> Duration.ofSeconds(n);
            default -> Duration.ofMinutes(n);
        };
    }
}
