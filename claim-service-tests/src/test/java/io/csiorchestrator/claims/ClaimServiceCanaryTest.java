package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.SecretPayload;
import io.csiorchestrator.events.SecretSealer;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Tuple;
import jakarta.inject.Inject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What claim-service itself does with a canary secret (a volume secret and a mount flag) through
 * registration, a claim with a controller publish and a mount, a failing step and the release: the
 * canary never appears in claim-service's log, in its REST output, in its volumes row (sealed there),
 * or in any record on the topics of this test run (key, value, headers: claim-service's outputs, what
 * the test's {@link Bus} sent as scheduler, plugin registry and worker, and other tests' records), yet
 * it reaches the worker inside NodeCommand.sealed. The worker is simulated: what a real
 * worker emits (mount-done, node-events, its log) is not checked here.
 */
@QuarkusTest
class ClaimServiceCanaryTest {

    static final String CANARY = "CANARY-b7e1-secret-value";
    static final String FLAG_CANARY = "CANARY-flag-0c9d";

    @Inject
    Pool pool;

    final Bus bus = new Bus();
    LogCapture log;

    @BeforeEach
    void captureLog() {
        log = LogCapture.start();
    }

    @AfterEach
    void after() {
        log.close();
        bus.close();
    }

    @Test
    void claimServiceNeverOutputsTheCanaryInPlainButSendsItSealed() throws Exception {
        String plugin = ClaimFlowTest.unique("plug");
        String vol = ClaimFlowTest.unique("canary");
        List<String> rest = new ArrayList<>();
        rest.add(given().contentType(ContentType.JSON).body(Map.of("id", vol, "namespace", "ns1", "externalId", "ext-" + vol,
                        "pluginId", plugin, "accessMode", "single-node-writer", "attachmentMode", "file-system",
                        "mountOptions", Map.of("fsType", "ext4", "mountFlags", List.of("noatime", "password=" + FLAG_CANARY)),
                        "secrets", Map.of("token", CANARY)))
                .post("/v1/volumes").then().statusCode(201).extract().asString());
        // An invalid registration carrying the canary: the 400 names the fields, never the values.
        rest.add(given().contentType(ContentType.JSON).body(Map.of("id", "bad/id", "externalId", "x", "pluginId", plugin,
                        "accessMode", "single-node-writer", "attachmentMode", "block-device",
                        "mountOptions", Map.of("mountFlags", List.of("pw=" + FLAG_CANARY + ",x")),
                        "secrets", Map.of("token", Map.of("nested", CANARY))))
                .post("/v1/volumes").then().statusCode(400).extract().asString());
        bus.plugin(plugin, true, List.of("ctrl-1"), List.of("node-a"));
        ClaimFlowTest.awaitSchedulable("ns1", vol);

        ClaimRequested write = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        NodeCommand publish = bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_PUBLISH);
        assertNotNull(publish.sealed(), "the controller publish carries the secrets, sealed");
        bus.succeed(publish, null, Map.of());
        NodeCommand mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        bus.fail(mount, "UNAVAILABLE", "transient");
        mount = bus.awaitCommand(vol, NodeCommandKind.MOUNT);
        // sealed for node-a only (issue 20 item 4): the worker of node-a opens it with its own key
        SecretPayload opened = SecretSealer.open(mount.sealed(),
                io.csiorchestrator.testkit.TestIdentities.sealing(io.csiorchestrator.events.identity.Principal.node("node-a")), "ns1", vol);
        assertEquals(Map.of("token", CANARY), opened.secrets());
        assertEquals(List.of("noatime", "password=" + FLAG_CANARY), opened.mountFlags());
        bus.succeed(mount);
        bus.awaitStatus(write.requestId(), ClaimState.READY);
        rest.add(given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).extract().asString());
        rest.add(given().get("/v1/volumes").then().statusCode(200).extract().asString());
        ClaimRequested release = Bus.release("ns1", vol, "alloc-1");
        bus.send(release);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.UNMOUNT));
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.CONTROLLER_UNPUBLISH));
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);
        rest.add(given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).extract().asString());

        // REST output
        for (String body : rest) {
            assertNoCanary("REST output", body);
        }
        // Every record of every topic
        int scanned = bus.scanEveryRecord(ClaimServiceCanaryTest::assertNoCanary);
        assertTrue(scanned > 5, "records scanned: " + scanned);
        // At rest: only sealed in PostgreSQL
        String dump = pool.preparedQuery("SELECT v::text AS t FROM volumes v WHERE id = $1").execute(Tuple.of(vol))
                .await().atMost(Duration.ofSeconds(10)).iterator().next().getString("t");
        assertNoCanary("volumes row", dump);
        assertTrue(dump.contains("X25519-HKDF-SHA256-A256GCM") && dump.contains("\"\"recipient\"\":\"\"claim-service\"\""),
                "at rest, sealed for claim-service: " + dump);
        // The log
        // The capture works: it holds the service's own lines about this volume's claim (accepted, retried, released).
        List<String> lines = log.lines();
        assertTrue(lines.stream().anyMatch(l -> l.contains(vol) && l.contains("accepted")), "captured: " + lines);
        assertTrue(lines.stream().anyMatch(l -> l.contains("UNAVAILABLE") && l.contains("retrying")), "captured: " + lines);
        assertTrue(lines.stream().anyMatch(l -> l.contains(vol) && l.contains("-> FREED")), "captured: " + lines);
        for (String line : lines) {
            assertNoCanary("log", line);
        }
    }

    static void assertNoCanary(String where, String text) {
        if (text != null) {
            assertFalse(text.contains(CANARY) || text.contains(FLAG_CANARY), "canary in " + where + ": " + text);
        }
    }

    static String header(ConsumerRecord<String, String> r, String key) {
        return KafkaTestClient.header(r, key);
    }
}
