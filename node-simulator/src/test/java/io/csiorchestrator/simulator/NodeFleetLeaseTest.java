package io.csiorchestrator.simulator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeLeaseRequested;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.mount.SecretOpener;
import io.csiorchestrator.worker.telemetry.Telemetry;
import io.csiorchestrator.worker.telemetry.WorkerMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Simulated nodes hold leases (issue 19): against the real broker, each node of the fleet sends lease requests
 * (CloudEvents headers, held epoch 0) again and again at ttl/6, so plugin-registry-service keeps their leases valid.
 * The broker is closed as every deployment's is (this module's Surefire sets {@code csi.testkit.kafka.secured}): the
 * fleet connects as its principal {@code node-simulator} with exactly its ACLs from {@code KafkaAccess}.
 */
class NodeFleetLeaseTest {

    @TempDir
    Path root;

    @Test
    void everyNodeRequestsItsLeaseRepeatedly() throws Exception {
        TopicCatalog topics = new TopicCatalog("sim-" + UUID.randomUUID().toString().substring(0, 8) + ".");
        try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
            kafka.createTopic(topics.name(Topic.NODE_LEASE_REQUESTS), 6, Map.of());
            KafkaResource.createContractTopics(topics.prefix()); // the rest, as claim-service makes them
            NodeFleet.Settings settings = new NodeFleet.Settings(kafka.bootstrapServers(), topics, root,
                    List.of("sim-a", "sim-b"), "simulated", Duration.ZERO, false, Duration.ofSeconds(30), 1,
                    Duration.ofMillis(600), SecretOpener.none());
            try (NodeFleet fleet = new NodeFleet(settings,
                    new Telemetry(new WorkerMetrics(new SimpleMeterRegistry()), NodeSimulator.tracing()))
                    .withSecurity(KafkaResource.securityOf(KafkaAccess.Principal.simulator(), topics.prefix()))) {
                fleet.start();
                // three requests of each node: the renewal goes on (every 100 ms at ttl 600 ms)
                List<ConsumerRecord<String, String>> records = new java.util.ArrayList<>();
                for (String node : List.of("sim-a", "sim-b")) {
                    records.addAll(kafka.awaitRecords(topics.name(Topic.NODE_LEASE_REQUESTS),
                            r -> node.equals(r.key()), 3, Duration.ofSeconds(30)));
                }
                Set<String> ids = new TreeSet<>();
                for (ConsumerRecord<String, String> r : records) {
                    CloudEventHeaders.requireValid(r.headers(), EventType.NODE_LEASE_REQUESTED);
                    NodeLeaseRequested request = EventCodec.decode(NodeLeaseRequested.class, r.value());
                    assertEquals(r.key(), request.nodeId());
                    assertEquals(0, request.heldEpoch());
                    assertTrue(ids.add(request.requestId()), "a fresh request id each time");
                }
            }
        }
    }
}
