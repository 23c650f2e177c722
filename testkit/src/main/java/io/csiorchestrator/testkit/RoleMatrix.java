package io.csiorchestrator.testkit;

import static io.restassured.RestAssured.given;

import io.restassured.response.Response;
import io.restassured.specification.RequestSpecification;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The role x endpoint matrix of a service's REST security (README "Security"), for its Quarkus test: every role
 * against every operation, then the tokens that must never get in.
 */
public final class RoleMatrix {

    /** Every role a token may carry (Nomad's CSI capabilities, README "Security"). */
    public static final Set<String> ROLES = Set.of("volume-read", "volume-write", "volume-mount", "volume-detach",
            "plugin-read", "admin");

    /** One REST operation; the roles allowed to call it, and the status an allowed caller gets for it in the test. */
    public record Call(String name, Function<RequestSpecification, Response> send, Set<String> allowed, int allowedStatus) {
    }

    private RoleMatrix() {
    }

    /**
     * The cells that answered otherwise than they must, as "operation as/with what: got, expected" lines (empty:
     * all right): a token of each single role gets the operation's own answer when the role is allowed, else 403;
     * an admin token signed by the key set's second key is accepted; no token, an expired one, one signed by a key
     * outside the set, and garbage get 401.
     */
    public static List<String> wrongCells(List<Call> calls) {
        List<String> wrong = new ArrayList<>();
        String stranger = TestTokens.issue(TestTokens.STRANGER, Set.of("admin"), List.of("*"), Duration.ofHours(1));
        String secondKey = TestTokens.issue(TestTokens.SECONDARY, Set.of("admin"), List.of("*"), Duration.ofHours(1));
        for (Call call : calls) {
            for (String role : ROLES) {
                String token = TestTokens.withRoles(Set.of(role), List.of("*"));
                int expected = call.allowed().contains(role) ? call.allowedStatus() : 403;
                int got = call.send().apply(given().header("Authorization", "Bearer " + token)).statusCode();
                if (got != expected) {
                    wrong.add(call.name() + " as " + role + ": " + got + ", expected " + expected);
                }
            }
            int second = call.send().apply(given().header("Authorization", "Bearer " + secondKey)).statusCode();
            if (second != call.allowedStatus()) {
                wrong.add(call.name() + " as admin signed by the second key: " + second + ", expected " + call.allowedStatus());
            }
            Map<String, RequestSpecification> unauthenticated = new LinkedHashMap<>();
            unauthenticated.put("no token", given());
            unauthenticated.put("expired token", given().header("Authorization", "Bearer " + TestTokens.expired(Duration.ofMinutes(10))));
            unauthenticated.put("key outside the set", given().header("Authorization", "Bearer " + stranger));
            unauthenticated.put("garbage", given().header("Authorization", "Bearer not.a.token"));
            unauthenticated.forEach((what, request) -> {
                int got = call.send().apply(request).statusCode();
                if (got != 401) {
                    wrong.add(call.name() + " with " + what + ": " + got + ", expected 401");
                }
            });
        }
        return wrong;
    }
}
