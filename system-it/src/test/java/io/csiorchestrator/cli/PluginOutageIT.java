package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Plugin outages on a real system (separate processes: Kafka and PostgreSQL, claim-service, plugin-registry-service,
 * two node-mount-workers, two hostpath plugins; real bind mounts), the plugin on node-1 killed with SIGKILL (its
 * real pid), so its socket file stays behind with nothing listening.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(SharedSystem.Shared.class)
@Order(5)
class PluginOutageIT {

    static final String NS = "default";
    static final Duration START = Duration.ofSeconds(180);
    static final Duration CLAIM = Duration.ofSeconds(120);

    private SharedSystem system;
    private Cluster cluster;

    @BeforeAll
    void up(SharedSystem system) {
        // the system these ITs share (SharedSystem.Shape.TWO_NODES): started by the first of them, stopped after the
        // last; this is the last, since it leaves node-1's plugin dead and deregistered
        this.system = system;
        cluster = system.cluster();
    }

    /**
     * A claim on node-1 sent while node-1's plugin is dead waits for it (claim-service shows it waiting for plugin
     * hostpath on node node-1, no answer yet); once the plugin is started again (a new process on the same socket)
     * the claim goes on as the plugin's health arrives on Kafka and ends READY, mounted, with no rejection or failure
     * on the way; its release then unmounts it. The plugin killed again and left dead: a claim on node-1 is rejected
     * once the plugin stays away past claim-service's grace (30 s), the reason naming plugin, node and how long; the
     * dead socket left node-1's worker ready throughout, and after the worker's grace (30 s) the plugin is deregistered
     * on node-1: plugin-registry-service drops that instance (1 node expected, node-2's) while node-2's stays healthy.
     */
    @Test
    void aKilledPluginDelaysAClaimUntilItIsBackAndOneThatStaysDeadGetsItRejectedAndDeregistered() throws Exception {
        // node-1's plugin, killed by the user before this one, started again, and both healthy in the registry
        system.pluginsRunning();
        Http registryApi = system.registry();
        Http claimsApi = system.claims();
        Http node1 = new Http("node-mount-worker-node-1", cluster.workerUrl("node-1"));
        List<Path> sockets = Cluster.NODES.stream().map(cluster::pluginSocket).toList();
        for (String volume : List.of("delayed", "abandoned")) {
            String externalId = PluginVolumes.create(volume, sockets);
            Http.Response r = claimsApi.post("/v1/volumes", Http.MAPPER.writeValueAsString(Map.of(
                    "id", volume, "namespace", NS, "name", volume, "externalId", externalId,
                    "pluginId", Cluster.PLUGIN_ID, "accessMode", AccessMode.MULTI_NODE_SINGLE_WRITER.wire(),
                    "attachmentMode", AttachmentMode.FILE_SYSTEM.wire())));
            assertEquals(201, r.status(), r.raw());
            Wait.until(volume + " schedulable", CLAIM, null, () -> claimsApi.get("/v1/volumes/" + NS + "/" + volume)
                    .body().path("schedulable").asBoolean() ? Optional.of(true) : Optional.empty());
        }

        // 1. Killed: its claim waits, the plugin comes back, the claim ends ready.
        kill(system.plugin("node-1"));
        awaitPlugin(registryApi, p -> p.path("nodesHealthy").asInt() == 1);
        ClaimClient client = system.client();
        CompletableFuture<ClaimClient.Outcome> delayed = CompletableFuture.supplyAsync(() -> client.request(
                ClaimClient.claim(NS, "delayed", "alloc-delayed", "node-1", ClaimMode.WRITE,
                        AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM), CLAIM, null));
        String waiting = Wait.until("claim on delayed waiting for plugin hostpath on node-1", CLAIM, null, () -> {
            JsonNode claim = claimsApi.get("/v1/volumes/" + NS + "/delayed").body().path("claims").path(0);
            String lastError = claim.path("lastError").asText("");
            return lastError.contains("plugin hostpath on node node-1") ? Optional.of(claim.toString()) : Optional.empty();
        });
        assertFalse(delayed.isDone(), "answered before the plugin was back: " + waiting);
        assertTrue(node1.get("/q/health/ready").ok(), "node-1's worker is ready while its plugin is dead");

        system.restartPlugin("node-1");
        ClaimClient.Outcome outcome = delayed.get(CLAIM.toSeconds(), TimeUnit.SECONDS);
        assertTrue(outcome.is(ClaimState.READY), outcome.describe());
        assertTrue(outcome.seen().stream().map(ClaimStatus::state)
                .noneMatch(s -> s == ClaimState.REJECTED || s == ClaimState.FAILED), outcome.describe());
        assertTrue(Mounts.isMountPoint(outcome.last().hostPath()), "mounted at " + outcome.last().hostPath());
        ClaimClient.Outcome released = client.request(ClaimClient.release(NS, "delayed", "alloc-delayed"), CLAIM, null);
        assertTrue(released.is(ClaimState.RELEASED), released.describe());
        assertFalse(Mounts.isMountPoint(outcome.last().hostPath()), "unmounted on release");

        // 2. Killed and left dead: a claim is rejected past the grace; the worker stays ready and deregisters it.
        awaitPlugin(registryApi, p -> p.path("nodesHealthy").asInt() == 2);
        kill(system.plugin("node-1"));
        assertTrue(Files.exists(cluster.pluginSocket("node-1")), "SIGKILL leaves the socket file behind");
        awaitPlugin(registryApi, p -> p.path("nodesHealthy").asInt() == 1);
        ClaimClient.Outcome rejected = client.request(ClaimClient.claim(NS, "abandoned", "alloc-abandoned", "node-1",
                ClaimMode.WRITE, AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM), CLAIM, null);
        // Given up past the grace either way: REJECTED when claim-service knew the instance unhealthy on arrival (the
        // claim waited in plugin-wait), FAILED when the claim came before that news and its mount step waited (the
        // registry's REST may show the instance unhealthy a moment before claim-service reads plugin-status).
        assertTrue(rejected.is(ClaimState.REJECTED) || rejected.is(ClaimState.FAILED), rejected.describe());
        assertTrue(rejected.seen().stream().noneMatch(s -> s.state() == ClaimState.READY), rejected.describe());
        String reason = rejected.last().reason();
        assertTrue(reason.contains("plugin hostpath on node node-1 has been unavailable for")
                && reason.contains("longer than the grace of 30s"), reason);
        JsonNode plugin = awaitPlugin(registryApi, p -> p.path("nodesExpected").asInt() == 1);
        assertEquals(1, plugin.path("nodesHealthy").asInt(), plugin.toString());
        assertEquals("node-2", plugin.path("instances").path(0).path("nodeId").asText(), plugin.toString());
        Http.Response ready = node1.get("/q/health/ready");
        assertTrue(ready.ok(), "node-1's worker stays ready with a dead plugin socket: " + ready.raw());
        assertTrue(Files.exists(cluster.pluginSocket("node-1")), "the dead socket file is still there");
    }

    private static JsonNode awaitPlugin(Http registry, java.util.function.Predicate<JsonNode> matches) {
        return Wait.until("plugin hostpath in plugin-registry-service", CLAIM, null, () -> {
            Http.Response r = registry.get("/v1/plugins/" + Cluster.PLUGIN_ID);
            return r.ok() && r.body() != null && matches.test(r.body()) ? Optional.of(r.body()) : Optional.empty();
        });
    }

    /** SIGKILL of the plugin's real process, waited for. */
    private static void kill(Cluster.Proc proc) throws Exception {
        assertTrue(proc.handle().destroyForcibly(), "SIGKILL sent to " + proc.name() + " (pid " + proc.handle().pid() + ")");
        proc.handle().onExit().get(30, TimeUnit.SECONDS);
    }
}
