package io.csiorchestrator.claims;

import static io.restassured.RestAssured.given;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.ContractEvent;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.KafkaAccess;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.MountOptions;
import io.csiorchestrator.events.MountSupport;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.PluginStatus;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.restassured.http.ContentType;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The test's side of claim-service's topics, standing in for the other parts: a scheduler sending
 * claims, the plugin registry publishing plugin-status, and the worker answering node commands with
 * mount-done. None of these parts runs in claim-service's tests: what they check is claim-service's
 * answers to these inputs. On the closed broker each part writes as its own principal with its ACLs from
 * {@code KafkaAccess} (a claim request as {@code scheduler-test-scheduler}, a node's record as {@code node-<id>},
 * plugin-status and node-leases as {@code plugin-registry-service}); the test reads as the super user.
 */
public final class Bus implements AutoCloseable {

    public static final Duration WAIT = Duration.ofSeconds(30);

    /**
     * Reads claim-status and node-commands from where they ended when this Bus was made (before its test acts): each
     * await matches only this test's answers and commands, not every record of the module's earlier tests.
     */
    public final KafkaTestClient kafka = KafkaTestClient.forSharedBroker()
            .fromNow(topic(Topic.CLAIM_STATUS), topic(Topic.NODE_COMMANDS));
    /**
     * The producers of the parts the buses play, by principal name (made on first use), shared by every Bus of the
     * test JVM (of one Quarkus class loader) on its one shared broker: each send waits for the broker's ack, so a
     * producer carries nothing from one test to the next, and a new one per test cost a TLS handshake and a SCRAM
     * exchange per principal (about half a second each on 2 cores). Never closed: they end with the JVM, as the broker.
     */
    private static final Map<String, KafkaTestClient> WRITERS = new java.util.concurrent.ConcurrentHashMap<>();
    private final Set<String> seenCommands = new HashSet<>();

    public static String topic(Topic topic) {
        return TestResources.PREFIX + topic.baseName();
    }

    public void send(ContractEvent event) {
        send(event, Map.of());
    }

    /** Sends {@code event} with CloudEvents headers plus {@code extra} ones (e.g. a traceparent). */
    public void send(ContractEvent event, Map<String, String> extra) {
        if (event instanceof PluginStatus status) {
            // every node a plugin runs on has joined, so it has a sealing key in the trust file (issue 20 item 4):
            // claim-service seals each node command's secrets for its node
            status.controllers().forEach(c -> io.csiorchestrator.testkit.TestIdentities.sealing(
                    io.csiorchestrator.events.identity.Principal.node(c.nodeId())));
            status.nodes().forEach(n -> io.csiorchestrator.testkit.TestIdentities.sealing(
                    io.csiorchestrator.events.identity.Principal.node(n.nodeId())));
        }
        writer(writerOf(event)).send(record(event, extra));
    }

