package io.csiorchestrator.worker;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.startsWith;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

/** The worker has no REST API of its own; /q/openapi still describes it. */
@QuarkusTest
class OpenApiEndpointTest {

    @Test
    void servesTheDocumentWithTheWorkersInfo() {
        given().when().get("/q/openapi?format=json").then().statusCode(200)
                .body("openapi", startsWith("3."))
                .body("info.title", equalTo("node-mount-worker"))
                .body("info.version", equalTo("0.1.0"))
                .body("info.description", containsString("/q/health"));
    }
}
