package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.testkit.RoleMatrix;
import io.csiorchestrator.testkit.SendsOwnCredentials;
import io.csiorchestrator.testkit.TestTokens;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.http.ContentType;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * claim-service's REST security (README "Security"): who may call what, in which namespace, with which token.
 * The tokens come from {@link TestTokens}; the test profile accepts its primary and secondary keys.
 */
@QuarkusTest
@SendsOwnCredentials
class RestSecurityTest {

    static final Set<String> ROLES = RoleMatrix.ROLES;
    static final Set<String> ANY = ROLES;

    static final List<RoleMatrix.Call> CALLS = List.of(
            new RoleMatrix.Call("GET /v1/volumes", r -> r.get("/v1/volumes"), Set.of("volume-read", "admin"), 200),
            new RoleMatrix.Call("GET /v1/volumes/{ns}/{id}", r -> r.get("/v1/volumes/default/sec-missing"),
                    Set.of("volume-read", "admin"), 404),
            // an empty registration passes authorization and fails validation
            new RoleMatrix.Call("POST /v1/volumes", r -> r.contentType(ContentType.JSON).body("{\"volumes\": []}").post("/v1/volumes"),
                    Set.of("volume-write", "admin"), 400),
            new RoleMatrix.Call("DELETE /v1/volumes/{ns}/{id}", r -> r.delete("/v1/volumes/default/sec-missing"),
                    Set.of("volume-write", "admin"), 404),
            new RoleMatrix.Call("DELETE /v1/volumes/{ns}/{id}?force=true", r -> r.delete("/v1/volumes/default/sec-missing?force=true"),
                    Set.of("admin"), 404),
            new RoleMatrix.Call("POST /v1/volumes/{ns}/{id}/detach", r -> r.post("/v1/volumes/default/sec-missing/detach?node=node-1"),
                    Set.of("volume-detach", "admin"), 404),
            new RoleMatrix.Call("POST /v1/volumes/{ns}/{id}/detach?force=true",
                    r -> r.post("/v1/volumes/default/sec-missing/detach?node=node-1&force=true"), Set.of("admin"), 404),
            // issue 14: volumes created and deleted through their plugin; an empty body passes authorization and fails validation
            new RoleMatrix.Call("POST /v1/provisioned-volumes", r -> r.contentType(ContentType.JSON).body("{}")
                    .post("/v1/provisioned-volumes"), Set.of("volume-write", "admin"), 400),
            new RoleMatrix.Call("GET /v1/provisioned-volumes/{ns}/{id}", r -> r.get("/v1/provisioned-volumes/default/sec-missing"),
                    Set.of("volume-read", "admin"), 404),
            new RoleMatrix.Call("DELETE /v1/provisioned-volumes/{ns}/{id}", r -> r.delete("/v1/provisioned-volumes/default/sec-missing"),
                    Set.of("volume-write", "admin"), 404),
            // issue 14 item 3: expansion of a volume created through the services (none here: 404 once authorized)
            new RoleMatrix.Call("POST /v1/provisioned-volumes/{ns}/{id}/expand", r -> r.contentType(ContentType.JSON)
                    .body("{\"capacity\": \"2GiB\"}").post("/v1/provisioned-volumes/default/sec-missing/expand"),
                    Set.of("volume-write", "admin"), 404),
            // issue 14 item 2: snapshots; an empty body passes authorization and fails validation
            new RoleMatrix.Call("POST /v1/snapshots", r -> r.contentType(ContentType.JSON).body("{}").post("/v1/snapshots"),
                    Set.of("volume-write", "admin"), 400),
            new RoleMatrix.Call("GET /v1/snapshots/{ns}", r -> r.get("/v1/snapshots/default"), Set.of("volume-read", "admin"), 200),
            new RoleMatrix.Call("GET /v1/snapshots/{ns}/{id}", r -> r.get("/v1/snapshots/default/sec-missing"),
                    Set.of("volume-read", "admin"), 404),
            new RoleMatrix.Call("DELETE /v1/snapshots/{ns}/{id}", r -> r.delete("/v1/snapshots/default/sec-missing"),
                    Set.of("volume-write", "admin"), 404),
            new RoleMatrix.Call("GET /v1/node-leases/{node}", r -> r.get("/v1/node-leases/sec-no-such-node"),
                    Set.of("plugin-read", "admin"), 404),
            // issue 34: this replica's view of the plugins' capacity
            new RoleMatrix.Call("GET /v1/capacity", r -> r.get("/v1/capacity"), Set.of("plugin-read", "admin"), 200),
            new RoleMatrix.Call("GET /v1/capacity/{plugin}", r -> r.get("/v1/capacity/sec-no-such-plugin"),
                    Set.of("plugin-read", "admin"), 200),
            new RoleMatrix.Call("GET /v1/status/plugins", r -> r.get("/v1/status/plugins"), Set.of("plugin-read", "admin"), 200),
            new RoleMatrix.Call("GET /v1/status/conditions", r -> r.get("/v1/status/conditions"), Set.of("volume-read", "admin"), 200),
            new RoleMatrix.Call("GET /v1/status/feed", r -> r.get("/v1/status/feed"), Set.of("volume-read", "admin"), 200),
            new RoleMatrix.Call("GET /q/metrics", r -> r.get("/q/metrics"), ANY, 200),
            new RoleMatrix.Call("GET /q/openapi", r -> r.get("/q/openapi"), ANY, 200));

