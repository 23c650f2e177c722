package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.hasSize;
import static org.hamcrest.Matchers.not;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import static org.awaitility.Awaitility.await;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.quarkus.test.junit.QuarkusTest;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import io.restassured.http.ContentType;
import io.restassured.path.json.JsonPath;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

@QuarkusTest
class VolumeApiTest {

    static final String CANARY = "canary-S3CRET-7f3a";

    @Test
    void validationListsEveryProblemAtOnceWithoutEchoingSecrets() {
        String body = """
                {"volumes": [
                  {"id": "../etc", "namespace": "ns 1", "externalId": "", "pluginId": null,
                   "accessMode": "many-writers", "attachmentMode": "block-device",
                   "mountOptions": {"fsType": "EXT4!", "mountFlags": ["ro", "password=%1$s,x"]},
                   "secrets": {"token": 42, "key": "%1$s"}, "parameters": {"a": 1}, "color": "red"},
                  {"id": "ok-1", "externalId": "e", "pluginId": "p", "accessMode": "single-node-writer"}
                ]}""".formatted(CANARY);
        String response = given().contentType(ContentType.JSON).body(body).post("/v1/volumes")
                .then().statusCode(400).extract().asString();
        assertFalse(response.contains(CANARY), response);
        List<Map<String, String>> problems = JsonPath.from(response).getList("problems");
        List<String> fields = problems.stream().map(p -> p.get("field")).toList();
        for (String expected : List.of("volumes[0].id", "volumes[0].namespace", "volumes[0].externalId", "volumes[0].pluginId",
                "volumes[0].accessMode", "volumes[0].mountOptions.fsType", "volumes[0].mountOptions.mountFlags[1]",
                "volumes[0].mountOptions", "volumes[0].secrets.token", "volumes[0].parameters.a", "volumes[0].color",
                "volumes[1].attachmentMode")) {
            org.junit.jupiter.api.Assertions.assertTrue(fields.contains(expected), expected + " in " + fields);
        }
        Map<String, String> mode = problems.stream().filter(p -> p.get("field").equals("volumes[0].accessMode")).findFirst().orElseThrow();
        assertEquals("'many-writers'", mode.get("value"));
        org.junit.jupiter.api.Assertions.assertTrue(mode.get("message").contains("single-node-writer"), mode.get("message"));
        Map<String, String> flag = problems.stream().filter(p -> p.get("field").equals("volumes[0].mountOptions.mountFlags[1]")).findFirst().orElseThrow();
        assertEquals("[redacted]", flag.get("value"));
        // Nothing was registered.
        given().get("/v1/volumes/default/ok-1").then().statusCode(404);
    }

    @Test
    void notJsonAndWrongShapesAreAnsweredWith400() {
        given().contentType(ContentType.JSON).body("[1, \"x\"]").post("/v1/volumes").then().statusCode(400)
                .body("problems.field", equalTo(List.of("volumes[0]", "volumes[1]")));
        given().contentType(ContentType.JSON).body("{\"volumes\": []}").post("/v1/volumes").then().statusCode(400);
        String broken = given().contentType(ContentType.JSON).body("{\"secrets\": {\"k\": " + CANARY + "}").post("/v1/volumes")
                .then().statusCode(400).body("problems[0].field", equalTo("(body)")).extract().asString();
        assertFalse(broken.contains(CANARY), broken);
    }

