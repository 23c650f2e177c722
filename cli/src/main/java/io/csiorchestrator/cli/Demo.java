package io.csiorchestrator.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.csi.mount.MountTable;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code csi demo}: starts the system, plays an upstream scheduler through one volume's life
 * (write on node-1, read on node-2) checking the mount table and the file at every step, and
 * tears everything down. Exit 0 only when every step succeeded.
 */
public final class Demo {

    static final String NAMESPACE = "default";
    static final String VOLUME = "demo-volume";
    static final String FILE = "hello.txt";
    static final Duration CLAIM_TIMEOUT = Duration.ofSeconds(120);
    static final Duration START_TIMEOUT = Duration.ofSeconds(180);

    private final Cluster cluster;
    private final PrintStream out;
    private final AtomicBoolean tornDown = new AtomicBoolean();
    private final Steps steps;

    private final List<ClaimClient.Outcome> outcomes = new java.util.concurrent.CopyOnWriteArrayList<>();
    private String externalId;
    private String writePath;
    private String readPath;
    private String content;

    public Demo(Cluster cluster, PrintStream out) {
        this.cluster = cluster;
        this.out = out;
        this.steps = new Steps(out, 15);
    }

    public Steps steps() {
        return steps;
    }

    /** The claims' and releases' outcomes, in order. */
    public List<ClaimClient.Outcome> outcomes() {
        return List.copyOf(outcomes);
    }