    @AfterEach
    void noRevocations() throws IOException {
        Files.deleteIfExists(revokedFile());
    }

    /**
     * Every role against every operation: exactly the allowed cells get through (the operation's own answer:
     * 200, or 400/404 from validation), a token without the role gets 403, an admin token signed by the key set's
     * second key is accepted, and no token, an expired one, one signed by a key outside the key set, or garbage gets
     * 401 ({@link RoleMatrix}). Health answers without a token.
     */
    @Test
    void roleByEndpointMatrix() {
        assertEquals(List.of(), RoleMatrix.wrongCells(CALLS));
        given().get("/q/health/live").then().statusCode(200);
    }

    /**
     * The namespace is checked on every object written and every path read: a token for team-a registers in
     * team-a, cannot register a volume whose body names team-b (alone or next to a team-a one: nothing of that
     * request is registered), cannot read, delete or detach under team-b's path, and lists only team-a's volumes.
     */
    @Test
    void namespaceIsCheckedOnTheBodyAndThePath() {
        String suffix = UUID.randomUUID().toString().substring(0, 8);
        String teamA = "Bearer " + TestTokens.withRoles(Set.of("volume-read", "volume-write", "volume-detach"), List.of("team-a"));
        String admin = "Bearer " + TestTokens.admin();
        given().header("Authorization", teamA).contentType(ContentType.JSON)
                .body(volume("team-a", "a-" + suffix)).post("/v1/volumes").then().statusCode(201);
        given().header("Authorization", admin).contentType(ContentType.JSON)
                .body(volume("team-b", "b-" + suffix)).post("/v1/volumes").then().statusCode(201);

        given().header("Authorization", teamA).contentType(ContentType.JSON)
                .body(volume("team-b", "b2-" + suffix)).post("/v1/volumes").then().statusCode(403);
        given().header("Authorization", teamA).contentType(ContentType.JSON)
                .body("[" + volume("team-a", "a2-" + suffix) + "," + volume("team-b", "b3-" + suffix) + "]")
                .post("/v1/volumes").then().statusCode(403);
        for (String key : List.of("team-b/b2-", "team-a/a2-", "team-b/b3-")) {
            given().header("Authorization", admin).get("/v1/volumes/" + key + suffix).then().statusCode(404);
        }

        given().header("Authorization", teamA).get("/v1/volumes/team-b/b-" + suffix).then().statusCode(403);
        given().header("Authorization", teamA).delete("/v1/volumes/team-b/b-" + suffix).then().statusCode(403);
        given().header("Authorization", teamA).post("/v1/volumes/team-b/b-" + suffix + "/detach?node=node-1")
                .then().statusCode(403);
        given().header("Authorization", teamA).get("/v1/volumes?namespace=team-b").then().statusCode(403);
        given().header("Authorization", admin).get("/v1/volumes/team-b/b-" + suffix).then().statusCode(200);

        given().header("Authorization", teamA).get("/v1/volumes/team-a/a-" + suffix).then().statusCode(200);
        List<String> listed = given().header("Authorization", teamA).get("/v1/volumes").then().statusCode(200)
                .extract().jsonPath().getList("namespace");
        assertTrue(listed.contains("team-a"), listed.toString());
        assertFalse(listed.contains("team-b"), listed.toString());
    }

