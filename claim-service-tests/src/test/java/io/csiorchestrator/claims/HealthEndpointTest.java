package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

@QuarkusTest
class HealthEndpointTest {

    @Test
    void reportsUpWhenStarted() {
        given().when().get("/q/health").then().statusCode(200).body("status", equalTo("UP"));
    }
}
