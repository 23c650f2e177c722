package io.csiorchestrator.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * One system for the ITs that only create, register, claim and release on node-1 ({@link #USERS}: no process killed,
 * no timer of their own): Kafka, PostgreSQL, plugin-registry-service, claim-service, node-1's hostpath plugin and
 * worker, started once for all of them (each start costs some 20 s of a 2-core CI) and stopped when the last of them
 * is done (or, when only some of them run, at the end of the run). A user's {@code @BeforeAll} takes it as a
 * parameter ({@code @ExtendWith(OneNodeSystem.Shared.class)}).
 *
 * <p>Each user sends claims with the system's own Kafka credential and scheduler key ({@link #client()}, from
 * {@link Cluster#claimClient}), never the process's CLI settings ({@link CliKafkaSecurity}): those are the last
 * started system's, and an IT that starts a system of its own in this JVM would otherwise change them under the
 * shared one. The failsafe run orders the users first, one after the other (cli/pom.xml), so the shared system is
 * not left running idle under the other ITs.
 */
public final class OneNodeSystem implements AutoCloseable {

    /** The IT classes that share the system; it stops once all of them ran. */
    static final List<Class<?>> USERS = List.of(ControllerPublicationIT.class, ProvisioningIT.class,
            PythonSchedulerIT.class);
    static final String NODE = "node-1";
    private static final Duration START = Duration.ofSeconds(180);
    private static final ExtensionContext.Namespace STORE = ExtensionContext.Namespace.create(OneNodeSystem.class);

    private final Cluster cluster;
    private final Http claims;
    private final ClaimClient client;

    private OneNodeSystem(Cluster cluster) {
        this.cluster = cluster;
        this.claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        this.client = cluster.claimClient();
    }

    public Cluster cluster() {
        return cluster;
    }

    /** claim-service's REST API with the system's admin token. */
    public Http claims() {
        return claims;
    }

    /** A claim client with this system's credential and scheduler key (see the class comment). */
    public ClaimClient client() {
        return client;
    }

    static OneNodeSystem start() throws Exception {
        Path home = Path.of(System.getProperty("csi.home", "..")).toAbsolutePath().normalize();
        Path work = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "one-node-");
        Cluster cluster = new Cluster(home, work, Cluster.Ports.free(), false);
        try {
            cluster.prepare();
            cluster.startInfra();
            Cluster.Proc registry = cluster.startRegistry();
            Cluster.Proc claimService = cluster.startClaims();
            cluster.awaitReady(registry, cluster.registryUrl(), START);
            cluster.awaitReady(claimService, cluster.claimsUrl(), START);
            cluster.startPlugin(NODE);
            cluster.awaitReady(cluster.startWorker(NODE), cluster.workerUrl(NODE), START);
            Http registryApi = new Http("plugin-registry-service", cluster.registryUrl(), cluster.adminToken());
            Wait.until("plugin hostpath healthy on " + NODE, START, null, () -> {
                Http.Response r = registryApi.get("/v1/plugins/" + Cluster.PLUGIN_ID);
                return r.ok() && r.body() != null && r.body().path("nodesHealthy").asInt() >= 1
                        && r.body().path("controllersHealthy").asInt() >= 1 ? Optional.of(true) : Optional.empty();
            });
            // as `up` does: the CLI commands the ITs run with --work-dir (scheduler init/check, kafka-credential) find
            // the broker, its certificate listener and the topic prefix there
            cluster.writeEndpoints();
            return new OneNodeSystem(cluster);
        } catch (Exception | Error e) {
            stop(cluster);
            throw e;
        }
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
     * Hands the shared system to a user's {@code @BeforeAll} (started on first use, kept in the run's root store, which
     * closes it at the end of the run at the latest) and stops it once every one of {@link #USERS} is done.
     */
    public static final class Shared implements ParameterResolver, AfterAllCallback {

        @Override
        public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
            return parameter.getParameter().getType() == OneNodeSystem.class;
        }

        @Override
        public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
            return context.getRoot().getStore(STORE).computeIfAbsent(OneNodeSystem.class, key -> {
                try {
                    return start();
                } catch (RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new IllegalStateException("the shared one-node system did not start", e);
                }
            }, OneNodeSystem.class);
        }

        @Override
        public void afterAll(ExtensionContext context) {
            ExtensionContext.Store store = context.getRoot().getStore(STORE);
            @SuppressWarnings("unchecked")
            Set<Class<?>> done = store.computeIfAbsent("done", key -> new HashSet<Class<?>>(), Set.class);
            done.add(context.getRequiredTestClass());
            if (done.containsAll(USERS)) {
                OneNodeSystem system = store.remove(OneNodeSystem.class, OneNodeSystem.class);
                if (system != null) {
                    system.close();
                }
            }
        }
    }
}