    @Test
    void registerListReadAndDeleteWithSecretsRedacted() {
        String id = ClaimFlowTest.unique("vol");
        given().contentType(ContentType.JSON).body(Map.ofEntries(
                        Map.entry("id", id), Map.entry("namespace", "team-a"), Map.entry("name", "Data"), Map.entry("externalId", "vol-0001"),
                        Map.entry("pluginId", "hostpath"), Map.entry("accessMode", "multi-node-single-writer"),
                        Map.entry("attachmentMode", "file-system"),
                        Map.entry("mountOptions", Map.of("fsType", "xfs", "mountFlags", List.of("noatime", "password=" + CANARY))),
                        Map.entry("secrets", Map.of("token", CANARY)), Map.entry("parameters", Map.of("tier", "fast")),
                        Map.entry("context", Map.of("share", "s1")), Map.entry("topology", Map.of("zone", "z1"))))
                .post("/v1/volumes").then().statusCode(201).body("registered", equalTo(List.of("team-a/" + id)));
        given().contentType(ContentType.JSON).body(Map.of("id", id, "namespace", "team-a", "externalId", "x", "pluginId", "hostpath",
                "accessMode", "multi-node-single-writer", "attachmentMode", "file-system")).post("/v1/volumes").then().statusCode(409);

        String detail = given().get("/v1/volumes/team-a/" + id).then().statusCode(200)
                .body("secrets.token", equalTo("[redacted]"))
                .body("mountOptions.fsType", equalTo("xfs"))
                .body("mountOptions.mountFlags", equalTo(List.of("[redacted]", "[redacted]")))
                .body("parameters.tier", equalTo("fast"))
                .body("schedulable", equalTo(false))
                .body("health", containsString("hostpath"))
                .body("claims", hasSize(0))
                .extract().asString();
        assertFalse(detail.contains(CANARY), detail);
        assertFalse(detail.contains("noatime"), detail);
        String list = given().get("/v1/volumes?namespace=team-a").then().statusCode(200)
                .body("id", hasItem(id)).body("find { it.id == '" + id + "' }.currentReaders", equalTo(0))
                .extract().asString();
        assertFalse(list.contains(CANARY), list);
        given().delete("/v1/volumes/team-a/" + id).then().statusCode(204);
        given().get("/v1/volumes/team-a/" + id).then().statusCode(404).body("problems[0].field", equalTo("volume"));
        given().get("/v1/volumes").then().statusCode(200).body("id", not(hasItem(id)));
    }

    /**
     * A volume-condition node event from the worker of a node where the volume is claimed (READY) shows in
     * the volume's REST detail: node, plugin, condition, the plugin's message and since (the event's time);
     * a later normal one replaces it; node events of other kinds are read and ignored.
     */
    @Test
    void aVolumeConditionFromAClaimingNodesWorkerShowsInTheVolumeDetail() {
        try (Bus bus = new Bus()) {
            String node = ClaimFlowTest.unique("node-c");
            String vol = bus.schedulableVolume("ns1", "cond", AccessMode.SINGLE_NODE_WRITER, node);
            ClaimRequested claim = Bus.claim("ns1", vol, "alloc-1", node, ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
            bus.send(claim);
            bus.succeed(bus.awaitCommand(vol, NodeCommandKind.MOUNT));
            bus.awaitStatus(claim.requestId(), ClaimState.READY);
            given().get("/v1/volumes/ns1/" + vol).then().statusCode(200).body("conditions", hasSize(0));

            Instant abnormalSince = Instant.now().truncatedTo(ChronoUnit.MILLIS);
            bus.send(new NodeEvent(node, null, NodeEventKind.HEAL, "Heal stale mount", "plug", "ns1", vol, null, true,
                    null, Map.of("staged", "0"), abnormalSince));
            bus.send(new NodeEvent(node, null, NodeEventKind.VOLUME_CONDITION, "Volume condition abnormal", "plug", "ns1",
                    vol, null, null, null, Map.of("condition", "abnormal", "message", "disk failing"), abnormalSince));
            await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                    .body("conditions", hasSize(1))
                    .body("conditions[0].nodeId", equalTo(node))
                    .body("conditions[0].pluginId", equalTo("plug"))
                    .body("conditions[0].condition", equalTo("abnormal"))
                    .body("conditions[0].message", equalTo("disk failing"))
                    .body("conditions[0].since", equalTo(abnormalSince.toString())));

            Instant normalSince = abnormalSince.plusSeconds(5);
            bus.send(new NodeEvent(node, null, NodeEventKind.VOLUME_CONDITION, "Volume condition normal", "plug", "ns1",
                    vol, null, null, null, Map.of("condition", "normal", "message", "ok"), normalSince));
            await().atMost(Bus.WAIT).untilAsserted(() -> given().get("/v1/volumes/ns1/" + vol).then().statusCode(200)
                    .body("conditions", hasSize(1))
                    .body("conditions[0].condition", equalTo("normal"))
                    .body("conditions[0].since", equalTo(normalSince.toString())));
        }
    }

    @Test
    void openApiDescribesTheVolumesApi() {
        given().get("/q/openapi?format=json").then().statusCode(200).body(containsString("/v1/volumes/{namespace}/{id}/detach"));
    }
}