    public int run() {
        Thread hook = new Thread(this::teardownQuietly, "csi-demo-teardown");
        Runtime.getRuntime().addShutdownHook(hook);
        out.println("csi demo: work dir " + cluster.workDir() + " (logs in " + cluster.logs() + ")");
        boolean ok = steps.run("start Kafka (KRaft) and PostgreSQL", () -> {
            cluster.prepare();
            cluster.startInfra();
            return "kafka " + cluster.kafkaBootstrap();
        })
                && steps.run("start plugin-registry-service and claim-service", () -> {
                    Cluster.Proc registry = cluster.startRegistry();
                    Cluster.Proc claims = cluster.startClaims();
                    cluster.awaitReady(registry, cluster.registryUrl(), START_TIMEOUT);
                    steps.progress("registry ready");
                    cluster.awaitReady(claims, cluster.claimsUrl(), START_TIMEOUT);
                    return cluster.registryUrl() + ", " + cluster.claimsUrl();
                })
                && steps.run("start the hostpath plugin on node-1 and node-2", () -> {
                    for (String node : Cluster.NODES) {
                        cluster.startPlugin(node);
                    }
                    return "sockets " + cluster.pluginSocket("node-1").getFileName() + " under each plugins dir";
                })
                && steps.run("start node-mount-worker on node-1 and node-2", () -> {
                    List<Cluster.Proc> workers = new java.util.ArrayList<>();
                    for (String node : Cluster.NODES) {
                        workers.add(cluster.startWorker(node));
                    }
                    for (int i = 0; i < workers.size(); i++) {
                        cluster.awaitReady(workers.get(i), cluster.workerUrl(Cluster.NODES.get(i)), START_TIMEOUT);
                        if (i == 0) {
                            steps.progress(Cluster.NODES.get(i) + " ready");
                        }
                    }
                    return null;
                })
                && steps.run("plugin hostpath healthy on both nodes (plugin-registry-service)", this::awaitPluginHealthy)
                && steps.run("create the volume on the plugin (CSI CreateVolume)", this::createVolume)
                && steps.run("register the volume (POST /v1/volumes)", this::registerVolume)
                && steps.run("volume schedulable (claim-service has the plugin's status)", this::awaitSchedulable)
                && steps.run("claim for write on node-1, wait for ready", () -> {
                    ClaimClient.Outcome outcome = claim("alloc-writer", "node-1", ClaimMode.WRITE);
                    writePath = outcome.last().hostPath();
                    MountTable table = Mounts.table();
                    check(table.isMountPoint(Path.of(writePath)), "no mount at " + writePath);
                    check(!Mounts.readOnly(table, writePath), writePath + " is mounted read-only");
                    return "mounted read-write at " + writePath + inSystem(outcome);
                })
                && steps.run("write " + FILE + " through the mounted path", () -> {
                    content = "written on node-1 at " + Instant.now() + "\n";
                    Files.writeString(Path.of(writePath, FILE), content, StandardCharsets.UTF_8);
                    check(Files.readString(Path.of(writePath, FILE)).equals(content), "read-back differs");
                    return content.length() + " bytes";
                })
                && steps.run("release on node-1, wait for released", () -> {
                    ClaimClient.Outcome outcome = release("alloc-writer");
                    check(!Mounts.isMountPoint(writePath), writePath + " is still mounted after release");
                    return "unmounted" + inSystem(outcome);
                })
                && steps.run("claim read-only on node-2, wait for ready", () -> {
                    ClaimClient.Outcome outcome = claim("alloc-reader", "node-2", ClaimMode.READ);
                    readPath = outcome.last().hostPath();
                    MountTable table = Mounts.table();
                    check(table.isMountPoint(Path.of(readPath)), "no mount at " + readPath);
                    check(Mounts.readOnly(table, readPath), readPath + " is not mounted read-only");
                    return "mounted read-only at " + readPath + inSystem(outcome);
                })
                && steps.run("read " + FILE + " back on node-2", () -> {
                    String read = Files.readString(Path.of(readPath, FILE), StandardCharsets.UTF_8);
                    check(read.equals(content), "expected '" + content.strip() + "', read '" + read.strip() + "'");
                    try {
                        Files.writeString(Path.of(readPath, "should-fail"), "x");
                        throw new AssertionError("writing to the read-only mount " + readPath + " succeeded");
                    } catch (IOException expected) {
                        // read-only file system
                    }
                    return "content matches; writes are refused";
                })
                && steps.run("release on node-2, wait for released", () -> {
                    ClaimClient.Outcome outcome = release("alloc-reader");
                    check(!Mounts.isMountPoint(readPath), readPath + " is still mounted after release");
                    List<String> left = Mounts.under(cluster.workDir());
                    check(left.isEmpty(), "mounts left under the work dir: " + left);
                    return "no mount under " + cluster.workDir() + inSystem(outcome);
                });
        steps.skipTo(15);
        boolean down = steps.run("tear down, no mount left behind", () -> {
            List<String> killed = teardown();
            List<String> left = Mounts.unmountAllUnder(cluster.workDir());
            check(left.isEmpty(), "mounts were left under the work dir (now unmounted): " + left);
            check(killed.isEmpty(), "had to SIGKILL " + killed);
            return "all processes stopped";
        });
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running already
        }
        if (ok && down) {
            out.printf("csi demo: every step succeeded in %.1f s%n", steps.elapsedMillis() / 1000.0);
            return 0;
        }
        Steps.Result failed = steps.firstFailure();
        out.println("csi demo: FAILED at step '" + failed.name() + "': " + failed.detail());
        out.println("csi demo: logs of every process are in " + cluster.logs() + ":");
        for (Cluster.Proc proc : cluster.procs()) {
            out.println("  " + proc.name() + ": " + proc.log());
        }
        return 1;
    }

    private String awaitPluginHealthy() {
        Http registry = new Http("plugin-registry-service", cluster.registryUrl(), cluster.adminToken());
        JsonNode plugin = Wait.until("plugin hostpath with 2 healthy nodes and a healthy controller",
                START_TIMEOUT, null, () -> {
                    Http.Response r = registry.get("/v1/plugins/" + Cluster.PLUGIN_ID);
                    if (r.ok() && r.body() != null && r.body().path("nodesHealthy").asInt() >= Cluster.NODES.size()
                            && r.body().path("controllersHealthy").asInt() >= 1) {
                        return Optional.of(r.body());
                    }
                    return Optional.empty();
                });
        return "nodes " + plugin.path("nodesHealthy").asInt() + "/" + plugin.path("nodesExpected").asInt()
                + ", controllers " + plugin.path("controllersHealthy").asInt() + "/"
                + plugin.path("controllersExpected").asInt();
    }

    /**
     * CreateVolume on every node's plugin: the hostpath plugins share their volume directories but
     * each keeps its own state, so each must know the volume (same name, same id).
     */
    private String createVolume() {
        List<Path> sockets = new java.util.ArrayList<>();
        Cluster.NODES.forEach(node -> sockets.add(cluster.pluginSocket(node)));
        externalId = PluginVolumes.create(VOLUME, sockets);
        return "external id " + externalId;
    }

    private String registerVolume() throws IOException {
        Map<String, Object> volume = Map.of(
                "id", VOLUME, "namespace", NAMESPACE, "name", VOLUME, "externalId", externalId,
                "pluginId", Cluster.PLUGIN_ID, "accessMode", AccessMode.MULTI_NODE_SINGLE_WRITER.wire(),
                "attachmentMode", AttachmentMode.FILE_SYSTEM.wire());
        Http claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        Http.Response r = claims.post("/v1/volumes", Http.MAPPER.writeValueAsString(volume));
        check(r.status() == 201, "POST /v1/volumes answered " + r.status() + ": " + r.raw());
        return NAMESPACE + "/" + VOLUME;
    }

    private String awaitSchedulable() {
        Http claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        Wait.until("volume " + VOLUME + " schedulable", Duration.ofSeconds(60), null, () -> {
            Http.Response r = claims.get("/v1/volumes/" + NAMESPACE + "/" + VOLUME);
            return r.ok() && r.body() != null && r.body().path("schedulable").asBoolean()
                    ? Optional.of(true) : Optional.empty();
        });
        return null;
    }

    /** The system's share of a step: from the claim-requested record to the claim-status record. */
    static String inSystem(ClaimClient.Outcome outcome) {
        return outcome.systemMillis() < 0 ? "" : " (claim-requested → " + outcome.last().state().wire() + " in "
                + outcome.systemMillis() + " ms by record timestamps)";
    }

    private ClaimClient.Outcome claim(String alloc, String node, ClaimMode mode) {
        ClaimClient client = new ClaimClient(cluster.kafkaBootstrap(), Cluster.TOPIC_PREFIX);
        ClaimClient.Outcome outcome = client.request(ClaimClient.claim(NAMESPACE, VOLUME, alloc, node, mode,
                AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM), CLAIM_TIMEOUT,
                s -> steps.progress(s.state().wire()));
        outcomes.add(outcome);
        check(outcome.is(ClaimState.READY), "claim of " + alloc + " on " + node + ": " + outcome.describe());
        check(outcome.last().hostPath() != null, "ready without a host path");
        return outcome;
    }

    private ClaimClient.Outcome release(String alloc) {
        ClaimClient client = new ClaimClient(cluster.kafkaBootstrap(), Cluster.TOPIC_PREFIX);
        ClaimClient.Outcome outcome = client.request(ClaimClient.release(NAMESPACE, VOLUME, alloc), CLAIM_TIMEOUT,
                s -> steps.progress(s.state().wire()));
        outcomes.add(outcome);
        check(outcome.is(ClaimState.RELEASED), "release of " + alloc + ": " + outcome.describe());
        return outcome;
    }

    private List<String> teardown() {
        if (!tornDown.compareAndSet(false, true)) {
            return List.of();
        }
        return cluster.stopAll(Duration.ofSeconds(30));
    }

    private void teardownQuietly() {
        try {
            teardown();
        } finally {
            Mounts.unmountAllUnder(cluster.workDir());
        }
    }

    static void check(boolean condition, String message) {
        if (!condition) {
            throw new AssertionError(message);
        }
    }
}
