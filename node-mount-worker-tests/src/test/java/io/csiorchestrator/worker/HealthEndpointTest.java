package io.csiorchestrator.worker;

import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItems;

import io.quarkus.test.junit.QuarkusTest;
import java.time.Duration;
import org.junit.jupiter.api.Test;

@QuarkusTest
class HealthEndpointTest {

    @Test
    void reportsUpWhenStarted() {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                given().when().get("/q/health").then().statusCode(200).body("status", equalTo("UP")));
    }

    @Test
    void readinessNamesTheWorkerAndItsKafkaClients() {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                given().when().get("/q/health/ready").then().statusCode(200)
                        .body("checks.name", hasItems("node-mount-worker", "kafka"))
                        .body("checks.find { it.name == 'kafka' }.status", equalTo("UP"))
                        .body("checks.find { it.name == 'kafka' }.data.consumer", containsString("node-commands"))
                        .body("checks.find { it.name == 'kafka' }.data.producer", equalTo("ok")));
    }
}
