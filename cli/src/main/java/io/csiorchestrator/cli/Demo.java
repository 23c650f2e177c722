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
 * {@code csi demo}: starts the system, plays an upstream scheduler through one volume's life checking the mount
 * table and the file at every step: created through claim-service (CSI CreateVolume on a controller's node), written
 * on node-1, read on node-2, snapshotted, restored into a new volume whose file is read back, then both volumes and
 * the snapshot deleted through claim-service; and tears everything down. Exit 0 only when every step succeeded.
 */
public final class Demo {

    static final String NAMESPACE = "default";
    static final String VOLUME = "demo-volume";
    static final String FILE = "hello.txt";
    /** The snapshot of {@link #VOLUME} after node-2 read it, and the volume restored from it. */
    static final String SNAPSHOT = "demo-snapshot";
    static final String RESTORED = "demo-restored";
    /** The demo's steps, the last being the teardown (run even after a failure). */
    public static final int STEPS = 20;
    /** A volume registered in node-2's topology only, claimed on node-1 to show a rejection by topology (issue 34). */
    static final String ELSEWHERE = "demo-elsewhere";
    /** Written beside {@link #FILE} so that the volume's usage moves by more than 1 % of its 1 MiB (issue 34). */
    static final int USAGE_BYTES = 64 * 1024;
    /** The workers' volume stats poll in the demo (a minute by default). */
    static final Duration STATS_EVERY = Duration.ofSeconds(2);
    static final String CAPACITY = "1MiB";
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
        this.steps = new Steps(out, STEPS);
        cluster.volumeStatsEvery(STATS_EVERY);
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
                    cluster.startPlugins(Cluster.NODES);
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
                && steps.run("create the volume through claim-service (CSI CreateVolume on a controller's node)",
                        this::createVolume)
                && steps.run("volume schedulable (claim-service has the plugin's status)", this::awaitSchedulable)
                && steps.run("claim for write on node-1, wait for ready", () -> {
                    ClaimClient.Outcome outcome = claim(VOLUME, "alloc-writer", "node-1", ClaimMode.WRITE);
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
                && steps.run("usage of the volume on node-1 (NodeGetVolumeStats, the volume's REST detail)",
                        this::usage)
                && steps.run("release on node-1, wait for released", () -> {
                    ClaimClient.Outcome outcome = release(VOLUME, "alloc-writer");
                    check(!Mounts.isMountPoint(writePath), writePath + " is still mounted after release");
                    return "unmounted" + inSystem(outcome);
                })
                && steps.run("claim read-only on node-2, wait for ready", () -> {
                    ClaimClient.Outcome outcome = claim(VOLUME, "alloc-reader", "node-2", ClaimMode.READ);
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
                    ClaimClient.Outcome outcome = release(VOLUME, "alloc-reader");
                    check(!Mounts.isMountPoint(readPath), readPath + " is still mounted after release");
                    List<String> left = Mounts.under(cluster.workDir());
                    check(left.isEmpty(), "mounts left under the work dir: " + left);
                    return "no mount under " + cluster.workDir() + inSystem(outcome);
                })
                && steps.run("snapshot the volume (CSI CreateSnapshot, wait for ready_to_use)", this::snapshot)
                && steps.run("restore the snapshot into a new volume (CreateVolume from the snapshot)", this::restore)
                && steps.run("claim the restored volume read-only on node-1, read " + FILE + ", release", () -> {
                    ClaimClient.Outcome outcome = claim(RESTORED, "alloc-restored", "node-1", ClaimMode.READ);
                    String path = outcome.last().hostPath();
                    check(Mounts.readOnly(Mounts.table(), path), path + " is not mounted read-only");
                    String read = Files.readString(Path.of(path, FILE), StandardCharsets.UTF_8);
                    check(read.equals(content), "restored " + FILE + ": expected '" + content.strip() + "', read '"
                            + read.strip() + "'");
                    release(RESTORED, "alloc-restored");
                    check(!Mounts.isMountPoint(path), path + " is still mounted after release");
                    return "the snapshot's content, read at " + path;
                })
                && steps.run("claim a volume of node-2's topology on node-1: rejected", this::rejectedByTopology)
                && steps.run("delete both volumes and the snapshot through claim-service", this::deleteAll);
        steps.skipTo(STEPS);
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
     * {@code ./csi volume create demo-volume --capacity 1MiB}'s path: POST /v1/provisioned-volumes; claim-service sends
     * CreateVolume (name {@code default.demo-volume}) to a healthy controller instance's node worker and registers the
     * volume with the plugin's answer. Both nodes' plugins share their controller state, so either may answer.
     */
    private String createVolume() throws IOException {
        JsonNode created = provision(VOLUME, null);
        externalId = created.path("externalId").asText();
        return "externalId " + externalId + ", " + created.path("capacityBytes").asLong() + " bytes, registered as "
                + NAMESPACE + "/" + VOLUME;
    }

    /** POST /v1/provisioned-volumes of {@code id} (from {@code snapshot} when not null); waits until created. */
    private JsonNode provision(String id, String snapshot) throws IOException {
        Map<String, Object> volume = new java.util.LinkedHashMap<>(Map.of(
                "id", id, "namespace", NAMESPACE, "name", id, "pluginId", Cluster.PLUGIN_ID,
                "accessMode", AccessMode.MULTI_NODE_SINGLE_WRITER.wire(),
                "attachmentMode", AttachmentMode.FILE_SYSTEM.wire(), "capacityMin", CAPACITY));
        if (snapshot != null) {
            volume.put("source", Map.of("snapshot", snapshot));
        }
        Http.Response r = claims().post("/v1/provisioned-volumes", Http.MAPPER.writeValueAsString(volume));
        check(r.status() == 202, "POST /v1/provisioned-volumes answered " + r.status() + ": " + r.raw());
        JsonNode done = Wait.until("volume " + id + " created", CLAIM_TIMEOUT, null, () -> {
            Http.Response p = claims().get("/v1/provisioned-volumes/" + NAMESPACE + "/" + id);
            return p.ok() && p.body() != null && !p.body().path("phase").asText().equals("creating")
                    ? Optional.of(p.body()) : Optional.empty();
        });
        check(done.path("phase").asText().equals("created"), "volume " + id + " not created: " + done);
        return done;
    }

    /** {@code ./csi volume snapshot create demo-snapshot --volume demo-volume}'s path: waits until ready to use. */
    private String snapshot() throws IOException {
        Map<String, Object> body = Map.of("namespace", NAMESPACE, "id", SNAPSHOT, "sourceVolume", VOLUME,
                "parameters", Map.of());
        Http.Response r = claims().post("/v1/snapshots", Http.MAPPER.writeValueAsString(body));
        check(r.status() == 202, "POST /v1/snapshots answered " + r.status() + ": " + r.raw());
        JsonNode done = Wait.until("snapshot " + SNAPSHOT + " ready", CLAIM_TIMEOUT, null, () -> {
            Http.Response p = claims().get("/v1/snapshots/" + NAMESPACE + "/" + SNAPSHOT);
            return p.ok() && p.body() != null && !p.body().path("phase").asText().equals("creating")
                    ? Optional.of(p.body()) : Optional.empty();
        });
        check(done.path("phase").asText().equals("created"), "snapshot " + SNAPSHOT + " not created: " + done);
        return "snapshot " + done.path("externalId").asText() + " of " + VOLUME + ", " + done.path("sizeBytes").asLong()
                + " bytes, ready to use";
    }

    /** {@code ./csi volume create demo-restored --capacity 1MiB --source-snapshot demo-snapshot}'s path. */
    private String restore() throws IOException {
        JsonNode created = provision(RESTORED, SNAPSHOT);
        check(!created.path("externalId").asText().equals(externalId), "the restore gave the source's volume back");
        return "externalId " + created.path("externalId").asText() + " from " + SNAPSHOT + ", registered as "
                + NAMESPACE + "/" + RESTORED;
    }

    /**
     * DELETE the restored volume, the snapshot and the volume (in that order: CSI lets a plugin refuse to delete a
     * volume that has snapshots); each waits until claim-service has it gone (DeleteVolume / DeleteSnapshot done).
     */
    private String deleteAll() {
        for (String path : List.of("/v1/provisioned-volumes/" + NAMESPACE + "/" + RESTORED,
                "/v1/snapshots/" + NAMESPACE + "/" + SNAPSHOT, "/v1/provisioned-volumes/" + NAMESPACE + "/" + VOLUME)) {
            Http.Response r = claims().delete(path);
            check(r.status() == 202, "DELETE " + path + " answered " + r.status() + ": " + r.raw());
            JsonNode failed = Wait.until(path + " deleted", CLAIM_TIMEOUT, null, () -> {
                Http.Response p = claims().get(path);
                if (p.status() == 404) {
                    return Optional.of(Http.MAPPER.createObjectNode());
                }
                return p.ok() && p.body() != null && p.body().path("phase").asText().equals("delete-failed")
                        ? Optional.of(p.body()) : Optional.empty();
            });
            check(failed.isEmpty(), path + " not deleted: " + failed);
        }
        check(claims().get("/v1/volumes/" + NAMESPACE + "/" + VOLUME).status() == 404, VOLUME + " is still registered");
        return RESTORED + ", " + SNAPSHOT + ", " + VOLUME + " deleted by the plugin and deregistered";
    }

    private Http claims() {
        return new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
    }

    /**
     * Issue 34: {@link #USAGE_BYTES} more written through node-1's mount, then the usage node-1's worker reports
     * (NodeGetVolumeStats of the published path, a volume-usage event) as claim-service's REST detail shows it.
     */
    private String usage() throws IOException {
        Files.write(Path.of(writePath, "usage.bin"), new byte[USAGE_BYTES]);
        Http claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        com.fasterxml.jackson.databind.JsonNode seen = Wait.until("the usage of " + VOLUME + " on node-1 reported",
                Duration.ofSeconds(60), null, () -> {
                    Http.Response r = claims.get("/v1/volumes/" + NAMESPACE + "/" + VOLUME);
                    if (!r.ok() || r.body() == null) {
                        return Optional.<com.fasterxml.jackson.databind.JsonNode>empty();
                    }
                    for (com.fasterxml.jackson.databind.JsonNode u : r.body().path("usage")) {
                        if ("node-1".equals(u.path("nodeId").asText()) && u.path("usedBytes").asLong() >= USAGE_BYTES) {
                            return Optional.of(u);
                        }
                    }
                    return Optional.empty();
                });
        String text = VolumeUsageTable.bytes(seen.path("usedBytes")) + " of " + VolumeUsageTable.bytes(
                seen.path("capacityBytes")) + " used, " + VolumeUsageTable.bytes(seen.path("availableBytes"))
                + " available";
        return seen.path("inodes").isNumber() ? text + "; " + seen.path("inodesUsed").asLong() + " of "
                + seen.path("inodes").asLong() + " inodes used" : text;
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

    /**
     * Issue 34: what a scheduler that ignores placement gets. A volume registered with node-2's topology segment only
     * (nothing is created on the plugin) is claimed on node-1: claim-service rejects it with the precise reason; the
     * registration is removed again.
     */
    private String rejectedByTopology() {
        Http claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        String body = "{\"volumes\":[{\"id\":\"" + ELSEWHERE + "\",\"namespace\":\"" + NAMESPACE
                + "\",\"externalId\":\"" + ELSEWHERE + "\",\"pluginId\":\"" + Cluster.PLUGIN_ID
                + "\",\"accessMode\":\"single-node-writer\",\"attachmentMode\":\"file-system\","
                + "\"topology\":{\"topology.hostpath.csi.csiorchestrator.io/node\":\"node-2\"}}]}";
        Http.Response registered = claims.post("/v1/volumes", body);
        check(registered.status() == 201, "register " + ELSEWHERE + ": " + registered.status() + " " + registered.raw());
        ClaimClient client = new ClaimClient(cluster.kafkaBootstrap(), Cluster.TOPIC_PREFIX);
        ClaimClient.Outcome outcome = client.request(ClaimClient.claim(NAMESPACE, ELSEWHERE, "alloc-misplaced", "node-1",
                ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM), CLAIM_TIMEOUT,
                s -> steps.progress(s.state().wire()));
        String reason = outcome.last() == null ? null : outcome.last().reason();
        check(outcome.is(ClaimState.REJECTED) && reason != null && reason.contains("node node-1 is outside the volume's"
                + " topology"), "claim of " + ELSEWHERE + " on node-1: " + outcome.describe());
        Http.Response removed = claims.delete("/v1/volumes/" + NAMESPACE + "/" + ELSEWHERE);
        check(removed.ok(), "remove " + ELSEWHERE + ": " + removed.status() + " " + removed.raw());
        return "rejected: " + reason.substring(reason.indexOf("node node-1 is outside"));
    }

    /** The system's share of a step: from the claim-requested record to the claim-status record. */
    static String inSystem(ClaimClient.Outcome outcome) {
        return outcome.systemMillis() < 0 ? "" : " (claim-requested → " + outcome.last().state().wire() + " in "
                + outcome.systemMillis() + " ms by record timestamps)";
    }

    private ClaimClient.Outcome claim(String volume, String alloc, String node, ClaimMode mode) {
        ClaimClient client = new ClaimClient(cluster.kafkaBootstrap(), Cluster.TOPIC_PREFIX);
        ClaimClient.Outcome outcome = client.request(ClaimClient.claim(NAMESPACE, volume, alloc, node, mode,
                AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM), CLAIM_TIMEOUT,
                s -> steps.progress(s.state().wire()));
        outcomes.add(outcome);
        check(outcome.is(ClaimState.READY), "claim of " + alloc + " on " + node + ": " + outcome.describe());
        check(outcome.last().hostPath() != null, "ready without a host path");
        return outcome;
    }

    private ClaimClient.Outcome release(String volume, String alloc) {
        ClaimClient client = new ClaimClient(cluster.kafkaBootstrap(), Cluster.TOPIC_PREFIX);
        ClaimClient.Outcome outcome = client.request(ClaimClient.release(NAMESPACE, volume, alloc), CLAIM_TIMEOUT,
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