    /** A token that expired ten minutes ago is refused with 401 (beyond any clock skew allowed). */
    @Test
    void expiredTokenIsRefused() {
        given().header("Authorization", "Bearer " + TestTokens.expired(Duration.ofMinutes(10))).get("/v1/volumes")
                .then().statusCode(401);
        given().header("Authorization", "Bearer " + TestTokens.admin()).get("/v1/volumes").then().statusCode(200);
    }

    /**
     * Revocation without a restart: once its id is in the revoked-tokens file, a token that was accepted is
     * refused with 401 while another token still works; taken off the list, it is accepted again.
     */
    @Test
    void revokedTokenIsRefusedWithoutRestart() throws IOException {
        String jti = UUID.randomUUID().toString();
        String revoked = "Bearer " + TestTokens.withJti(jti);
        given().header("Authorization", revoked).get("/v1/volumes").then().statusCode(200);
        Files.writeString(revokedFile(), "# revoked in a test\n" + jti + "\n");
        given().header("Authorization", revoked).get("/v1/volumes").then().statusCode(401);
        given().header("Authorization", "Bearer " + TestTokens.admin()).get("/v1/volumes").then().statusCode(200);
        Files.writeString(revokedFile(), "# nothing revoked any more, a longer comment than before\n");
        given().header("Authorization", revoked).get("/v1/volumes").then().statusCode(200);
    }

    /** Key roll: tokens signed by either key of the set are accepted, a token signed by a key outside it is not. */
    @Test
    void bothKeysOfTheSetAreAccepted() {
        for (var key : List.of(TestTokens.PRIMARY, TestTokens.SECONDARY)) {
            String token = TestTokens.issue(key, Set.of("volume-read"), List.of("*"), Duration.ofMinutes(5));
            given().header("Authorization", "Bearer " + token).get("/v1/volumes").then().statusCode(200);
        }
        String stranger = TestTokens.issue(TestTokens.STRANGER, Set.of("volume-read"), List.of("*"), Duration.ofMinutes(5));
        given().header("Authorization", "Bearer " + stranger).get("/v1/volumes").then().statusCode(401);
    }

    /** A browser's EventSource sends the token as cookie csi_token: accepted like the header; a bad one is not. */
    @Test
    void tokenInCookieIsAccepted() {
        given().cookie("csi_token", TestTokens.withRoles(Set.of("volume-read"), List.of("*"))).get("/v1/volumes")
                .then().statusCode(200);
        given().cookie("csi_token", "not.a.token").get("/v1/volumes").then().statusCode(401);
    }

