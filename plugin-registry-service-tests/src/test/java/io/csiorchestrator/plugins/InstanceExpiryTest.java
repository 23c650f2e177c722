package io.csiorchestrator.plugins;

import static io.csiorchestrator.plugins.HealthRecords.awaitStatus;
import static io.csiorchestrator.plugins.HealthRecords.awaitStatusRecord;
import static io.csiorchestrator.plugins.HealthRecords.counts;
import static io.csiorchestrator.plugins.HealthRecords.decodeStatus;
import static io.csiorchestrator.plugins.HealthRecords.monolith;
import static io.csiorchestrator.plugins.HealthRecords.node;
import static io.csiorchestrator.plugins.HealthRecords.now;
import static io.csiorchestrator.plugins.HealthRecords.send;
import static io.csiorchestrator.plugins.HealthRecords.statusTopic;
import static io.csiorchestrator.plugins.HealthRecords.uniquePluginId;
import static io.restassured.RestAssured.given;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.plugins.metrics.RegistryMetrics;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.PostgresResource;
import io.csiorchestrator.testkit.TcpProxy;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.path.json.JsonPath;
import jakarta.inject.Inject;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The TTL turns a silent instance unhealthy (published); long silence removes it, then the plugin (tombstone).
 * The registry's own database outage never does.
 */
@QuarkusTest
@TestProfile(InstanceExpiryTest.LongerRemoval.class)
class InstanceExpiryTest {

    /**
     * {@link ShortTtlProfile} with removal after 20 s instead of 10: the revival below must land between a silence and
     * its removal, and on a loaded 2-core machine the registry's own lag and the test's reaction took up to 7.5 s of
     * the 8 s the shared profile leaves.
     */
    public static class LongerRemoval extends ShortTtlProfile {
        @Override
        public java.util.Map<String, String> getConfigOverrides() {
            java.util.Map<String, String> config = new java.util.HashMap<>(super.getConfigOverrides());
            config.put("csi.registry.plugin-gc-after", "20s");
            return config;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static KafkaTestClient kafka;

    @Inject
    RegistryMetrics metrics;

    @BeforeAll
    static void client() {
        kafka = KafkaTestClient.forSharedBroker();
    }

    @AfterAll
    static void close() {
        kafka.close();
    }

    /**
     * n2's revival must be received between its silence (2 s after its last report) and its removal (20 s after it,
     * both on the registry's recorded time, which lags behind on a loaded machine), so nothing slow stands between
     * seeing the silence and sending the revival: REST is warmed up before the reports are sent (a first request,
     * client and server cold, took up to 10 s on a loaded 2-core machine), the silence is watched on REST with a plain
     * JSON read, and the revival is sent as soon as REST shows it. The silent state's assertions come after, on that
     * REST answer and on the {@code plugin-status} records, read from where the test started (not the ~250 records
     * earlier tests left on the topic) in the order the registry published them.
     */
    @Test
    void aSilentInstanceTurnsUnhealthyRevivesAndTheSilentPluginIsRemoved() {
        kafka.fromNow(statusTopic());
        String plugin = uniquePluginId("ttl");
        given().get("/v1/plugins/" + plugin).then().statusCode(404);
        assertFalse(given().get("/v1/plugins").then().statusCode(200).extract().jsonPath().getList("id").contains(plugin));
        Instant t = now();
        send(kafka, monolith(plugin, "n1", true, t));
        send(kafka, node(plugin, "n2", true, t));
        // Both registered (on a slow machine n1 may already have turned silent by then).
        awaitStatus(kafka, plugin, s -> s.nodesExpected() == 2);

        // Nothing more arrives: after the 2 s TTL both turn unhealthy, on REST and published.
        AtomicReference<String> silentBody = new AtomicReference<>();
        await().atMost(HealthRecords.TIMEOUT).pollInterval(Duration.ofMillis(200)).until(() -> {
            String body = given().get("/v1/plugins/" + plugin).then().statusCode(200).extract().asString();
            silentBody.set(body);
            JsonNode instances = JSON.readTree(body).path("instances");
            boolean allSilent = instances.size() == 2;
            for (JsonNode instance : instances) {
                allSilent &= instance.hasNonNull("silenceReason");
            }
            return allSilent;
        });
        // n2 is heard from again at once (its removal is due 20 s after its last report): healthy again, n1 stays silent.
        Instant later = now();
        send(kafka, node(plugin, "n2", true, later));

        JsonPath detail = new JsonPath(silentBody.get());
        assertEquals(0, detail.getInt("nodesHealthy"));
        assertEquals(true, detail.getBoolean("instances.find { it.nodeId == 'n2' }.reportedHealthy"));
        assertEquals("no heartbeat from node n2 for more than 2s",
                detail.getString("instances.find { it.nodeId == 'n2' }.silenceReason"));
        PluginStatus silent = awaitStatus(kafka, plugin, counts(0, 1, 0, 2));
        PluginStatus.NodeInstance n1 = silent.nodes().get(0);
        assertEquals("no heartbeat from node n1 for more than 2s", n1.healthDescription());
        assertEquals("no heartbeat from node n1 for more than 2s", silent.controllers().get(0).healthDescription());
        assertEquals("no heartbeat from node n2 for more than 2s", silent.nodes().get(1).healthDescription());

        PluginStatus revived = awaitStatus(kafka, plugin, s -> counts(0, 1, 1, 2).test(s)
                && s.nodes().get(1).lastSeen().equals(later));
        assertTrue(revived.nodes().get(1).healthy());
        assertEquals("ready", revived.nodes().get(1).healthDescription());

        // Silent past the 20 s removal delay: n1 goes, then n2, then the plugin with a tombstone.
        awaitStatus(kafka, plugin, s -> s.nodesExpected() == 1 && s.controllersExpected() == 0);
        ConsumerRecord<String, String> tombstone = kafka.awaitRecord(statusTopic(),
                r -> plugin.equals(r.key()) && r.value() == null, Duration.ofSeconds(45));
        assertNull(tombstone.value());
        assertEquals(EventType.PLUGIN_STATUS.cloudEventType(), CloudEventHeaders.requireValid(tombstone.headers(), EventType.PLUGIN_STATUS).type());
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> given().get("/v1/plugins/" + plugin).then().statusCode(404));
        List<String> listed = given().get("/v1/plugins").then().statusCode(200).extract().jsonPath().getList("id");
        assertFalse(listed.contains(plugin));

        // A report after the removal registers the plugin afresh.
        send(kafka, node(plugin, "n3", true, Instant.now()));
        PluginStatus again = awaitStatus(kafka, plugin, s -> s.nodesExpected() == 1 && s.nodes().get(0).nodeId().equals("n3"));
        assertTrue(again.nodes().get(0).healthy());
    }

