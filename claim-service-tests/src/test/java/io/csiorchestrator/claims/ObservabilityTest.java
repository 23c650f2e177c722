package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.hasItems;
import static org.hamcrest.Matchers.notNullValue;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.quarkus.test.junit.QuarkusTest;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** /q/metrics (the claim-service's histograms and counters), /q/openapi and /q/health/ready. */
@QuarkusTest
class ObservabilityTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    @Test
    void metricsShowClaimReleaseDecisionAndOutboxMeters() {
        String vol = bus.schedulableVolume("metrics", "vol", AccessMode.SINGLE_NODE_WRITER, "node-a");

        ClaimRequested write = Bus.claim("metrics", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(write);
        bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
        bus.awaitStatus(write.requestId(), ClaimState.READY);
        ClaimRequested second = Bus.claim("metrics", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        bus.send(second);
        bus.awaitStatus(second.requestId(), ClaimState.REJECTED);
        ClaimRequested unknown = Bus.claim("metrics", ClaimFlowTest.unique("missing"), "alloc-3", "node-a", ClaimMode.READ,
                AccessMode.SINGLE_NODE_WRITER);
        bus.send(unknown);
        bus.awaitStatus(unknown.requestId(), ClaimState.REJECTED);
        ClaimRequested release = Bus.release("metrics", vol, "alloc-1");
        bus.send(release);
        NodeCommand unmount = bus.awaitCommand(vol, NodeCommandKind.UNMOUNT);
        bus.succeed(unmount);
        bus.awaitStatus(release.requestId(), ClaimState.RELEASED);

        // Observations are recorded once their transaction committed, which precedes the publish seen above.
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> {
            String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
            assertBucket(metrics, "csi_claim_latency_seconds_bucket", "0.05", "mode=\"write\"", "outcome=\"ready\"");
            assertBucket(metrics, "csi_claim_latency_seconds_bucket", "60.0", "mode=\"write\"", "outcome=\"rejected\"");
            assertPositive(metrics, "csi_claim_latency_seconds_count", "mode=\"write\"", "outcome=\"ready\"");
            assertPositive(metrics, "csi_claim_latency_seconds_count", "mode=\"write\"", "outcome=\"rejected\"");
            assertPositive(metrics, "csi_claim_latency_seconds_count", "mode=\"read\"", "outcome=\"rejected\"");
            assertBucket(metrics, "csi_claim_release_latency_seconds_bucket", "0.05", "outcome=\"released\"");
            assertPositive(metrics, "csi_claim_release_latency_seconds_count", "outcome=\"released\"");
            assertPositive(metrics, "csi_claim_decisions_total", "decision=\"accepted\"", "reason=\"new-claim\"");
            assertPositive(metrics, "csi_claim_decisions_total", "decision=\"rejected\"", "reason=\"single-writer-held\"");
            assertPositive(metrics, "csi_claim_decisions_total", "decision=\"rejected\"", "reason=\"volume-not-registered\"");
            assertBucket(metrics, "csi_outbox_publish_seconds_bucket", "0.05");
            assertPositive(metrics, "csi_outbox_publish_seconds_count");
            assertTrue(Pattern.compile("(?m)^csi_outbox_pending(\\{[^}]*})? \\d").matcher(metrics).find(), "csi_outbox_pending gauge");
            assertTrue(!metrics.contains(vol) && !metrics.contains("alloc-1"), "no volume or allocation id in any metric");
        });
    }

    /** A bucket line of {@code name} with all {@code labels} and {@code le}. */
    static void assertBucket(String metrics, String name, String le, String... labels) {
        for (String line : metrics.split("\n")) {
            if (line.startsWith(name + "{") && line.contains("le=\"" + le + "\"") && containsAll(line, labels)) {
                return;
            }
        }
        fail(name + " " + String.join(",", labels) + " le=" + le + " not in /q/metrics:\n" + grep(metrics, name));
    }

    /** A sample line of {@code name} with all {@code labels} and a value above 0. */
    static void assertPositive(String metrics, String name, String... labels) {
        Pattern sample = Pattern.compile("^" + Pattern.quote(name) + "(\\{[^}]*})? ([0-9.eE+-]+)( #.*)?$"); // OpenMetrics exemplar after '#'
        for (String line : metrics.split("\n")) {
            Matcher m = sample.matcher(line);
            if (m.matches() && containsAll(line, labels) && Double.parseDouble(m.group(2)) > 0) {
                return;
            }
        }
        fail(name + " " + String.join(",", labels) + " > 0 not in /q/metrics:\n" + grep(metrics, name));
    }

    private static boolean containsAll(String line, String... labels) {
        for (String label : labels) {
            if (!line.contains(label)) {
                return false;
            }
        }
        return true;
    }

    private static String grep(String metrics, String name) {
        StringBuilder b = new StringBuilder();
        String base = name.replaceAll("_(bucket|count|total)$", "");
        for (String line : metrics.split("\n")) {
            if (line.startsWith(base)) {
                b.append(line).append('\n');
            }
        }
        return b.toString();
    }

    @Test
    void openApiListsTheVolumePaths() {
        given().get("/q/openapi?format=json").then().statusCode(200)
                .body("info.title", notNullValue())
                .body("paths.keySet()", hasItems("/v1/volumes", "/v1/volumes/{namespace}/{id}", "/v1/volumes/{namespace}/{id}/detach"))
                .body("paths.'/v1/volumes'.post.responses.keySet()", hasItems("201", "400", "409"))
                .body("paths.'/v1/volumes/{namespace}/{id}'.get.responses.keySet()", hasItems("200", "404"))
                .body("paths.'/v1/volumes/{namespace}/{id}'.delete.responses.keySet()", hasItems("202", "204", "404", "409"))
                .body("paths.'/v1/volumes/{namespace}/{id}/detach'.post.responses.keySet()", hasItems("202", "400", "404"))
                .body("paths.'/v1/volumes'.post.responses.'400'.content.'application/json'.schema", notNullValue());
    }

    @Test
    void readinessNamesKafkaAndPostgres() {
        Awaitility.await().atMost(Bus.WAIT).untilAsserted(() -> {
            String body = given().get("/q/health/ready").then().statusCode(200).extract().asString();
            List<String> names = io.restassured.path.json.JsonPath.from(body).getList("checks.name", String.class);
            assertTrue(names.stream().anyMatch(n -> n.toLowerCase().contains("postgresql")), "PostgreSQL check in " + body);
            assertTrue(names.stream().anyMatch(n -> n.toLowerCase().contains("kafka")), "Kafka check in " + body);
            assertTrue(names.stream().anyMatch(n -> n.toLowerCase().contains("messaging")), "messaging channels check in " + body);
        });
    }
}
