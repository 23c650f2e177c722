package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimState;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The controller publication is per (volume, node), shared by every claim of the volume on that node, across
 * separate processes (Kafka, PostgreSQL, claim-service, plugin-registry-service, the hostpath plugin, which
 * publishes through its controller, and node-mount-worker of node-1, real bind mounts). The plugin's publications
 * are read with CSI ListVolumes (published_node_ids). In package {@code cli} for {@link PluginVolumes}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(SharedSystem.Shared.class)
@Order(1)
class ControllerPublicationIT {

    private static final Duration START = Duration.ofSeconds(180);
    private static final String NS = "default";
    private static final String NODE = "node-1";

    private Cluster cluster;
    private Http claims;
    private ClaimClient client;

    @BeforeAll
    void up(SharedSystem system) {
        // the system these ITs share (SharedSystem.Shape.ONE_NODE): started by the first of them, stopped after the last
        cluster = system.cluster();
        claims = system.claims();
        client = system.client();
    }

    /** Creates {@code volume} on node-1's plugin, registers it as multi-node-single-writer; returns its external id. */
    private String multiNodeSingleWriterVolume(String volume) throws Exception {
        String externalId = PluginVolumes.create(volume, List.of(cluster.pluginSocket(NODE)));
        Http.Response r = claims.post("/v1/volumes", Http.MAPPER.writeValueAsString(Map.of("id", volume, "namespace", NS,
                "name", volume, "externalId", externalId, "pluginId", Cluster.PLUGIN_ID,
                "accessMode", AccessMode.MULTI_NODE_SINGLE_WRITER.wire(), "attachmentMode", AttachmentMode.FILE_SYSTEM.wire())));
        assertEquals(201, r.status(), r.raw());
        Wait.until("volume " + volume + " schedulable", START, null, () -> {
            Http.Response v = claims.get("/v1/volumes/" + NS + "/" + volume);
            return v.ok() && v.body().path("schedulable").asBoolean() ? Optional.of(true) : Optional.empty();
        });
        return externalId;
    }

    /** A claim of {@code volume} on node-1 that must become READY; returns its host path, a mount point. */
    private String ready(String volume, String alloc, ClaimMode mode) {
        ClaimClient.Outcome outcome = client.request(ClaimClient.claim(NS, volume, alloc, NODE, mode,
                AccessMode.MULTI_NODE_SINGLE_WRITER, AttachmentMode.FILE_SYSTEM), START, s -> { });
        assertTrue(outcome.is(ClaimState.READY), outcome.describe());
        String hostPath = outcome.last().hostPath();
        assertTrue(Mounts.isMountPoint(hostPath), hostPath);
        return hostPath;
    }

    private void released(String volume, String alloc) {
        ClaimClient.Outcome outcome = client.request(ClaimClient.release(NS, volume, alloc), START, s -> { });
        assertTrue(outcome.is(ClaimState.RELEASED), outcome.describe());
    }

    private List<String> published(String externalId) {
        return PluginVolumes.publishedNodes(externalId, cluster.pluginSocket(NODE));
    }

    /**
     * A read claim, then a write claim of one multi-node-single-writer volume on node-1: both become READY (the
     * controller publication the reader made is the one the writer needs: no ALREADY_EXISTS for a read-only
     * setting), the writer's mount takes a write; releasing the reader keeps the writer's mount and the one
     * controller publication; releasing the writer removes the publication.
     */
    @Test
    void aReaderAndAWriterOnOneNodeBothBecomeReadyAndShareTheControllerPublication() throws Exception {
        String externalId = multiNodeSingleWriterVolume("cp-mixed");
        ready("cp-mixed", "alloc-reader", ClaimMode.READ);
        String writerPath = ready("cp-mixed", "alloc-writer", ClaimMode.WRITE);
        Files.writeString(Path.of(writerPath, "w.txt"), "written");
        assertEquals(1, published(externalId).size(), published(externalId).toString());

        released("cp-mixed", "alloc-reader");
        assertTrue(Mounts.isMountPoint(writerPath), writerPath);
        Files.writeString(Path.of(writerPath, "w.txt"), "written after the reader left");
        assertEquals("written after the reader left", Files.readString(Path.of(writerPath, "w.txt")));
        assertEquals(1, published(externalId).size(), published(externalId).toString());

        released("cp-mixed", "alloc-writer");
        assertEquals(List.of(), published(externalId));
    }

    /**
     * Two read claims of one volume on node-1: releasing the first leaves the second's mount a mount point with the
     * file readable and the plugin's controller publication for the node in place; releasing the last removes it.
     */
    @Test
    void releasingOneOfTwoClaimsOnANodeKeepsTheControllerPublicationUntilTheLastLeaves() throws Exception {
        String externalId = multiNodeSingleWriterVolume("cp-two");
        String writerPath = ready("cp-two", "alloc-seed", ClaimMode.WRITE);
        Files.writeString(Path.of(writerPath, "seed.txt"), "seeded");
        released("cp-two", "alloc-seed");
        assertEquals(List.of(), published(externalId));

        ready("cp-two", "alloc-first", ClaimMode.READ);
        String secondPath = ready("cp-two", "alloc-second", ClaimMode.READ);
        List<String> both = published(externalId);
        assertEquals(1, both.size(), both.toString());

        released("cp-two", "alloc-first");
        assertTrue(Mounts.isMountPoint(secondPath), secondPath);
        assertEquals("seeded", Files.readString(Path.of(secondPath, "seed.txt")));
        assertEquals(both, published(externalId));

        released("cp-two", "alloc-second");
        assertEquals(List.of(), published(externalId));
    }
}
