package io.csiorchestrator.worker.kafka;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountDone;
import io.csiorchestrator.events.NodeCommand;
import io.csiorchestrator.events.NodeCommandKind;
import io.csiorchestrator.events.NodePartitioner;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.mount.VolumeSerializer;
import io.csiorchestrator.worker.telemetry.Telemetry;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The worker follows the partitions of {@code node-commands} on a real broker: the node's partition
 * under the current count, its history (partitions with a committed offset of its group), and the
 * node's new partition once an operator added partitions to the topic.
 *
 * <p>The command handler is a stub ({@link #answer}): it answers every command with a successful
 * mount-done and calls no plugin, mounts nothing and writes no record. This is on purpose: the test
 * is about which partitions the {@link CommandConsumer} reads and which offsets it commits on a real
 * broker, and a stub keeps it free of a plugin process and bind mounts. Everything else is real: the
 * KRaft broker, the consumer, the offset commits, and the mount-done records, sent through a real
 * {@link KafkaEventPublisher}. What the real handler does with a command is tested by
 * {@code NodeMountWorkerTest} and {@code VolumeOperationsTest}.
 */
class CommandConsumerPartitionsTest {

    private static final int OLD_COUNT = 2;
    private static final int NEW_COUNT = 4;
    private static final Duration BOUND = Duration.ofSeconds(60);
    /** Short, so the consumer sees new partitions soon (30 s in production). */
    private static final Duration METADATA_MAX_AGE = Duration.ofSeconds(1);
    private static final String NODE = nodeWhosePartitionMoves();
    private static final int OLD_PARTITION = NodePartitioner.partitionFor(NODE, OLD_COUNT);
    private static final int NEW_PARTITION = NodePartitioner.partitionFor(NODE, NEW_COUNT);

    private final String run = UUID.randomUUID().toString().substring(0, 8);
    private String bootstrap;
    private TopicCatalog topics;
    private String commandsTopic;
    private String mountDoneTopic;
    private String group;
    private Admin admin;
    /** The test's observer (the super user on the closed broker). */
    private KafkaTestClient kafka;
    /** The test's stand-in for claim-service, the one writer of node-commands. */
    private KafkaTestClient claimService;
    /** The worker's client settings: its node's principal. */
    private io.csiorchestrator.events.KafkaClientSecurity node;
    private KafkaEventPublisher publisher;
    private ExecutorService volumeThreads;

    /** A node id whose partition differs between {@link #OLD_COUNT} and {@link #NEW_COUNT} partitions. */
    private static String nodeWhosePartitionMoves() {
        for (int i = 0; i < 100; i++) {
            String node = "node-" + i;
            if (NodePartitioner.partitionFor(node, OLD_COUNT) != NodePartitioner.partitionFor(node, NEW_COUNT)) {
                return node;
            }
        }
        throw new AssertionError("no node id among node-0..node-99 changes partition from " + OLD_COUNT + " to "
                + NEW_COUNT + " partitions");
    }

    @BeforeEach
    void setUp() throws Exception {
        assertNotEquals(OLD_PARTITION, NEW_PARTITION,
                "precondition: " + NODE + " is on another partition under " + NEW_COUNT + " partitions");
        bootstrap = KafkaResource.bootstrapServers();
        topics = new TopicCatalog("partitions-" + run + ".");
        commandsTopic = topics.name(Topic.NODE_COMMANDS);
        mountDoneTopic = topics.name(Topic.MOUNT_DONE);
        // the worker's own group: on the closed broker a node's principal may read no other (KafkaAccess)
        group = io.csiorchestrator.events.KafkaAccess.NODE_GROUP_PREFIX + NODE;
        Properties props = KafkaResource.adminSecurity().applyTo(new Properties());
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        admin = Admin.create(props);
        admin.createTopics(java.util.List.of(new NewTopic(commandsTopic, OLD_COUNT, (short) 1),
                new NewTopic(mountDoneTopic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        KafkaResource.createContractTopics(topics.prefix());
        kafka = KafkaTestClient.forSharedBroker();
        claimService = KafkaTestClient.forSharedBroker(io.csiorchestrator.events.KafkaAccess.Principal.claimService(),
                topics.prefix());
        node = KafkaResource.securityOf(io.csiorchestrator.events.KafkaAccess.Principal.node(NODE), topics.prefix());
        publisher = new KafkaEventPublisher(bootstrap, topics, "/node-mount-worker", 100).withSecurity(node);
        publisher.start();
        volumeThreads = Executors.newFixedThreadPool(2);
    }

    @AfterEach
    void tearDown() {
        if (publisher != null) {
            publisher.close(Duration.ofSeconds(5));
        }
        if (kafka != null) {
            kafka.close();
        }
        if (claimService != null) {
            claimService.close();
        }
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
        }
        if (volumeThreads != null) {
            volumeThreads.shutdownNow();
        }
    }

    private CommandConsumer startConsumer() {
        CommandConsumer consumer = new CommandConsumer(bootstrap, group, commandsTopic, topics.deadLetterName(
                Topic.NODE_COMMANDS), NODE, new VolumeSerializer(volumeThreads), (command, context) -> answer(command),
                publisher, Telemetry.none(), METADATA_MAX_AGE).withSecurity(node);
        consumer.start();
        return consumer;
    }

    /** The stub handler: a successful answer to every command, without a plugin call. */
    private static MountDone answer(NodeCommand command) {
        return new MountDone(command.commandId(), command.nodeId(), command.kind(), command.namespace(),
                command.volumeId(), command.allocationId(), true, null, null, Map.of(), "/stub/" + command.volumeId(),
                null, Instant.now());
    }

    private static NodeCommand mount(String volumeId) {
        return new NodeCommand("cmd-" + UUID.randomUUID(), NODE, NodeCommandKind.MOUNT, "ns", volumeId, "plugin",
                "ext-" + volumeId, "alloc-" + volumeId, AccessMode.MULTI_NODE_MULTI_WRITER, AttachmentMode.FILE_SYSTEM,
                false, null, null, Map.of(), Map.of(), null, Instant.now());
    }

    /** Writes the command to {@code partition}, explicitly, keyed with the node; returns its offset. */
    private long send(NodeCommand command, int partition) {
        RecordMetadata written = claimService.send(new ProducerRecord<>(commandsTopic, partition, command.nodeId(),
                EventCodec.encodeToString(command), cloudEventHeaders()));
        assertEquals(partition, written.partition(), "written to the partition asked for");
        return written.offset();
    }

    /** A record for another node in the same partition: skipped, its offset still committed. */
    private void sendForOtherNode(int partition) {
        NodeCommand other = new NodeCommand("cmd-" + UUID.randomUUID(), "other-node", NodeCommandKind.UNMOUNT, "ns",
                "v-other", "plugin", "ext-other", "alloc-other", null, null, false, null, null, Map.of(), Map.of(), null,
                Instant.now());
        claimService.send(new ProducerRecord<>(commandsTopic, partition, other.nodeId(), EventCodec.encodeToString(other),
                cloudEventHeaders()));
    }

    /** The CloudEvents headers a node command carries. */
    private static org.apache.kafka.common.header.Headers cloudEventHeaders() {
        org.apache.kafka.common.header.internals.RecordHeaders headers = new org.apache.kafka.common.header.internals.RecordHeaders();
        io.csiorchestrator.events.CloudEventHeaders.create(io.csiorchestrator.events.EventType.NODE_COMMAND, "/test").writeTo(headers);
        return headers;
    }

    private Set<String> answeredCommandIds() {
        return kafka.readAll(mountDoneTopic).stream()
                .map(r -> EventCodec.decode(MountDone.class, r.value()))
                .filter(done -> NODE.equals(done.nodeId()) && done.succeeded())
                .map(MountDone::commandId)
                .collect(Collectors.toSet());
    }

    private void awaitAnswered(NodeCommand... commands) {
        Set<String> expected = java.util.Arrays.stream(commands).map(NodeCommand::commandId).collect(Collectors.toSet());
        await("mount-done for " + expected).atMost(BOUND).until(() -> answeredCommandIds().containsAll(expected));
    }

    private Map<TopicPartition, OffsetAndMetadata> committed() throws Exception {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
    }

    /** Waits until the group's committed offset of each partition is past the given record offset. */
    private void awaitCommittedPast(Map<Integer, Long> offsets) {
        await("committed offsets of group " + group + " past " + offsets).atMost(BOUND).until(() -> {
            Map<TopicPartition, OffsetAndMetadata> committed = committed();
            return offsets.entrySet().stream().allMatch(e -> {
                OffsetAndMetadata c = committed.get(new TopicPartition(commandsTopic, e.getKey()));
                return c != null && c.offset() > e.getValue();
            });
        });
    }

    private void grow() throws Exception {
        admin.createPartitions(Map.of(commandsTopic, NewPartitions.increaseTo(NEW_COUNT))).all()
                .get(30, TimeUnit.SECONDS);
    }

    private TopicPartition tp(int partition) {
        return new TopicPartition(commandsTopic, partition);
    }

    @Test
    void commandInTheNodesPartitionIsAnswered() throws Exception {
        try (CommandConsumer consumer = startConsumer()) {
            sendForOtherNode(OLD_PARTITION);
            NodeCommand command = mount("v-a");
            long offset = send(command, OLD_PARTITION);
            awaitAnswered(command);
            assertEquals(tp(OLD_PARTITION), consumer.assignedPartition());
            assertEquals(Set.of(tp(OLD_PARTITION)), consumer.assignedPartitions());
            awaitCommittedPast(Map.of(OLD_PARTITION, offset));
            assertTrue(consumer.connectivity().connected(), "connected: " + consumer.connectivity());
        }
    }

    @Test
    void afterTheTopicGrowsCommandsInTheNewAndTheOldPartitionAreAnswered() throws Exception {
        try (CommandConsumer consumer = startConsumer()) {
            NodeCommand before = mount("v-before");
            send(before, OLD_PARTITION);
            awaitAnswered(before);

            grow();
            sendForOtherNode(NEW_PARTITION);
            NodeCommand inNew = mount("v-new");
            long newOffset = send(inNew, NEW_PARTITION);
            NodeCommand inOld = mount("v-old");
            long oldOffset = send(inOld, OLD_PARTITION);
            awaitAnswered(inNew, inOld);

            assertEquals(tp(NEW_PARTITION), consumer.assignedPartition(), "the node's partition under the new count");
            assertEquals(Set.of(tp(OLD_PARTITION), tp(NEW_PARTITION)), consumer.assignedPartitions());
            awaitCommittedPast(Map.of(OLD_PARTITION, oldOffset, NEW_PARTITION, newOffset));
        }
    }

    @Test
    void afterARestartTheOldPartitionIsStillReadFromTheGroupsHistory() throws Exception {
        long oldOffset;
        try (CommandConsumer consumer = startConsumer()) {
            NodeCommand first = mount("v-first");
            oldOffset = send(first, OLD_PARTITION);
            awaitAnswered(first);
            grow();
            await("the consumer reads partition " + NEW_PARTITION).atMost(BOUND)
                    .until(() -> consumer.assignedPartitions().contains(tp(NEW_PARTITION)));
            awaitCommittedPast(Map.of(OLD_PARTITION, oldOffset));
        }
        // written while the worker is down, by a producer that still had the old partition count
        NodeCommand leftInOld = mount("v-left");
        long leftOffset = send(leftInOld, OLD_PARTITION);
        assertTrue(leftOffset > oldOffset);
        try (CommandConsumer restarted = startConsumer()) {
            awaitAnswered(leftInOld);
            NodeCommand inNew = mount("v-new");
            long newOffset = send(inNew, NEW_PARTITION);
            awaitAnswered(inNew);
            assertEquals(tp(NEW_PARTITION), restarted.assignedPartition());
            assertEquals(Set.of(tp(OLD_PARTITION), tp(NEW_PARTITION)), restarted.assignedPartitions());
            awaitCommittedPast(Map.of(OLD_PARTITION, leftOffset, NEW_PARTITION, newOffset));
        }
    }

    @Test
    void aPartitionReadWithoutAnyRecordStaysInTheHistory() throws Exception {
        // the node's partition gets nothing while the worker runs: its start offset is committed anyway
        try (CommandConsumer consumer = startConsumer()) {
            await("start offset of partition " + OLD_PARTITION + " committed").atMost(BOUND)
                    .until(() -> committed().containsKey(tp(OLD_PARTITION)));
            assertEquals(0L, committed().get(tp(OLD_PARTITION)).offset(), "nothing was read, nothing skipped");
        }
        grow();
        NodeCommand leftInOld = mount("v-left");
        long leftOffset = send(leftInOld, OLD_PARTITION);
        try (CommandConsumer restarted = startConsumer()) {
            awaitAnswered(leftInOld);
            assertEquals(tp(NEW_PARTITION), restarted.assignedPartition());
            assertEquals(Set.of(tp(OLD_PARTITION), tp(NEW_PARTITION)), restarted.assignedPartitions());
            awaitCommittedPast(Map.of(OLD_PARTITION, leftOffset));
        }
    }
}