    /**
     * The registry's database goes away (its proxy cut) while node n1's heartbeats keep arriving on
     * {@code plugin-health} every 250 ms and n2's stop at the cut; it stays away until n1 has sent heartbeats for
     * 22 s, longer than the TTL (2 s) and the removal delay (20 s), that the registry could not record. After
     * the database is back, the first {@code plugin-status} record of the plugin that differs from "both
     * healthy" shows n2 unhealthy (its heartbeats really stopped) and n1 still there and healthy; REST shows n1
     * healthy; {@code csi_plugin_expiry_counting} is 0 during the outage and 1 after. Then n1's heartbeats stop
     * too, with the registry healthy: n1 turns unhealthy with the TTL's reason, as any silent instance.
     */
    @Test
    void theRegistrysOwnDatabaseOutageNeverSilencesNorRemovesAnInstanceWhoseHeartbeatsKeptComing() {
        TcpProxy database = PostgresResource.proxy();
        assertNotNull(database, "the test datasource goes through a proxy (TestInfrastructure)");
        String plugin = uniquePluginId("outage-ttl");
        AtomicReference<Instant> n1Sent = new AtomicReference<>();
        ScheduledExecutorService workers = Executors.newScheduledThreadPool(2);
        try {
            ScheduledFuture<?> n1 = workers.scheduleAtFixedRate(() -> {
                Instant at = now();
                send(kafka, node(plugin, "n1", true, at));
                n1Sent.set(at);
            }, 0, 250, TimeUnit.MILLISECONDS);
            ScheduledFuture<?> n2 = workers.scheduleAtFixedRate(() -> send(kafka, node(plugin, "n2", true, now())),
                    0, 250, TimeUnit.MILLISECONDS);
            ConsumerRecord<String, String> registered = awaitStatusRecord(kafka, plugin, counts(0, 0, 2, 2));

            n2.cancel(false);
            double retries = metrics.retries(true);
            Instant cut = Instant.now();
            database.cut();
            await().atMost(Duration.ofSeconds(60)).until(() -> metrics.retries(true) - retries >= 3
                    && Duration.between(cut, n1Sent.get()).compareTo(Duration.ofSeconds(22)) > 0);
            assertEquals(0.0, expiryCounting(), "the registry says it does not count silence while it cannot record");
            database.restore();

            ConsumerRecord<String, String> next = kafka.awaitRecord(statusTopic(), r -> plugin.equals(r.key())
                    && r.offset() > registered.offset() && (r.value() == null || !counts(0, 0, 2, 2).test(decodeStatus(r))),
                    Duration.ofSeconds(90));
            assertNotNull(next.value(), "the plugin was not removed");
            PluginStatus afterOutage = decodeStatus(next);
            assertTrue(find(afterOutage, "n1").map(PluginStatus.NodeInstance::healthy).orElse(false),
                    "n1 is there and healthy: " + next.value());
            assertEquals("no heartbeat from node n2 for more than 2s", instance(afterOutage, "n2").healthDescription());
            JsonPath detail = given().get("/v1/plugins/" + plugin).then().statusCode(200).extract().jsonPath();
            assertEquals(true, detail.getBoolean("instances.find { it.nodeId == 'n1' }.healthy"));
            assertNull(detail.getString("instances.find { it.nodeId == 'n1' }.silenceReason"));
            assertEquals(1.0, expiryCounting(), "counting again once caught up");

            // The converse, with the registry healthy: n1's heartbeats stop, and it turns unhealthy after the TTL.
            n1.cancel(false);
            PluginStatus n1Silent = awaitStatus(kafka, plugin, s -> find(s, "n1").filter(n -> !n.healthy()).isPresent());
            assertEquals("no heartbeat from node n1 for more than 2s", instance(n1Silent, "n1").healthDescription());
        } finally {
            workers.shutdownNow();
            database.restore();
        }
    }

    private static double expiryCounting() {
        return PrometheusText.value(PrometheusText.scrape(), "csi_plugin_expiry_counting", Map.of());
    }

    private static PluginStatus.NodeInstance instance(PluginStatus status, String nodeId) {
        return find(status, nodeId).orElseThrow(() -> new AssertionError("no instance on node " + nodeId + " in " + status));
    }

    private static Optional<PluginStatus.NodeInstance> find(PluginStatus status, String nodeId) {
        return status.nodes().stream().filter(n -> n.nodeId().equals(nodeId)).findFirst();
    }
}
