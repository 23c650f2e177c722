package io.csiorchestrator.plugins;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.hasItems;

import io.quarkus.test.junit.QuarkusTest;
import org.junit.jupiter.api.Test;

@QuarkusTest
class HealthEndpointTest {

    @Test
    void reportsUpWhenStarted() {
        given().when().get("/q/health").then().statusCode(200).body("status", equalTo("UP"));
    }

    @Test
    void readinessChecksKafkaTheDatabaseAndTheChannels() {
        given().when().get("/q/health/ready").then().statusCode(200)
                .body("status", equalTo("UP"))
                .body("checks.name", hasItems("Kafka connection health check", "Reactive PostgreSQL connections health check"))
                .body("checks.name", hasItem("SmallRye Reactive Messaging - readiness check"));
    }
}