    /** {@code event} as the record {@link #send} sends: CloudEvents headers plus {@code extra}, signed as production would. */
    public static org.apache.kafka.clients.producer.ProducerRecord<String, String> record(ContractEvent event, Map<String, String> extra) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(event.eventType(), "/test").writeTo(headers);
        Map<String, String> h = new LinkedHashMap<>();
        headers.forEach(header -> h.put(header.key(), new String(header.value(), java.nio.charset.StandardCharsets.UTF_8)));
        h.putAll(extra);
        String value = EventCodec.encodeToString(event);
        io.csiorchestrator.events.identity.IdentityKey signer = signer(event);
        return producerRecord(topic(event.eventType().topic()), event.recordKey(), value,
                signer == null ? h : io.csiorchestrator.testkit.TestIdentities.signed(signer, event.recordKey(), value, h));
    }

    /** {@code value} under {@code key} with the valid CloudEvents headers of {@code topic}'s event type, unsigned. */
    public static org.apache.kafka.clients.producer.ProducerRecord<String, String> rawRecord(Topic topic, String key, String value) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(io.csiorchestrator.events.EventType.forTopic(topic), "/test").writeTo(headers);
        return new org.apache.kafka.clients.producer.ProducerRecord<>(topic(topic), null, key, value, headers);
    }

    private static org.apache.kafka.clients.producer.ProducerRecord<String, String> producerRecord(String topic, String key,
            String value, Map<String, String> headers) {
        RecordHeaders h = new RecordHeaders();
        headers.forEach((k, v) -> h.add(k, v == null ? null : v.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        return new org.apache.kafka.clients.producer.ProducerRecord<>(topic, null, key, value, h);
    }

    /**
     * Sends {@code records} as {@code writer} in one produce request ({@link KafkaTestClient#sendTogether}): those of one
     * partition reach claim-service in one poll.
     */
    public void sendTogether(KafkaAccess.Principal writer, List<org.apache.kafka.clients.producer.ProducerRecord<String, String>> records) {
        writer(writer).sendTogether(records);
    }

    /** Who writes {@code event} in production ({@link io.csiorchestrator.testkit.TestIdentities#writerOf}). */
    public static KafkaAccess.Principal writerOf(ContractEvent event) {
        return io.csiorchestrator.testkit.TestIdentities.writerOf(event);
    }

    /** A producer on the shared broker as {@code principal}, with its ACLs on this module's topics. */
    public KafkaTestClient writer(KafkaAccess.Principal principal) {
        return WRITERS.computeIfAbsent(principal.name(), n -> KafkaTestClient.forSharedBroker(principal, TestResources.PREFIX));
    }

    /** The writer of {@code topic}'s records in production (a node's topic: node {@code key}), as {@link #writerOf}. */
    private KafkaTestClient writerOf(Topic topic, String key) {
        return switch (topic) {
            case CLAIM_REQUESTED -> writer(KafkaAccess.Principal.scheduler(io.csiorchestrator.testkit.TestIdentities.SCHEDULER));
            case PLUGIN_STATUS, NODE_LEASES -> writer(KafkaAccess.Principal.pluginRegistry());
            case MOUNT_DONE, NODE_EVENTS, NODE_STATE -> writer(KafkaAccess.Principal.node(key));
            default -> throw new IllegalArgumentException("no writer of " + topic + " played by the bus");
        };
    }

    /** Who signs {@code event} as production would ({@link io.csiorchestrator.testkit.TestIdentities#signerOf}). */
    public static io.csiorchestrator.events.identity.IdentityKey signer(ContractEvent event) {
        return io.csiorchestrator.testkit.TestIdentities.signerOf(event);
    }

    /**
     * Sends {@code value} (any text, or null) to {@code topic} under {@code key} with the valid CloudEvents
     * headers of the topic's event type, as a producer that breaks the body but not the headers would.
     */
    public void sendRaw(Topic topic, String key, String value) {
        RecordHeaders headers = new RecordHeaders();
        CloudEventHeaders.create(io.csiorchestrator.events.EventType.forTopic(topic), "/test").writeTo(headers);
        Map<String, String> h = new LinkedHashMap<>();
        headers.forEach(header -> h.put(header.key(), new String(header.value(), java.nio.charset.StandardCharsets.UTF_8)));
        writerOf(topic, key).send(topic(topic), key, value, h);
    }

    /** Registers a file-system volume (no secrets) and returns its id. */
    public static String registerVolume(String namespace, String id, String pluginId, AccessMode mode) {
        given().contentType(ContentType.JSON).body(Map.of("volumes", List.of(Map.of(
                        "id", id, "namespace", namespace, "externalId", "ext-" + id, "pluginId", pluginId,
                        "accessMode", mode.wire(), "attachmentMode", "file-system",
                        "mountOptions", Map.of("fsType", "ext4")))))
                .post("/v1/volumes").then().statusCode(201);
        return id;
    }

    /** A plugin with healthy node instances on {@code nodes} (external id "ext-" + node) and the given controllers. */
    public void plugin(String pluginId, boolean controllerRequired, List<String> controllers, List<String> nodes) {
        plugin(pluginId, controllerRequired, controllers, nodes, false);
    }

    /**
     * {@link #plugin(String, boolean, List, List)} whose controllers and nodes advertise EXPAND_VOLUME (with the
     * VolumeExpansion type ONLINE), or not.
     */
    public void plugin(String pluginId, boolean controllerRequired, List<String> controllers, List<String> nodes,
                       boolean expands) {
        plugin(pluginId, controllerRequired, controllers, nodes, expands,
                expands ? io.csiorchestrator.events.VolumeExpansionMode.ONLINE : null);
    }

    /** {@link #plugin(String, boolean, List, List, boolean)} with the VolumeExpansion type {@code mode} (null: none). */
    public void plugin(String pluginId, boolean controllerRequired, List<String> controllers, List<String> nodes,
                       boolean expands, io.csiorchestrator.events.VolumeExpansionMode mode) {
        plugin(pluginId, controllerRequired, controllers, nodes, expands, mode, false);
    }

    /** {@link #plugin(String, boolean, List, List, boolean, io.csiorchestrator.events.VolumeExpansionMode)} with LIST_VOLUMES or not. */
    public void plugin(String pluginId, boolean controllerRequired, List<String> controllers, List<String> nodes,
                       boolean expands, io.csiorchestrator.events.VolumeExpansionMode mode, boolean listVolumes) {
        List<PluginStatus.ControllerInstance> cs = controllers.stream()
                .map(n -> new PluginStatus.ControllerInstance(n, true, "ok", Instant.now())).toList();
        List<PluginStatus.NodeInstance> ns = nodes.stream()
                .map(n -> new PluginStatus.NodeInstance(n, "ext-" + n, 10L, Map.of(), true, "ok", Instant.now())).toList();
        send(new PluginStatus(pluginId, "test.csi", "1.0", controllerRequired, cs.size(), cs.size(), ns.size(), ns.size(),
                cs, ns, Instant.now(), expands, expands, mode, listVolumes));
    }

    /** A node-only plugin with one node instance, healthy or not (external id "ext-" + node). */
    public void pluginNode(String pluginId, String node, boolean healthy) {
        PluginStatus.NodeInstance n = new PluginStatus.NodeInstance(node, "ext-" + node, 10L, Map.of(), healthy,
                healthy ? "ok" : "plugin is not answering on its socket", Instant.now());
        send(new PluginStatus(pluginId, "test.csi", "1.0", false, 0, 0, healthy ? 1 : 0, 1, List.of(), List.of(n),
                Instant.now()));
    }

    /** The registry's word on {@code node}'s lease (node-leases, compacted, key = node id). */
    public void lease(String node, long epoch, io.csiorchestrator.events.NodeLeaseState state) {
        send(new io.csiorchestrator.events.NodeLease(node, epoch, state,
                state == io.csiorchestrator.events.NodeLeaseState.VALID ? "lease-req-" + UUID.randomUUID() : null,
                2000L, 500L, Instant.now()));
    }

    public static ClaimRequested claim(String namespace, String volumeId, String alloc, String node, ClaimMode mode,
                                       AccessMode accessMode) {
        return new ClaimRequested(UUID.randomUUID().toString(), namespace, volumeId, alloc, node, mode, accessMode,
                AttachmentMode.FILE_SYSTEM, false, MountOptions.NONE, null, MountSupport.ALL, Instant.now());
    }

    public static ClaimRequested release(String namespace, String volumeId, String alloc) {
        return new ClaimRequested(UUID.randomUUID().toString(), namespace, volumeId, alloc, null, ClaimMode.RELEASE, null,
                null, false, null, null, null, Instant.now());
    }

    /** The answer; its CloudEvents headers are those of claim-status (checked as a consumer would). */
    public ClaimStatus awaitStatus(String requestId, ClaimState state) {
        ConsumerRecord<String, String> record = kafka.awaitRecord(topic(Topic.CLAIM_STATUS), r -> {
            ClaimStatus s = EventCodec.decode(ClaimStatus.class, r.value());
            return s.requestId().equals(requestId) && s.state() == state;
        }, WAIT);
        CloudEventHeaders.requireValid(record.headers(), io.csiorchestrator.events.EventType.CLAIM_STATUS);
        return EventCodec.decode(ClaimStatus.class, record.value());
    }

    /** The answer in {@code state} whose reason passes {@code reason}. */
    public ClaimStatus awaitStatus(String requestId, ClaimState state, java.util.function.Predicate<String> reason) {
        ConsumerRecord<String, String> record = kafka.awaitRecord(topic(Topic.CLAIM_STATUS), r -> {
            ClaimStatus s = EventCodec.decode(ClaimStatus.class, r.value());
            return s.requestId().equals(requestId) && s.state() == state && s.reason() != null && reason.test(s.reason());
        }, WAIT);
        return EventCodec.decode(ClaimStatus.class, record.value());
    }

    /** Once claim-service's replica knows {@code node}'s lease at {@code epoch} in {@code state}. */
    public static void awaitLease(String node, long epoch, String state) {
        org.awaitility.Awaitility.await().atMost(WAIT).untilAsserted(() -> given().get("/v1/node-leases/" + node).then()
                .statusCode(200).body("epoch", org.hamcrest.Matchers.equalTo((int) epoch))
                .body("state", org.hamcrest.Matchers.equalTo(state)));
    }

    /** The answers to one request id so far (read to the topic's end). */
    public List<ClaimStatus> statuses(String requestId) {
        return kafka.readAll(topic(Topic.CLAIM_STATUS)).stream()
                .map(r -> EventCodec.decode(ClaimStatus.class, r.value()))
                .filter(s -> s.requestId().equals(requestId)).toList();
    }

    /**
     * The volume-status result (issue 14) of volume {@code namespace/volumeId} (of its snapshot {@code snapshotId}
     * when not null) in {@code state}; its record key is {@code namespace/volumeId} and its CloudEvents headers are
     * volume-status' (checked as a scheduler would).
     */
    public io.csiorchestrator.events.VolumeStatus awaitVolumeResult(String namespace, String volumeId, String snapshotId,
                                                                    io.csiorchestrator.events.VolumeState state) {
        ConsumerRecord<String, String> record = kafka.awaitRecord(topic(Topic.VOLUME_STATUS), r -> {
            io.csiorchestrator.events.VolumeStatus s = EventCodec.decode(io.csiorchestrator.events.VolumeStatus.class, r.value());
            return s.namespace().equals(namespace) && s.volumeId().equals(volumeId)
                    && java.util.Objects.equals(s.snapshotId(), snapshotId) && s.state() == state;
        }, WAIT);
        CloudEventHeaders.requireValid(record.headers(), io.csiorchestrator.events.EventType.VOLUME_STATUS);
        org.junit.jupiter.api.Assertions.assertEquals(namespace + "/" + volumeId, record.key());
        return EventCodec.decode(io.csiorchestrator.events.VolumeStatus.class, record.value());
    }

    /** Every volume-status result of volume {@code namespace/volumeId} and its snapshots so far, in order (read to the end). */
    public List<io.csiorchestrator.events.VolumeStatus> volumeResults(String namespace, String volumeId) {
        return kafka.readAll(topic(Topic.VOLUME_STATUS)).stream().filter(r -> (namespace + "/" + volumeId).equals(r.key()))
                .map(r -> EventCodec.decode(io.csiorchestrator.events.VolumeStatus.class, r.value())).toList();
    }

    /** The next node command of this kind for the volume not seen before by this bus. */
    public NodeCommand awaitCommand(String volumeId, NodeCommandKind kind) {
        ConsumerRecord<String, String> record = kafka.awaitRecord(topic(Topic.NODE_COMMANDS), r -> {
            NodeCommand c = EventCodec.decode(NodeCommand.class, r.value());
            return c.volumeId().equals(volumeId) && c.kind() == kind && !seenCommands.contains(c.commandId());
        }, WAIT);
        NodeCommand command = EventCodec.decode(NodeCommand.class, record.value());
        // What the worker requires of node-commands (the outbox relay writes these headers).
        CloudEventHeaders.requireValid(record.headers(), io.csiorchestrator.events.EventType.NODE_COMMAND);
        seenCommands.add(command.commandId());
        org.junit.jupiter.api.Assertions.assertEquals(
                io.csiorchestrator.events.NodePartitioner.partitionFor(command.nodeId(), TestResources.NODE_COMMAND_PARTITIONS),
                record.partition(), "node-commands partition of node " + command.nodeId());
        org.junit.jupiter.api.Assertions.assertEquals(command.nodeId(), record.key());
        return command;
    }

    public List<NodeCommand> commands(String volumeId) {
        return kafka.readAll(topic(Topic.NODE_COMMANDS)).stream()
                .map(r -> EventCodec.decode(NodeCommand.class, r.value()))
                .filter(c -> c.volumeId().equals(volumeId)).toList();
    }

    public void succeed(NodeCommand c, String hostPath, Map<String, String> publishContext) {
        send(new MountDone(c.commandId(), c.nodeId(), c.kind(), c.namespace(), c.volumeId(), c.allocationId(), true, null,
                null, publishContext, hostPath, null, Instant.now()));
    }

    public void succeed(NodeCommand c) {
        succeed(c, c.kind() == NodeCommandKind.MOUNT ? "/var/lib/csi/" + c.volumeId() + "/" + c.allocationId() : null, Map.of());
    }

    /** A successful answer carrying the worker's lease epoch (and the command's generation, echoed). */
    public void succeedAt(NodeCommand c, long leaseEpoch) {
        send(new MountDone(c.commandId(), c.nodeId(), c.kind(), c.namespace(), c.volumeId(), c.allocationId(), true, null,
                null, Map.of(), c.kind() == NodeCommandKind.MOUNT ? "/var/lib/csi/" + c.volumeId() + "/" + c.allocationId() : null,
                null, Instant.now()).withFencing(leaseEpoch, c.claimGeneration()));
    }

    public void fail(NodeCommand c, String code, String message) {
        send(new MountDone(c.commandId(), c.nodeId(), c.kind(), c.namespace(), c.volumeId(), c.allocationId(), false, code,
                message, Map.of(), null, null, Instant.now()));
    }

    @Override
    public void close() {
        kafka.close();
    }

    /**
     * Hands every record of every topic of this test run (the test prefix: claim-service's records and
     * this bus's) to {@code check} as ({@code "<topic> key|value|header <name>"}, text). The number of records seen.
     */
    public int scanEveryRecord(java.util.function.BiConsumer<String, String> check) throws Exception {
        int scanned = 0;
        try (org.apache.kafka.clients.admin.Admin admin = io.csiorchestrator.localinfra.Kraft.admin(kafka.bootstrapServers(),
                kafka.security())) {
            for (String topic : admin.listTopics().names().get(30, java.util.concurrent.TimeUnit.SECONDS)) {
                if (!topic.startsWith(TestResources.PREFIX)) {
                    continue;
                }
                for (ConsumerRecord<String, String> r : kafka.readAll(topic)) {
                    scanned++;
                    check.accept(topic + " key", r.key());
                    check.accept(topic + " value", r.value());
                    for (org.apache.kafka.common.header.Header h : r.headers()) {
                        check.accept(topic + " header " + h.key(),
                                h.value() == null ? null : new String(h.value(), java.nio.charset.StandardCharsets.UTF_8));
                    }
                }
            }
        }
        return scanned;
    }

    /**
     * A registered volume {@code namespace/<prefix>-...} of a fresh node-only plugin (no controller) with
     * healthy instances on {@code nodes}, once claim-service sees it schedulable; its id.
     */
    /**
     * A schedulable volume of a new plugin that needs a controller and runs a controller instance on each of
     * {@code nodes}: claims on them take the one-command path (issue 36 item 1).
     */
    public String schedulableVolumeWithLocalControllers(String namespace, String prefix, AccessMode mode, String... nodes) {
        String plugin = ClaimFlowTest.unique("plug");
        String vol = registerVolume(namespace, ClaimFlowTest.unique(prefix), plugin, mode);
        plugin(plugin, true, List.of(nodes), List.of(nodes));
        ClaimFlowTest.awaitSchedulable(namespace, vol);
        return vol;
    }

    public String schedulableVolume(String namespace, String prefix, AccessMode mode, String... nodes) {
        String plugin = ClaimFlowTest.unique("plug");
        String vol = registerVolume(namespace, ClaimFlowTest.unique(prefix), plugin, mode);
        plugin(plugin, false, List.of(), List.of(nodes));
        ClaimFlowTest.awaitSchedulable(namespace, vol);
        return vol;
    }
}
