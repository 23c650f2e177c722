package io.csiorchestrator.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A running system shared by the IT classes of one {@link Shape} (each start costs some 45 s of CPU and 20-30 s of a
 * 2-core CI): Kafka, PostgreSQL, plugin-registry-service, claim-service, and a hostpath plugin and a worker on each of
 * the shape's nodes, started for the first of its users and stopped when the last of them is done (or, when only some
 * of them run, at the end of the run). A user's {@code @BeforeAll} takes it as a parameter
 * ({@code @ExtendWith(SharedSystem.Shared.class)}); the shape is the one whose users name the class.
 *
 * <p>Each user sends claims with the system's own Kafka credential and scheduler key ({@link #client()}, from
 * {@link Cluster#claimClient}), never the process's CLI settings ({@link CliKafkaSecurity}): those are the last
 * started system's, and an IT that starts a system of its own in this JVM would otherwise change them under the
 * shared one. The failsafe run orders the users of a shape one after the other ({@code @Order}, system-it/pom.xml),
 * so a shared system is not left running idle under the other ITs.
 */
public final class SharedSystem implements AutoCloseable {

    /** The shared systems: their nodes, and the IT classes that share each, in their run order. */
    public enum Shape {
        /** node-1 only, for ITs that create, register, claim and release there: no process killed, no timer of their own. */
        ONE_NODE(List.of("node-1"), ControllerPublicationIT.class, ProvisioningIT.class, PythonSchedulerIT.class),
        /**
         * node-1 and node-2, for ITs that kill node-1's hostpath plugin: each user starts with every plugin running
         * ({@link #pluginsRunning()}); the last user may leave node-1's plugin dead.
         */
        TWO_NODES(Cluster.NODES, StatusPageIT.class, PluginOutageIT.class);

        final List<String> nodes;
        final List<Class<?>> users;

        Shape(List<String> nodes, Class<?>... users) {
            this.nodes = nodes;
            this.users = Arrays.asList(users);
        }

        static Shape of(Class<?> user) {
            return Arrays.stream(values()).filter(s -> s.users.contains(user)).findFirst().orElseThrow(
                    () -> new IllegalStateException(user.getName() + " is no user of a SharedSystem.Shape"));
        }
    }

    /** The one node of {@link Shape#ONE_NODE}. */
    static final String NODE = "node-1";
    private static final Duration START = Duration.ofSeconds(180);
    private static final ExtensionContext.Namespace STORE = ExtensionContext.Namespace.create(SharedSystem.class);

    private final Shape shape;
    private final Cluster cluster;
    private final Cluster.Proc claimService;
    private final Map<String, Cluster.Proc> plugins;
    private final Http claims;
    private final Http registry;
    private final ClaimClient client;

    private SharedSystem(Shape shape, Cluster cluster, Cluster.Proc claimService, Map<String, Cluster.Proc> plugins) {
        this.shape = shape;
        this.cluster = cluster;
        this.claimService = claimService;
        this.plugins = plugins;
        this.claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        this.registry = new Http("plugin-registry-service", cluster.registryUrl(), cluster.adminToken());
        this.client = cluster.claimClient();
    }

    public Cluster cluster() {
        return cluster;
    }

    /** claim-service's process (its log). */
    public Cluster.Proc claimService() {
        return claimService;
    }

    /** claim-service's REST API with the system's admin token. */
    public Http claims() {
        return claims;
    }

    /** plugin-registry-service's REST API with the system's admin token. */
    public Http registry() {
        return registry;
    }

    /** A claim client with this system's credential and scheduler key (see the class comment). */
    public ClaimClient client() {
        return client;
    }

    /** The hostpath plugin process on {@code node} as last started. */
    public Cluster.Proc plugin(String node) {
        return plugins.get(node);
    }

    /** Starts the hostpath plugin on {@code node} again (a new process on the same socket) and returns it. */
    public Cluster.Proc restartPlugin(String node) throws java.io.IOException {
        Cluster.Proc started = cluster.startPlugin(node);
        plugins.put(node, started);
        return started;
    }

    /**
     * Every node's hostpath plugin running and healthy in plugin-registry-service: a plugin a former user killed is
     * started again first. What a user of {@link Shape#TWO_NODES} starts from.
     */
    public void pluginsRunning() throws java.io.IOException {
        for (String node : shape.nodes) {
            if (!plugins.get(node).handle().isAlive()) {
                restartPlugin(node);
            }
        }
        awaitPluginsHealthy(cluster, registry, shape.nodes.size());
    }

    static SharedSystem start(Shape shape) throws Exception {
        Path home = Path.of(System.getProperty("csi.home", "..")).toAbsolutePath().normalize();
        Path work = Files.createTempDirectory(Path.of("target").toAbsolutePath(),
                shape.name().toLowerCase().replace('_', '-') + "-");
        Cluster cluster = new Cluster(home, work, Cluster.Ports.free(), false);
        try {
            cluster.prepare();
            cluster.startInfra();
            Cluster.Proc registry = cluster.startRegistry();
            Cluster.Proc claimService = cluster.startClaims();
            cluster.awaitReady(registry, cluster.registryUrl(), START);
            cluster.awaitReady(claimService, cluster.claimsUrl(), START);
            Map<String, Cluster.Proc> plugins = new LinkedHashMap<>();
            for (String node : shape.nodes) {
                plugins.put(node, cluster.startPlugin(node));
            }
            Map<String, Cluster.Proc> workers = new LinkedHashMap<>();
            for (String node : shape.nodes) {
                workers.put(node, cluster.startWorker(node));
            }
            for (Map.Entry<String, Cluster.Proc> worker : workers.entrySet()) {
                cluster.awaitReady(worker.getValue(), cluster.workerUrl(worker.getKey()), START);
            }
            awaitPluginsHealthy(cluster, new Http("plugin-registry-service", cluster.registryUrl(),
                    cluster.adminToken()), shape.nodes.size());
            // as `up` does: the CLI commands the ITs run with --work-dir (scheduler init/check, kafka-credential) find
            // the broker, its certificate listener and the topic prefix there
            cluster.writeEndpoints();
            return new SharedSystem(shape, cluster, claimService, plugins);
        } catch (Exception | Error e) {
            stop(cluster);
            throw e;
        }
    }

    private static void awaitPluginsHealthy(Cluster cluster, Http registry, int nodes) {
        Wait.until("plugin hostpath healthy on " + nodes + " node(s)", START, null, () -> {
            Http.Response r = registry.get("/v1/plugins/" + Cluster.PLUGIN_ID);
            return r.ok() && r.body() != null && r.body().path("nodesHealthy").asInt() == nodes
                    && r.body().path("controllersHealthy").asInt() >= 1 ? Optional.of(true) : Optional.empty();
        });
    }

    @Override
    public void close() {
        stop(cluster);
    }

    private static void stop(Cluster cluster) {
        cluster.stopAll(Duration.ofSeconds(30));
        Mounts.unmountAllUnder(cluster.workDir());
    }

    /**
     * Hands a user's shared system to its {@code @BeforeAll} (started on first use, kept in the run's root store, which
     * closes it at the end of the run at the latest) and stops it once every user of its shape is done.
     */
    public static final class Shared implements ParameterResolver, AfterAllCallback {

        @Override
        public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
            return parameter.getParameter().getType() == SharedSystem.class;
        }

        @Override
        public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
            Shape shape = Shape.of(context.getRequiredTestClass());
            return context.getRoot().getStore(STORE).computeIfAbsent(shape, key -> {
                try {
                    return start(shape);
                } catch (RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new IllegalStateException("the shared " + shape + " system did not start", e);
                }
            }, SharedSystem.class);
        }

        @Override
        public void afterAll(ExtensionContext context) {
            Shape shape = Shape.of(context.getRequiredTestClass());
            ExtensionContext.Store store = context.getRoot().getStore(STORE);
            @SuppressWarnings("unchecked")
            Set<Class<?>> done = store.computeIfAbsent("done", key -> new HashSet<Class<?>>(), Set.class);
            done.add(context.getRequiredTestClass());
            if (done.containsAll(shape.users)) {
                SharedSystem system = store.remove(shape, SharedSystem.class);
                if (system != null) {
                    system.close();
                }
            }
        }
    }
}
