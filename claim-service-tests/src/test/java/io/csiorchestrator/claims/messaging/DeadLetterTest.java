package io.csiorchestrator.claims.messaging;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.csiorchestrator.claims.Bus;
import io.csiorchestrator.claims.LogCapture;
import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.DeadLetters;
import io.csiorchestrator.events.EventCodec;
import io.csiorchestrator.events.MountSupport;
import io.csiorchestrator.events.Topic;
import io.csiorchestrator.testkit.KafkaTestClient;
import io.csiorchestrator.testkit.RefusingTrigger;
import io.quarkus.test.junit.QuarkusTest;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.awaitility.Awaitility;
import org.eclipse.microprofile.config.ConfigProvider;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the running claim-service sends to {@code claim-requested-dead-letter}, and that the partition
 * moves on after it: a claim-requested carrying plain mount flags that cannot be read (not JSON, the
 * wrong shape) goes there without the flags; a claim whose handling keeps failing for a reason other
 * than the database being away (a trigger added by the test through its own JDBC connection refuses
 * it) is retried for {@code csi.claims.consumer-retry-budget} (2 s in tests), counted in
 * {@code csi_claim_consumer_retries_total{failure="other"}}, and then goes there with the reason.
 */
@QuarkusTest
class DeadLetterTest {

    final Bus bus = new Bus();

    @AfterEach
    void close() {
        bus.close();
    }

    static String deadLetterTopic() {
        return Bus.topic(Topic.CLAIM_REQUESTED) + "-dead-letter";
    }

    @Test
    void unreadableClaimsWithPlainFlagsAreDeadLetteredWithoutThemAndThePartitionMovesOn() throws Exception {
        String canary = "password=CANARY-unreadable-" + UUID.randomUUID().toString().substring(0, 8);
        String vol = bus.schedulableVolume("ns1", "unreadable", AccessMode.SINGLE_NODE_WRITER, "node-a");
        // Cut off in the middle of the flags: not JSON.
        String truncated = claimText("truncated-" + vol, vol, "\"mountOptions\":{\"mountFlags\":[\"noatime\",\"" + canary + "\"");
        truncated = truncated.substring(0, truncated.indexOf(canary) + canary.length() + 1);
        // JSON, but the flags are one string instead of a list.
        String wrongShape = claimText("shape-" + vol, vol, "\"mountOptions\":{\"mountFlags\":\"noatime," + canary + "\"}");
        // A valid request whose flags' field name is spelled with a JSON escape (Jackson reads it as mountFlags).
        String escaped = claimText("escaped-" + vol, vol, "\"mountOptions\":{\"mount\\u0046lags\":[\"" + canary + "\"]}");

        try (LogCapture log = LogCapture.start()) {
            for (String value : List.of(truncated, wrongShape, escaped)) {
                bus.sendRaw(Topic.CLAIM_REQUESTED, vol, value);
            }
            // Same key, same partition, sent last: answered only once the partition got past the three.
            ClaimRequested after = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
            bus.send(after);
            bus.awaitStatus(after.requestId(), ClaimState.ACCEPTED);

            List<ConsumerRecord<String, String>> all = Awaitility.await().atMost(Bus.WAIT).until(
                    () -> bus.kafka.readAll(deadLetterTopic()).stream().filter(r -> vol.equals(r.key())).toList(),
                    dead -> dead.size() >= 3);
            assertEquals(3, all.size(), "three dead letters for " + vol);
            for (ConsumerRecord<String, String> dead : all) {
                assertNoCanary(canary, "dead-letter value", dead.value());
                for (Header h : dead.headers()) {
                    assertNoCanary(canary, "dead-letter header " + h.key(), new String(h.value(), StandardCharsets.UTF_8));
                }
                assertEquals(Bus.topic(Topic.CLAIM_REQUESTED), KafkaTestClient.header(dead, DeadLetters.TOPIC));
            }

            ConsumerRecord<String, String> withheld = deadLetter(vol, r -> r.value().contains("\"withheld\""));
            ConsumerRecord<String, String> shaped = deadLetter(vol, r -> r.value().contains("shape-" + vol));
            ConsumerRecord<String, String> spelled = deadLetter(vol, r -> r.value().contains("escaped-" + vol));

            // The text that is not JSON: withheld whole, with what finds the original on claim-requested.
            JsonNode replacement = EventCodec.mapper().readTree(withheld.value());
            byte[] original = truncated.getBytes(StandardCharsets.UTF_8);
            assertEquals(original.length, replacement.get("length").asInt());
            assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(original)),
                    replacement.get("sha256").asText());
            String whyWithheld = reason(withheld);
            assertTrue(whyWithheld.contains("not valid JSON") && whyWithheld.contains("ends early at line 1, column")
                    && whyWithheld.contains("withheld"), whyWithheld);
            ConsumerRecord<String, String> source = bus.kafka.readAll(Bus.topic(Topic.CLAIM_REQUESTED)).stream()
                    .filter(r -> r.partition() == Integer.parseInt(KafkaTestClient.header(withheld, DeadLetters.PARTITION))
                            && r.offset() == Long.parseLong(KafkaTestClient.header(withheld, DeadLetters.OFFSET)))
                    .findFirst().orElseThrow();
            assertEquals(truncated, source.value(), "the dead letter's partition/offset headers point at the original");

