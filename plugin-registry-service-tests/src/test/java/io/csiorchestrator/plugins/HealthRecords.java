package io.csiorchestrator.plugins;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.EventType;
import io.csiorchestrator.events.NodeInfo;
import io.csiorchestrator.events.PluginHealth;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.PluginType;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.TestIdentities;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.eclipse.microprofile.config.ConfigProvider;

/** Builds and sends {@code plugin-health} records and reads {@code plugin-status} for the tests. */
final class HealthRecords {

    static final Duration TIMEOUT = Duration.ofSeconds(30);

    private HealthRecords() {
    }

    static TopicCatalog topics() {
        return new TopicCatalog(ConfigProvider.getConfig().getOptionalValue(TopicCatalog.PREFIX_PROPERTY, String.class).orElse(""));
    }

    static String healthTopic() {
        return topics().name(Topic.PLUGIN_HEALTH);
    }

    static String statusTopic() {
        return topics().name(Topic.PLUGIN_STATUS);
    }

    static String deadLetterTopic() {
        return topics().deadLetterName(Topic.PLUGIN_HEALTH);
    }

    /** A plugin id no other test uses. */
    static String uniquePluginId(String name) {
        return name + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Now, to the millisecond, so tests can add seconds to it and compare with what the service stores. */
    static Instant now() {
        return Instant.now().truncatedTo(ChronoUnit.MILLIS);
    }

    static PluginHealth controller(String plugin, String node, boolean healthy, Instant at, String... caps) {
        return new PluginHealth(plugin, node, PluginType.CONTROLLER, healthy, healthy ? "ready" : "probe failed",
                "hostpath.csi.example", "1.2.0", List.of("CONTROLLER_SERVICE"), List.of(caps), List.of(), null, false, at);
    }

    static PluginHealth node(String plugin, String node, boolean healthy, Instant at) {
        return new PluginHealth(plugin, node, PluginType.NODE, healthy, healthy ? "ready" : "probe failed",
                "hostpath.csi.example", "1.2.0", List.of(), List.of(), List.of("STAGE_UNSTAGE_VOLUME"),
                new NodeInfo("ext-" + node, 16L, Map.of("topology.example/zone", "z1")), false, at);
    }

    static PluginHealth monolith(String plugin, String node, boolean healthy, Instant at) {
        return new PluginHealth(plugin, node, PluginType.MONOLITH, healthy, healthy ? "ready" : "probe failed",
                "monolith.csi.example", "0.9.1", List.of("CONTROLLER_SERVICE"), List.of("CREATE_DELETE_VOLUME"),
                List.of(), new NodeInfo("ext-" + node, 0L, Map.of()), true, at);
    }

    static Map<String, String> cloudEventHeaders() {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(EventType.PLUGIN_HEALTH, "/test-worker").writeTo(headers);
        Map<String, String> map = new LinkedHashMap<>();
        for (Header header : headers) {
            map.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
        }
        return map;
    }

    /** Sends a report keyed by its record key, with CloudEvents headers. */
    static void send(KafkaTestClient kafka, PluginHealth report) {
        String value = EventCodec.encodeToString(report);
        kafka.send(healthTopic(), report.recordKey(), value, signed(report.recordKey(), value, cloudEventHeaders()));
    }

    /** Sends a report to one partition, so the order of several records is the order they are read in. */
    static void sendToPartition0(KafkaTestClient kafka, PluginHealth report) {
        sendRawToPartition0(kafka, report.recordKey(), EventCodec.encodeToString(report));
    }

    static void sendRawToPartition0(KafkaTestClient kafka, String key, String value) {
        List<Header> headers = new ArrayList<>();
        signed(key, value, cloudEventHeaders()).forEach((k, v) -> headers.add(new RecordHeader(k, v.getBytes(StandardCharsets.UTF_8))));
        kafka.send(new ProducerRecord<>(healthTopic(), 0, key, value, headers));
    }

    /**
     * {@code headers} signed by the node the key {@code pluginId/nodeId} names, as that node's worker signs; a key
     * without a usable node id (a hostile record's) leaves them unsigned.
     */
    static Map<String, String> signed(String key, String value, Map<String, String> headers) {
        int slash = key == null ? -1 : key.lastIndexOf('/');
        if (slash < 0 || value == null) {
            return headers;
        }
        try {
            return TestIdentities.signed(TestIdentities.node(key.substring(slash + 1)), key, value, headers);
        } catch (IllegalArgumentException notAnId) {
            return headers;
        }
    }

    static PluginStatus decodeStatus(ConsumerRecord<String, String> record) {
        return EventCodec.decode(PluginStatus.class, record.value());
    }

    /** The first {@code plugin-status} record of the plugin whose status matches. */
    static ConsumerRecord<String, String> awaitStatusRecord(KafkaTestClient kafka, String pluginId, Predicate<PluginStatus> matches) {
        return kafka.awaitRecord(statusTopic(),
                r -> pluginId.equals(r.key()) && r.value() != null && matches.test(decodeStatus(r)), TIMEOUT);
    }

    static PluginStatus awaitStatus(KafkaTestClient kafka, String pluginId, Predicate<PluginStatus> matches) {
        return decodeStatus(awaitStatusRecord(kafka, pluginId, matches));
    }

    static Predicate<PluginStatus> counts(int controllersHealthy, int controllersExpected, int nodesHealthy, int nodesExpected) {
        return s -> s.controllersHealthy() == controllersHealthy && s.controllersExpected() == controllersExpected
                && s.nodesHealthy() == nodesHealthy && s.nodesExpected() == nodesExpected;
    }

    /** Every {@code plugin-status} record of the plugin on the topic now, in order (one partition per key). */
    static List<ConsumerRecord<String, String>> statusRecords(KafkaTestClient kafka, String pluginId) {
        return kafka.readAll(statusTopic()).stream().filter(r -> pluginId.equals(r.key())).toList();
    }

    /**
     * Waits until the node lease authority answers a lease request (of a node of its own, {@code ready-<uuid>}) with a
     * grant: its consumer has its partitions and loaded their leases. A test that takes the database away must not do
     * so before: the authority loads its partitions' leases from PostgreSQL when they are assigned, and a load that
     * fails there leaves their lapses to the next assignment (LeaseAuthority.onPartitionsAssigned).
     */
    static void awaitLeaseAuthorityServing(KafkaTestClient kafka) {
        String node = "ready-" + UUID.randomUUID().toString().substring(0, 8);
        String id = "req-" + UUID.randomUUID();
        String value = EventCodec.encodeToString(new io.csiorchestrator.events.NodeLeaseRequested(id, node, 0, Instant.now()));
        RecordHeaders h = new RecordHeaders();
        CloudEventHeaders.create(EventType.NODE_LEASE_REQUESTED, "/test").writeTo(h);
        Map<String, String> headers = new LinkedHashMap<>();
        h.forEach(header -> headers.put(header.key(), new String(header.value(), StandardCharsets.UTF_8)));
        kafka.send(topics().name(Topic.NODE_LEASE_REQUESTS), node, value,
                TestIdentities.signed(TestIdentities.node(node), node, value, headers));
        kafka.awaitRecord(topics().name(Topic.NODE_LEASES), r -> node.equals(r.key()) && r.value().contains(id), TIMEOUT);
    }
}
