package io.csiorchestrator.claims.status;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.claims.LogCapture;
import io.csiorchestrator.testkit.SendsOwnCredentials;
import io.csiorchestrator.testkit.TestTokens;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.response.Response;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The status page's login by a one-time code (issue 35 item 1): issued to a caller with a token for every namespace,
 * traded once for the cookie csi_token (HttpOnly, SameSite=Strict, a session cookie) that then reads the page's data;
 * neither the token nor the code in a log line, and the token in no answer but the cookie.
 */
@QuarkusTest
@SendsOwnCredentials
class StatusLoginTest {

    @Test
    void aCodeIsTradedOnceForTheCallersTokenInAnHttpOnlyCookie() {
        String token = TestTokens.withRoles(Set.of("volume-read", "plugin-read"), List.of("*"));
        String signature = token.substring(token.lastIndexOf('.') + 1);
        try (LogCapture log = LogCapture.start()) {
            Response issued = given().header("Authorization", "Bearer " + token).post("/v1/status/login-codes");
            assertEquals(201, issued.statusCode(), issued.asString());
            assertFalse(issued.asString().contains(signature), "the token in the code's answer");
            String code = issued.jsonPath().getString("code");
            assertEquals("/status/#login=" + code, issued.jsonPath().getString("link"));

            // a stale cookie the browser may still hold neither stops the page's files nor the trade
            String stale = TestTokens.expired(java.time.Duration.ofMinutes(10));
            given().cookie("csi_token", stale).get("/status/").then().statusCode(200);
            given().cookie("csi_token", stale).get("/v1/status/feed").then().statusCode(401);
            Response login = given().cookie("csi_token", stale)
                    .formParam("code", code).post("/v1/status/login");
            assertEquals(204, login.statusCode(), login.asString());
            // (the header as said in a failure, with the token replaced)
            String setCookie = login.getHeader("Set-Cookie");
            String shown = setCookie.replace(token, "<the token>");
            assertTrue(setCookie.startsWith("csi_token=" + token + ";"), "the caller's token in the cookie");
            assertTrue(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict")
                    && setCookie.contains("Path=/"), shown);
            assertFalse(setCookie.contains("Max-Age") || setCookie.contains("Expires"), "a session cookie: " + shown);
            given().cookie("csi_token", login.getCookie("csi_token")).get("/v1/status/feed").then().statusCode(200);

            Response again = given().formParam("code", code).post("/v1/status/login");
            assertEquals(401, again.statusCode());
            assertTrue(again.asString().contains("used already or has expired"), again.asString());
            assertNull(again.getHeader("Set-Cookie"));

            for (String line : log.lines()) {
                assertFalse(line.contains(signature), "the token in the log: " + line);
                assertFalse(line.contains(code), "the code in the log: " + line);
            }
        }
    }

    @Test
    void aCodeNeedsATokenForEveryNamespaceAndAnUnknownCodeIsRefused() {
        given().post("/v1/status/login-codes").then().statusCode(401);
        given().header("Authorization", "Bearer " + TestTokens.withRoles(Set.of("volume-read"), List.of("team-a")))
                .post("/v1/status/login-codes").then().statusCode(403);
        given().header("Authorization", "Bearer " + TestTokens.withRoles(Set.of("volume-write"), List.of("*")))
                .post("/v1/status/login-codes").then().statusCode(403);
        given().formParam("code", "no-such-code").post("/v1/status/login").then().statusCode(401);
        given().post("/v1/status/login").then().statusCode(401);
    }
}
