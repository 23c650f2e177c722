package io.csiorchestrator.plugins;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.csiorchestrator.testkit.RoleMatrix;
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

    static final Set<String> ROLES = RoleMatrix.ROLES;

    static final List<RoleMatrix.Call> CALLS = List.of(
            new RoleMatrix.Call("GET /v1/plugins", r -> r.get("/v1/plugins"), Set.of("plugin-read", "admin"), 200),
            new RoleMatrix.Call("GET /v1/plugins/{id}", r -> r.get("/v1/plugins/sec-missing"), Set.of("plugin-read", "admin"), 404),
            new RoleMatrix.Call("GET /v1/nodes", r -> r.get("/v1/nodes"), Set.of("plugin-read", "admin"), 200),
            new RoleMatrix.Call("GET /v1/nodes/{id}", r -> r.get("/v1/nodes/sec-missing"), Set.of("plugin-read", "admin"), 404),
            new RoleMatrix.Call("GET /q/metrics", r -> r.get("/q/metrics"), ROLES, 200),
            new RoleMatrix.Call("GET /q/openapi", r -> r.get("/q/openapi"), ROLES, 200));

    /**
     * Every role against every operation: exactly the allowed cells get through (200, or 404 for a plugin that
     * does not exist), a token without the role gets 403; no token, an expired one, one signed by a key outside the
     * key set, or garbage gets 401; one signed by the second key of the set is accepted. Health needs no token.
     */
    @Test
    void roleByEndpointMatrix() {
        assertEquals(List.of(), RoleMatrix.wrongCells(CALLS));
        given().get("/q/health/live").then().statusCode(200);
    }
}
