package io.csiorchestrator.plugins;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.csiorchestrator.testkit.SendsOwnCredentials;
import io.csiorchestrator.testkit.TestTokens;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** plugin-registry-service's REST security (README "Security"): who may read plugins, with which token. */
@QuarkusTest
@SendsOwnCredentials
class RestSecurityTest {

    record Call(String name, Function<RequestSpecification, Response> send, Set<String> allowed, int allowedStatus) {
    }

    static final Set<String> ROLES = Set.of("volume-read", "volume-write", "volume-mount", "volume-detach",
            "plugin-read", "admin");

    static final List<Call> CALLS = List.of(
            new Call("GET /v1/plugins", r -> r.get("/v1/plugins"), Set.of("plugin-read", "admin"), 200),
            new Call("GET /v1/plugins/{id}", r -> r.get("/v1/plugins/sec-missing"), Set.of("plugin-read", "admin"), 404),
            new Call("GET /v1/nodes", r -> r.get("/v1/nodes"), Set.of("plugin-read", "admin"), 200),
            new Call("GET /v1/nodes/{id}", r -> r.get("/v1/nodes/sec-missing"), Set.of("plugin-read", "admin"), 404),
            new Call("GET /q/metrics", r -> r.get("/q/metrics"), ROLES, 200),
            new Call("GET /q/openapi", r -> r.get("/q/openapi"), ROLES, 200));

    /**
     * Every role against every operation: exactly the allowed cells get through (200, or 404 for a plugin that
     * does not exist), a token without the role gets 403; no token, an expired one, one signed by a key outside the
     * key set, or garbage gets 401; one signed by the second key of the set is accepted. Health needs no token.
     */
    @Test
    void roleByEndpointMatrix() {
        List<String> wrong = new ArrayList<>();
        String stranger = TestTokens.issue(TestTokens.STRANGER, Set.of("admin"), List.of("*"), Duration.ofHours(1));
        String secondKey = TestTokens.issue(TestTokens.SECONDARY, Set.of("admin"), List.of("*"), Duration.ofHours(1));
        for (Call call : CALLS) {
            for (String role : ROLES) {
                String token = TestTokens.withRoles(Set.of(role), List.of("*"));
                int expected = call.allowed().contains(role) ? call.allowedStatus() : 403;
                int got = call.send().apply(given().header("Authorization", "Bearer " + token)).statusCode();
                if (got != expected) {
                    wrong.add(call.name() + " as " + role + ": " + got + ", expected " + expected);
                }
            }
            int got = call.send().apply(given().header("Authorization", "Bearer " + secondKey)).statusCode();
            if (got != call.allowedStatus()) {
                wrong.add(call.name() + " as admin signed by the second key: " + got + ", expected " + call.allowedStatus());
            }
            Map<String, RequestSpecification> unauthenticated = new LinkedHashMap<>();
            unauthenticated.put("no token", given());
            unauthenticated.put("expired token", given().header("Authorization", "Bearer " + TestTokens.expired(Duration.ofMinutes(10))));
            unauthenticated.put("key outside the set", given().header("Authorization", "Bearer " + stranger));
            unauthenticated.put("garbage", given().header("Authorization", "Bearer not.a.token"));
            unauthenticated.forEach((what, request) -> {
                int status = call.send().apply(request).statusCode();
                if (status != 401) {
                    wrong.add(call.name() + " with " + what + ": " + status + ", expected 401");
                }
            });
        }
        assertEquals(List.of(), wrong);
        given().get("/q/health/live").then().statusCode(200);
    }
}
