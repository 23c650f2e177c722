package io.csiorchestrator.plugins;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.notNullValue;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

/** {@code /q/openapi} describes the REST API, with its error bodies. */
@QuarkusTest
class OpenApiTest {

    @Test
    void theDocumentListsThePluginPathsAndTheirErrors() {
        given().queryParam("format", "json").get("/q/openapi").then().statusCode(200)
                .body("info.title", equalTo("csi-orchestrator plugin-registry-service"))
                .body("info.version", equalTo("0.1.0"))
                .body("paths.'/v1/plugins'.get.responses.'200'", notNullValue())
                .body("paths.'/v1/plugins/{id}'.get.responses.'200'", notNullValue())
                .body("paths.'/v1/plugins/{id}'.get.responses.'404'.content.'application/json'.schema.'$ref'",
                        equalTo("#/components/schemas/ApiError"))
                .body("paths.'/v1/plugins/{id}'.get.responses.'400'.content.'application/json'.schema.'$ref'",
                        equalTo("#/components/schemas/ApiError"))
                .body("components.schemas.PluginDetail.properties.instances", notNullValue())
                .body("components.schemas.ApiError.properties.problems", notNullValue());
    }
}