    /**
     * The canary: no token, good or bad, shows in the log (the security and JWT loggers at TRACE in the test
     * profile; the capture is shown to hold their lines), in a REST answer, or in the metrics.
     */
    @Test
    void tokensNeverAppearInLogsRestOrMetrics() throws IOException {
        String jti = UUID.randomUUID().toString();
        String good = TestTokens.withRoles(Set.of("plugin-read"), List.of("*"));
        // a token damaged in transit (its payload no longer base64url): the JWT library cannot even parse it
        String damaged = good.replaceFirst("\\.", ".%");
        List<String> tokens = List.of(good, damaged,
                TestTokens.expired(Duration.ofMinutes(10)), TestTokens.withJti(jti),
                TestTokens.issue(TestTokens.STRANGER, Set.of("admin"), List.of("*"), Duration.ofHours(1)));
        Files.writeString(revokedFile(), jti + "\n");
        List<String> answers = new ArrayList<>();
        try (LogCapture log = LogCapture.start()) {
            for (String token : tokens) {
                for (RoleMatrix.Call call : CALLS) {
                    answers.add(call.send().apply(given().header("Authorization", "Bearer " + token)).asString());
                    answers.add(call.send().apply(given().cookie("csi_token", token)).asString());
                }
            }
            answers.add(given().header("Authorization", "Bearer " + TestTokens.admin()).get("/q/metrics").asString());
            List<String> lines = log.lines();
            assertTrue(lines.stream().anyMatch(l -> l.startsWith("io.quarkus.security") || l.startsWith("io.smallrye.jwt")
                            || l.startsWith("io.quarkus.smallrye.jwt") || l.startsWith("io.quarkus.vertx.http.runtime.security")),
                    "the security loggers' lines are captured");
            for (String token : tokens) {
                String signature = token.substring(token.lastIndexOf('.') + 1);
                for (String line : lines) {
                    assertFalse(line.contains(signature), "a token in the log: " + line);
                }
                for (String answer : answers) {
                    assertFalse(answer.contains(signature), "a token in a REST answer or the metrics");
                }
            }
        }
    }

    private static String volume(String namespace, String id) {
        return """
                {"namespace": "%s", "id": "%s", "externalId": "e-%s", "pluginId": "sec-plugin",
                 "accessMode": "single-node-writer", "attachmentMode": "file-system"}""".formatted(namespace, id, id);
    }

    private static Path revokedFile() {
        return Path.of(ConfigProvider.getConfig().getValue("csi.security.revoked-tokens-file", String.class));
    }

    /**
     * The status page: its static files (no data) load without a token; its data does not. The feed and the
     * conditions span every namespace, so a token for one namespace gets 403 there; the server-sent event stream
     * takes the token from cookie {@code csi_token} (a browser's EventSource cannot set headers) and refuses a
     * request without one.
     */
    @Test
    void statusPageFilesAreOpenItsDataNeedsATokenForEveryNamespace() throws Exception {
        for (String asset : List.of("/status/", "/status/status.js", "/status/status.css")) {
            given().get(asset).then().statusCode(200);
        }
        String teamA = "Bearer " + TestTokens.withRoles(Set.of("volume-read"), List.of("team-a"));
        given().header("Authorization", teamA).get("/v1/status/feed").then().statusCode(403);
        given().header("Authorization", teamA).get("/v1/status/conditions").then().statusCode(403);
        given().header("Authorization", "Bearer " + TestTokens.withRoles(Set.of("volume-read"), List.of("*")))
                .get("/v1/status/feed").then().statusCode(200);
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        java.net.URI events = java.net.URI.create(io.restassured.RestAssured.baseURI + ":" + io.restassured.RestAssured.port
                + "/v1/status/events");
        var refused = http.send(java.net.http.HttpRequest.newBuilder(events).header("Accept", "text/event-stream").build(),
                java.net.http.HttpResponse.BodyHandlers.discarding());
        assertEquals(401, refused.statusCode());
        var accepted = http.sendAsync(java.net.http.HttpRequest.newBuilder(events).header("Accept", "text/event-stream")
                .header("Cookie", "csi_token=" + TestTokens.admin()).build(),
                java.net.http.HttpResponse.BodyHandlers.ofLines()).get(30, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(200, accepted.statusCode());
        accepted.body().close();
    }
}