            // The wrong shape: the flags blanked, the rest kept; the reason names the field.
            assertTrue(shaped.value().contains("\"mountFlags\":\"(redacted)\""), shaped.value());
            String whyShape = reason(shaped);
            assertTrue(whyShape.contains("mountOptions.mountFlags"), whyShape);
            // The escaped name: read as plain flags, blanked like any.
            assertTrue(spelled.value().contains("\"mountFlags\":[\"(redacted)\"]"), spelled.value());
            String whySpelled = reason(spelled);
            assertTrue(whySpelled.contains("sealedMountFlags") && whySpelled.contains("1 given"), whySpelled);

            for (String id : List.of("truncated-" + vol, "shape-" + vol, "escaped-" + vol)) {
                assertTrue(bus.statuses(id).isEmpty(), "a dead-lettered request is not answered: " + id);
            }
            assertTrue(bus.commands(vol).stream().noneMatch(c -> "alloc-x".equals(c.allocationId())));
            List<String> lines = log.lines();
            assertTrue(lines.stream().anyMatch(l -> l.contains(after.requestId()) || l.contains(vol)), "captured: " + lines);
            // one line per dead letter, naming where the record was and where it went (the canary check below covers it)
            for (ConsumerRecord<String, String> dead : all) {
                String origin = KafkaTestClient.header(dead, DeadLetters.TOPIC) + "-" + KafkaTestClient.header(dead, DeadLetters.PARTITION)
                        + "@" + KafkaTestClient.header(dead, DeadLetters.OFFSET);
                assertEquals(1, lines.stream().filter(l -> l.startsWith(DeadLetterQueue.class.getName())
                        && l.contains(origin + " is refused and dead-lettered to " + deadLetterTopic())).count(),
                        "one log line for the dead letter of " + origin + "; captured: " + lines);
            }
            for (String line : lines) {
                assertNoCanary(canary, "log", line);
            }
        }
    }

    @Test
    void aClaimWhoseHandlingKeepsFailingIsRetriedForTheBudgetThenDeadLetteredAndThePartitionMovesOn() throws Exception {
        String vol = bus.schedulableVolume("ns1", "refused", AccessMode.SINGLE_NODE_WRITER, "node-a");
        ClaimRequested refused = Bus.claim("ns1", vol, "alloc-1", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
        // Every try of this one request fails inside its transaction (not the database being away) and is counted.
        try (RefusingTrigger trigger = RefusingTrigger.install(ConfigProvider.getConfig().getValue("quarkus.datasource.jdbc.url", String.class),
                "handled_requests", "INSERT", "request_id", refused.requestId(), "test trigger refuses claim-requested")) {
            double retriesBefore = scrapedRetries("other");
            bus.send(refused);
            // The next one once the refused one is being tried: a later poll (one poll's records are first tried in one
            // transaction, and a run that fails is tried again one record at a time: RecordBatchesTest).
            Awaitility.await().atMost(Bus.WAIT).until(() -> trigger.attempts() >= 1);
            ClaimRequested after = Bus.claim("ns1", vol, "alloc-2", "node-a", ClaimMode.WRITE, AccessMode.SINGLE_NODE_WRITER);
            bus.send(after);

            ConsumerRecord<String, String> dead = deadLetter(vol, r -> r.value().contains(refused.requestId()));
            assertEquals(refused, EventCodec.decode(ClaimRequested.class, dead.value()), "the record goes as it was");
            String why = reason(dead);
            assertTrue(why.contains("test trigger refuses claim-requested " + refused.requestId()), why);
            // The partition moved on: the claim after it is answered; the refused one never is.
            bus.awaitStatus(after.requestId(), ClaimState.ACCEPTED);
            assertTrue(bus.statuses(refused.requestId()).isEmpty(), "the dead-lettered claim is not answered");

            long tries = trigger.attempts();
            assertTrue(tries >= 2, "tried again within the budget before it was dead-lettered: " + tries + " tries");
            assertEquals(tries - 1, scrapedRetries("other") - retriesBefore, 0.0,
                    "csi_claim_consumer_retries_total{failure=\"other\"} counts the tries after the first ("
                            + tries + " tries in all)");
        }
    }

    @Test
    void everyChannelDeadLettersThroughOneProducerOfTheService() {
        String vol = bus.schedulableVolume("ns1", "one-producer", AccessMode.SINGLE_NODE_WRITER, "node-a");
        bus.sendRaw(Topic.CLAIM_REQUESTED, vol, "not a claim");
        bus.sendRaw(Topic.MOUNT_DONE, vol, "not an answer");

        // (a claim-requested value that is not JSON is withheld: see the test above)
        ConsumerRecord<String, String> claim = deadLetter(vol, r -> r.value().contains("\"withheld\""));
        ConsumerRecord<String, String> answer = bus.kafka.awaitRecord(Bus.topic(Topic.MOUNT_DONE) + "-dead-letter",
                r -> vol.equals(r.key()) && "not an answer".equals(r.value()), Bus.WAIT);
        assertEquals(Bus.topic(Topic.CLAIM_REQUESTED), KafkaTestClient.header(claim, DeadLetters.TOPIC));
        assertEquals(Bus.topic(Topic.MOUNT_DONE), KafkaTestClient.header(answer, DeadLetters.TOPIC));
        reason(claim);
        reason(answer);

        // Both went through the service's one dead-letter producer; SmallRye's strategy made one per channel (client id
        // kafka-dead-letter-topic-producer-<consumer>), each with a sending thread and a network thread.
        List<String> producers = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(name -> name.startsWith("kafka-producer-network-thread")).toList();
        assertTrue(producers.contains("kafka-producer-network-thread | " + DeadLetterQueue.CLIENT_ID), producers.toString());
        assertTrue(producers.stream().noneMatch(name -> name.contains("dead-letter-topic-producer")), producers.toString());
    }

    /** A write claim's JSON as the contract encodes it, with {@code options} as its mountOptions field. */
    static String claimText(String requestId, String vol, String options) {
        String valid = EventCodec.encodeToString(new ClaimRequested(requestId, "ns1", vol, "alloc-x", "node-a", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM, false, null, null, MountSupport.ALL, Instant.now()));
        assertTrue(valid.contains("\"mountOptions\":{}"), valid);
        return valid.replace("\"mountOptions\":{}", options);
    }

    private ConsumerRecord<String, String> deadLetter(String key, java.util.function.Predicate<ConsumerRecord<String, String>> matches) {
        return bus.kafka.awaitRecord(deadLetterTopic(), r -> key.equals(r.key()) && r.value() != null && matches.test(r), Bus.WAIT);
    }

    private static String reason(ConsumerRecord<String, String> dead) {
        String why = KafkaTestClient.header(dead, DeadLetters.REASON);
        assertNotNull(why, "dead-letter reason header");
        return why;
    }

    private static void assertNoCanary(String canary, String where, String text) {
        String secret = canary.substring("password=".length());
        if (text != null) {
            assertFalse(text.contains(secret), "plain flag in " + where + ": " + text);
        }
    }

    /** csi_claim_consumer_retries_total{failure=...} as /q/metrics shows it (0 before the first). */
    static double scrapedRetries(String failure) {
        String metrics = given().get("/q/metrics").then().statusCode(200).extract().asString();
        Matcher m = Pattern.compile("^csi_claim_consumer_retries_total\\{[^}]*failure=\"" + failure + "\"[^}]*} ([0-9.eE+-]+)",
                Pattern.MULTILINE).matcher(metrics);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }
}
