package io.csiorchestrator.worker;

import static io.restassured.RestAssured.given;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

/**
 * The worker has no REST API of its own: its HTTP port serves {@code /q/health} and {@code /q/metrics} (Vert.x routes)
 * and nothing else, so it carries no JAX-RS server and no OpenAPI document (about 800 classes fewer in memory).
 */
@QuarkusTest
class NoRestApiTest {

    @Test
    void servesNoOpenApiDocumentAndNoResource() {
        given().when().get("/q/openapi").then().statusCode(404);
        given().when().get("/v1/volumes").then().statusCode(404);
    }

    @Test
    void servesItsMetricsWithoutAJaxRsServer() {
        given().when().get("/q/metrics").then().statusCode(200);
    }
}
