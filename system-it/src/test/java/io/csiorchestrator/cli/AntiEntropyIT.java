package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Anti-entropy across separate processes (Kafka, PostgreSQL, claim-service, plugin-registry-service, the hostpath
 * plugin and node-mount-worker of node-1, real bind mounts): the worker reports its actual state every second and
 * claim-service repairs differences that lasted 4 s. An orphan made by deleting a claim's row behind
 * claim-service's back is unmounted; a mount removed behind the worker's back (umount of the real target) is
 * mounted again. In package {@code cli} for {@link PluginVolumes}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AntiEntropyIT {

    private static final Duration START = Duration.ofSeconds(180);
    private static final Duration REPAIR = Duration.ofSeconds(60);
    private static final String NS = "default";
    private static final String NODE = "node-1";

    private Cluster cluster;
    private Http claims;

    @BeforeAll
    void up() throws Exception {
        Path home = Path.of(System.getProperty("csi.home", "..")).toAbsolutePath().normalize();
        Path work = Files.createTempDirectory(Path.of("target").toAbsolutePath(), "anti-entropy-");
        cluster = new Cluster(home, work, Cluster.Ports.free(), false).environment(Map.of(
                "CSI_WORKER_STATE_REPORT_INTERVAL", "1s", "CSI_CLAIMS_ANTI_ENTROPY_GRACE", "4s",
                // the worker's own periodic healer off: the repairs checked here are claim-service's anti-entropy
                // (with it on, the healer sometimes remounted first and mount-redriven stayed 0)
                "CSI_WORKER_HEAL_INTERVAL", "0s"));
        cluster.prepare();
        cluster.startInfra();
        Cluster.Proc registry = cluster.startRegistry();
        Cluster.Proc claimService = cluster.startClaims();
        cluster.awaitReady(registry, cluster.registryUrl(), START);
        cluster.awaitReady(claimService, cluster.claimsUrl(), START);
        cluster.startPlugin(NODE);
        cluster.awaitReady(cluster.startWorker(NODE), cluster.workerUrl(NODE), START);
        claims = new Http("claim-service", cluster.claimsUrl(), cluster.adminToken());
        Http registryApi = new Http("plugin-registry-service", cluster.registryUrl(), cluster.adminToken());
        Wait.until("plugin hostpath healthy on " + NODE, START, null, () -> {
            Http.Response r = registryApi.get("/v1/plugins/" + Cluster.PLUGIN_ID);
            return r.ok() && r.body() != null && r.body().path("nodesHealthy").asInt() >= 1
                    && r.body().path("controllersHealthy").asInt() >= 1 ? Optional.of(true) : Optional.empty();
        });
    }

    @AfterAll
    void down() {
        if (cluster != null) {
            cluster.stopAll(Duration.ofSeconds(30));
            Mounts.unmountAllUnder(cluster.workDir());
        }
    }

    /** A registered, schedulable single-writer volume created on node-1's plugin, and a READY write claim on it. */
    private String readyClaim(String volume, String alloc) throws Exception {
        String externalId = PluginVolumes.create(volume, List.of(cluster.pluginSocket(NODE)));
        Http.Response r = claims.post("/v1/volumes", Http.MAPPER.writeValueAsString(Map.of("id", volume, "namespace", NS,
                "name", volume, "externalId", externalId, "pluginId", Cluster.PLUGIN_ID,
                "accessMode", AccessMode.SINGLE_NODE_WRITER.wire(), "attachmentMode", AttachmentMode.FILE_SYSTEM.wire())));
        assertEquals(201, r.status(), r.raw());
        Wait.until("volume " + volume + " schedulable", START, null, () -> {
            Http.Response v = claims.get("/v1/volumes/" + NS + "/" + volume);
            return v.ok() && v.body().path("schedulable").asBoolean() ? Optional.of(true) : Optional.empty();
        });
        ClaimClient client = new ClaimClient(cluster.kafkaBootstrap(), Cluster.TOPIC_PREFIX);
        ClaimClient.Outcome outcome = client.request(ClaimClient.claim(NS, volume, alloc, NODE, ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM), START, s -> { });
        assertTrue(outcome.is(ClaimState.READY), outcome.describe());
        String hostPath = outcome.last().hostPath();
        assertTrue(Mounts.isMountPoint(hostPath), hostPath);
        return hostPath;
    }

    private double repairs(String kind) throws Exception {
        String text = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create(cluster.claimsUrl() + "/q/metrics")).header("Authorization", "Bearer " + cluster.adminToken()).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        return text.lines().filter(l -> l.startsWith("csi_claims_repairs_total{") && l.contains("kind=\"" + kind + "\""))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf("} ") + 2).split(" ")[0])).sum();
    }

    /**
     * The claim's row deleted in PostgreSQL behind claim-service's back: the node's reports show a mount no claim
     * holds; claim-service unmounts it on node-1 (the target is no longer a mount point), controller-unpublishes it
     * (the hostpath plugin publishes through its controller) and the orphan's own claim ends freed, the repair
     * counted.
     */
    @Test
    void anOrphanMadeByDeletingAClaimsRowIsUnmounted() throws Exception {
        String hostPath = readyClaim("ae-orphan", "alloc-orphan");
        String[] db = cluster.claimsDatabase();
        try (Connection c = DriverManager.getConnection(db[0], db[1], "postgres");
             PreparedStatement delete = c.prepareStatement("DELETE FROM claims WHERE volume_id = ?")) {
            delete.setString(1, "ae-orphan");
            assertEquals(1, delete.executeUpdate());
        }

        Wait.until(hostPath + " unmounted by anti-entropy", REPAIR, null,
                () -> Mounts.isMountPoint(hostPath) ? Optional.empty() : Optional.of(true));
        JsonNode volume = Wait.until("the orphan's claim freed", REPAIR, null, () -> {
            Http.Response v = claims.get("/v1/volumes/" + NS + "/ae-orphan");
            return v.ok() && v.body().path("claims").isEmpty() && v.body().path("pastClaims").size() == 1
                    ? Optional.of(v.body()) : Optional.empty();
        });
        assertEquals("freed", volume.path("pastClaims").get(0).path("state").asText(), volume.toString());
        assertEquals("alloc-orphan", volume.path("pastClaims").get(0).path("allocationId").asText(), volume.toString());
        assertTrue(repairs("orphan-unmounted") >= 1);
        // the hostpath plugin publishes through its controller: the orphan's teardown controller-unpublished it too
        List<String> calls = Files.readAllLines(cluster.nodeDir(NODE).resolve("hostpath-state").resolve("calls.log"));
        assertEquals(1, calls.stream().filter(c -> c.equals("ControllerUnpublishVolume OK")).count(), calls.toString());
    }

    /**
     * The target of a READY claim unmounted behind the worker's back (a real umount): the next reports show it
     * missing, claim-service mounts the claim again, the target is a mount point again with the file written
     * before, and the claim is ready; the repair counted.
     */
    @Test
    void aMountRemovedBehindTheWorkersBackIsMountedAgain() throws Exception {
        String hostPath = readyClaim("ae-lost", "alloc-lost");
        Files.writeString(Path.of(hostPath, "kept.txt"), "before the umount");
        Process umount = new ProcessBuilder("umount", hostPath).redirectErrorStream(true).start();
        assertEquals(0, umount.waitFor(), new String(umount.getInputStream().readAllBytes()));
        assertTrue(!Mounts.isMountPoint(hostPath));

        Wait.until(hostPath + " mounted again by anti-entropy", REPAIR, null,
                () -> Mounts.isMountPoint(hostPath) ? Optional.of(true) : Optional.empty());
        assertEquals("before the umount", Files.readString(Path.of(hostPath, "kept.txt")));
        Wait.until("the claim ready again", REPAIR, null, () -> {
            Http.Response v = claims.get("/v1/volumes/" + NS + "/ae-lost");
            return v.ok() && "ready".equals(v.body().path("claims").path(0).path("state").asText())
                    ? Optional.of(true) : Optional.empty();
        });
        assertTrue(repairs("mount-redriven") >= 1);
    }
}
