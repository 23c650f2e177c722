package io.csiorchestrator.worker.kafka;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.worker.state.PosixDirs;
import io.csiorchestrator.worker.state.WorkerPaths;
import io.csiorchestrator.worker.telemetry.WorkerTracing;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of a worker's event publisher in the middle of spooling: {@link SpoolingPublisherMain}
 * runs in its own JVM with Kafka unreachable and spools node events in a loop until it is killed
 * with SIGKILL. A new publisher on the same root, with Kafka reachable, then delivers every event
 * the dead one acknowledged as spooled, each exactly once (by ce_id). A torn spool file (what a
 * write without the atomic rename would leave) and any temporary file the kill left are set
 * aside or removed, not sent, and the new publisher starts.
 */
class KafkaEventPublisherKillNineTest {

    /** Events the dead publisher should have acknowledged before the kill: enough to kill it mid-loop. */
    private static final int SPOOLED_BEFORE_KILL = 300;

    @TempDir
    Path temp;

    private static List<Path> files(Path dir, String suffix) throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(f -> f.getFileName().toString().endsWith(suffix)).sorted().toList();
        }
    }

    /** ce_id -> volume id of each {@code spooled <ce_id> <volumeId>} line; a line cut by the kill is not counted. */
    private static Map<String, String> acknowledged(Path out) throws Exception {
        Map<String, String> acknowledged = new LinkedHashMap<>();
        if (!Files.exists(out)) {
            return acknowledged;
        }
        String text = Files.readString(out);
        List<String> lines = List.of(text.split("\n", -1));
        for (String line : lines.subList(0, lines.size() - 1)) { // the text after the last newline is not a line yet
            String[] words = line.split(" ");
            assertEquals(3, words.length, line);
            assertEquals("spooled", words[0], line);
            assertFalse(acknowledged.containsKey(words[1]), "a ce_id per event: " + line);
            acknowledged.put(words[1], words[2]);
        }
        return acknowledged;
    }

    @Test
    void killNineWhileSpoolingLosesNoAcknowledgedEventAndSetsATornFileAside() throws Exception {
        int deadPort;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            deadPort = probe.getLocalPort();
        }
        String prefix = "spool-kill-" + UUID.randomUUID().toString().substring(0, 8) + ".";
        TopicCatalog topics = new TopicCatalog(prefix);
        KafkaResource.createContractTopics(prefix);
        Path root = temp.resolve("root");
        WorkerPaths paths = new WorkerPaths(root, new PosixDirs());

        // 1. the publisher's JVM spools with Kafka down; killed with SIGKILL while it is still spooling
        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Djava.util.logging.manager=org.jboss.logmanager.LogManager", "-cp", System.getProperty("java.class.path"),
                SpoolingPublisherMain.class.getName(), root.toString(), "127.0.0.1:" + deadPort, prefix)
                .redirectError(temp.resolve("child.err").toFile())
                .redirectOutput(temp.resolve("child.out").toFile()).start();
        Path out = temp.resolve("child.out");
        try {
            await().atMost(Duration.ofSeconds(120)).until(() -> acknowledged(out).size() >= SPOOLED_BEFORE_KILL
                    || !child.isAlive());
            assertTrue(child.isAlive(), "the publisher's JVM ended before the kill: "
                    + Files.readString(temp.resolve("child.err")));
            child.destroyForcibly();
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            assertEquals(137, child.exitValue(), "killed by SIGKILL");
        } finally {
            child.destroyForcibly();
        }
        // every line it printed before it died: each event acknowledged as spooled
        Map<String, String> acknowledged = acknowledged(out);
        assertTrue(acknowledged.size() >= SPOOLED_BEFORE_KILL);
        List<Path> spooled = files(paths.eventsDir(), EventSpool.SUFFIX);
        assertTrue(spooled.size() >= acknowledged.size(), "every acknowledged event has its spool file");

        // 2. a torn spool file after the last one: the first half of a real record
        Path last = spooled.get(spooled.size() - 1);
        byte[] whole = Files.readAllBytes(last);
        long tornSequence = EventSpool.sequenceOf(last.getFileName().toString()) + 1;
        Path torn = paths.eventsDir().resolve(String.format("%020d", tornSequence) + EventSpool.SUFFIX);
        Files.write(torn, Arrays.copyOf(whole, whole.length / 2));

        // 3. the restarted worker's publisher, Kafka reachable
        KafkaEventPublisher second = new KafkaEventPublisher(KafkaResource.bootstrapServers(), topics,
                "/node-mount-worker", Integer.MAX_VALUE, WorkerTracing.noop(), EventSpool.open(paths)).withSecurity(
                KafkaResource.securityOf(io.csiorchestrator.events.KafkaAccess.Principal.node("spool-node"), prefix));
        int queued = second.queued();
        assertEquals(spooled.size(), queued, "every whole spool file is queued, the torn one is not");
        assertTrue(Files.exists(torn.resolveSibling(torn.getFileName() + EventSpool.CORRUPT_SUFFIX)),
                "the torn file is set aside");
        assertFalse(Files.exists(torn));
        try (Stream<Path> left = Files.list(paths.eventsDir())) {
            assertTrue(left.noneMatch(f -> f.getFileName().toString().contains(".tmp-")),
                    "a temporary file the kill left is removed");
        }
        second.start();
        try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
            await().atMost(Duration.ofSeconds(120)).until(() -> files(paths.eventsDir(), EventSpool.SUFFIX).isEmpty());
            CompletableFuture<Void> marker = second.send(new NodeEvent("spool-node", null,
                    NodeEventKind.RESTORE, "marker", null, "ns", "marker", null, true, null, Map.of(), Instant.now()));
            marker.get(60, TimeUnit.SECONDS);
            // every node event has the node as key: one partition, in send order, the marker last
            List<ConsumerRecord<String, String>> records = kafka.readAll(topics.name(Topic.NODE_EVENTS));
            Map<String, Integer> timesDelivered = new HashMap<>();
            Map<String, String> volumeOf = new HashMap<>();
            for (ConsumerRecord<String, String> r : records.subList(0, records.size() - 1)) {
                String ceId = KafkaTestClient.header(r, CloudEventHeaders.CE_ID);
                timesDelivered.merge(ceId, 1, Integer::sum);
                volumeOf.put(ceId, EventCodec.decode(NodeEvent.class, r.value()).volumeId());
            }
            assertEquals("marker", EventCodec.decode(NodeEvent.class, records.get(records.size() - 1).value()).volumeId(),
                    "the marker is the last record");
            assertEquals(queued, records.size() - 1, "one record per spooled event, none sent twice");
            assertEquals(queued, timesDelivered.size(), "each with its own ce_id");
            for (Map.Entry<String, String> ack : acknowledged.entrySet()) {
                assertEquals(1, timesDelivered.getOrDefault(ack.getKey(), 0), "acknowledged event " + ack + " sent once");
                assertEquals(ack.getValue(), volumeOf.get(ack.getKey()), "with its own content");
            }
        } finally {
            second.close(Duration.ofSeconds(5));
        }
    }
}
