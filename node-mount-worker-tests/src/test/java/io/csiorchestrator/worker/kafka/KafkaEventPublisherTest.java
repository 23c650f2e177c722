package io.csiorchestrator.worker.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.csiorchestrator.events.CloudEventHeaders;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.NodeEvent;
import io.csiorchestrator.events.NodeEventKind;
import io.csiorchestrator.events.TopicCatalog;
import io.csiorchestrator.testkit.KafkaResource;
import io.csiorchestrator.testkit.KafkaTestClient;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.eclipse.microprofile.health.HealthCheckResponse;
import io.csiorchestrator.worker.KafkaReadiness;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;
import org.junit.jupiter.api.Test;

/**
 * A disconnected node: events published while Kafka cannot be reached wait in the worker's queue
 * and are delivered, in order and with their CloudEvents headers, once the broker is reachable.
 * The bootstrap address is a port nothing listens on at first; then a TCP forwarder to the real
 * broker opens on it.
 */
class KafkaEventPublisherTest {

    /** Forwards every connection on {@code port} to {@code target}. */
    static final class Forwarder implements AutoCloseable {
        private final ServerSocket server;
        private final List<Socket> sockets = new ArrayList<>();

        Forwarder(int port, String targetHost, int targetPort) throws IOException {
            server = new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
            Thread accept = new Thread(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket in = server.accept();
                        Socket out = new Socket(targetHost, targetPort);
                        synchronized (sockets) {
                            sockets.add(in);
                            sockets.add(out);
                        }
                        pump(in.getInputStream(), out.getOutputStream());
                        pump(out.getInputStream(), in.getOutputStream());
                    } catch (IOException e) {
                        return;
                    }
                }
            }, "forwarder-accept");
            accept.setDaemon(true);
            accept.start();
        }

        private static void pump(InputStream from, OutputStream to) {
            Thread t = new Thread(() -> {
                try {
                    from.transferTo(to);
                } catch (IOException e) {
                    // connection closed
                }
            }, "forwarder-pump");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws IOException {
            server.close();
            synchronized (sockets) {
                for (Socket s : sockets) {
                    s.close();
                }
            }
        }
    }

    private static NodeEvent event(int n) {
        return new NodeEvent("offline-node", null, NodeEventKind.RESTORE, "Restore volume after worker restart " + n,
                null, "ns", "v" + n, null, true, null, Map.of(), Instant.now());
    }

    @Test
    void eventsQueuedWhileKafkaIsUnreachableAreDeliveredInOrderOnceItIsBack() throws Exception {
        String broker = KafkaResource.bootstrapServers();
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        TopicCatalog topics = new TopicCatalog("offline-test.");
        KafkaResource.createContractTopics(topics.prefix());
        KafkaEventPublisher publisher = new KafkaEventPublisher("127.0.0.1:" + port, topics, "/node-mount-worker", 100)
                .withSecurity(KafkaResource.securityOf(io.csiorchestrator.events.KafkaAccess.Principal.node("offline-node"),
                        topics.prefix()));
        publisher.start();
        try {
            List<CompletableFuture<Void>> acks = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                acks.add(publisher.send(event(i)));
            }
            assertThrows(TimeoutException.class, () -> acks.get(0).get(3, TimeUnit.SECONDS), "Kafka is unreachable");
            assertFalse(acks.get(2).isDone(), "nothing is delivered while Kafka is unreachable");
            // readiness: the producer reports that it cannot reach the broker (its send times out after 10 s)
            CommandConsumer.Connectivity consumerUp = new CommandConsumer.Connectivity(
                    new TopicPartition("node-commands", 0), Instant.now(), null);
            await().atMost(Duration.ofSeconds(30)).until(() -> publisher.lastSendFailure() != null);
            HealthCheckResponse down = KafkaReadiness.evaluate(consumerUp, publisher);
            assertEquals(HealthCheckResponse.Status.DOWN, down.getStatus());
            assertEquals("kafka", down.getName());
            assertTrue(down.getData().orElseThrow().get("producer").toString().startsWith("cannot reach the broker"),
                    down.getData().toString());

            int brokerPort = Integer.parseInt(broker.substring(broker.lastIndexOf(':') + 1));
            try (Forwarder forwarder = new Forwarder(port, broker.substring(0, broker.lastIndexOf(':')), brokerPort)) {
                CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
            }
            assertEquals(HealthCheckResponse.Status.UP, KafkaReadiness.evaluate(consumerUp, publisher).getStatus(),
                    "up again once the broker acknowledged");
            assertEquals(HealthCheckResponse.Status.DOWN, KafkaReadiness.evaluate(
                    new CommandConsumer.Connectivity(null, null, "not connected yet"), publisher).getStatus(),
                    "down while the consumer has no partition");
            try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
                List<ConsumerRecord<String, String>> records = kafka.awaitRecords("offline-test.node-events",
                        r -> true, 3, Duration.ofSeconds(20));
                for (int i = 0; i < 3; i++) {
                    assertEquals("v" + i, EventCodec.decode(NodeEvent.class, records.get(i).value()).volumeId());
                    assertEquals("offline-node", records.get(i).key());
                    assertFalse(KafkaTestClient.header(records.get(i), CloudEventHeaders.CE_ID).isBlank());
                }
            }
        } finally {
            publisher.close(Duration.ofSeconds(5));
        }
    }

    /**
     * A record the broker refuses holds back only the records of its own topic and key: the records after it of other
     * topics or keys are sent and acknowledged meanwhile (so a command's answer never waits for the acknowledgement of
     * the node event queued before it, issue 36), and a second record of its topic and key stays queued behind it. The
     * test's node-state topic takes no record over 64 bytes: those two reports are refused and tried again; the three
     * node events queued after them arrive, in their order.
     */
    @Test
    void aRefusedRecordHoldsBackOnlyTheRecordsOfItsTopicAndKey() throws Exception {
        TopicCatalog topics = new TopicCatalog("window-test.");
        KafkaResource.createTopic(topics.prefix() + "node-state", 1, Map.of("max.message.bytes", "64"));
        KafkaResource.createContractTopics(topics.prefix());
        KafkaEventPublisher publisher = new KafkaEventPublisher(KafkaResource.bootstrapServers(), topics, "/node-mount-worker", 100)
                .withSecurity(KafkaResource.securityOf(io.csiorchestrator.events.KafkaAccess.Principal.node("offline-node"),
                        topics.prefix()));
        publisher.start();
        try {
            List<CompletableFuture<Void>> refused = new ArrayList<>();
            for (long sequence = 1; sequence <= 2; sequence++) {
                refused.add(publisher.send(new io.csiorchestrator.events.NodeStateReported("offline-node", sequence,
                        Instant.now(), List.of(), null)));
            }
            List<CompletableFuture<Void>> acks = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                acks.add(publisher.send(event(i)));
            }
            try {
                CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("node events not acknowledged; last send failure: " + publisher.lastSendFailure()
                        + ", queued " + publisher.queued(), e);
            }
            assertFalse(refused.get(0).isDone(), "the refused record is tried again, not dropped");
            assertFalse(refused.get(1).isDone(), "the record of the same topic and key waits behind it");
            assertTrue(publisher.lastSendFailure().contains("RecordTooLarge"), publisher.lastSendFailure());
            try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
                List<ConsumerRecord<String, String>> records = kafka.awaitRecords("window-test.node-events",
                        r -> true, 3, Duration.ofSeconds(20));
                for (int i = 0; i < 3; i++) {
                    assertEquals("v" + i, EventCodec.decode(NodeEvent.class, records.get(i).value()).volumeId());
                }
            }
        } finally {
            publisher.close(Duration.ofSeconds(1));
        }
    }

    /**
     * With its node's key (issue 20 item 3) every record the publisher sends carries a signature that the node's
     * trusted key verifies over what arrived at the broker (key, CloudEvents headers, value); a trace context added
     * after signing does not break it. The record is a node event of {@code offline-node}.
     */
    @Test
    void recordsAreSignedWithTheNodeKeyAndVerifyAtTheConsumer() throws Exception {
        io.csiorchestrator.events.identity.IdentityKey key = io.csiorchestrator.testkit.TestIdentities.node("offline-node");
        io.csiorchestrator.events.identity.TrustSet trust = io.csiorchestrator.events.identity.TrustSet.of(
                List.of(key.publicEntry()));
        TopicCatalog topics = new TopicCatalog("signed-test.");
        KafkaResource.createContractTopics(topics.prefix());
        KafkaEventPublisher publisher = new KafkaEventPublisher(KafkaResource.bootstrapServers(), topics, "/node-mount-worker",
                100).withSecurity(KafkaResource.securityOf(io.csiorchestrator.events.KafkaAccess.Principal.node("offline-node"),
                        topics.prefix()));
        publisher.signWith(key);
        publisher.start();
        try {
            publisher.send(event(7)).get(60, TimeUnit.SECONDS);
        } finally {
            publisher.close(Duration.ofSeconds(5));
        }
        try (KafkaTestClient kafka = KafkaTestClient.forSharedBroker()) {
            ConsumerRecord<String, String> record = kafka.awaitRecord("signed-test.node-events", r -> true,
                    Duration.ofSeconds(20));
            io.csiorchestrator.events.identity.RecordSignature.Verdict verdict = io.csiorchestrator.events.identity
                    .RecordSignature.verify(trust, record.key(), record.value().getBytes(java.nio.charset.StandardCharsets.UTF_8),
                            record.headers());
            assertEquals(io.csiorchestrator.events.identity.RecordSignature.Outcome.VALID, verdict.outcome());
            assertEquals(io.csiorchestrator.events.identity.Principal.node("offline-node"), verdict.signer().principal());
        }
    }
}
