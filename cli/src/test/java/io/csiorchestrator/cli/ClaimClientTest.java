package io.csiorchestrator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.csiorchestrator.events.AccessMode;
import io.csiorchestrator.events.AttachmentMode;
import io.csiorchestrator.events.ClaimMode;
import io.csiorchestrator.events.ClaimRequested;
import io.csiorchestrator.events.ClaimState;
import io.csiorchestrator.events.ClaimStatus;
import io.csiorchestrator.events.EventCodec;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class ClaimClientTest {

    static ClaimStatus status(String requestId, String alloc, ClaimState state) {
        return new ClaimStatus(requestId, "default", "vol", alloc, "node-1", ClaimMode.WRITE, state,
                state == ClaimState.FAILED ? "why" : null, state == ClaimState.READY ? "/p" : null, Instant.now());
    }

    @Test
    void requestsAreValidContractEvents() {
        ClaimRequested claim = ClaimClient.claim("default", "vol", "a1", "node-1", ClaimMode.READ,
                AccessMode.MULTI_NODE_READER_ONLY, AttachmentMode.FILE_SYSTEM);
        assertEquals(claim, EventCodec.decode(ClaimRequested.class, EventCodec.encode(claim)));
        assertTrue(claim.readOnly());
        ClaimRequested release = ClaimClient.release("default", "vol", "a1");
        assertEquals(release, EventCodec.decode(ClaimRequested.class, EventCodec.encode(release)));
        assertEquals("vol", release.recordKey());
    }

    /** The records the CLI sends carry the CloudEvents headers claim-service requires of claim-requested. */
    @Test
    void recordsCarryTheCloudEventsHeadersOfClaimRequested() {
        ClaimRequested claim = ClaimClient.claim("default", "vol", "a1", "node-1", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM);
        var record = ClaimClient.record(io.csiorchestrator.events.TopicCatalog.unprefixed(), claim, ClaimClient.newTraceparent());
        var ce = io.csiorchestrator.events.CloudEventHeaders.requireValid(record.headers(),
                io.csiorchestrator.events.EventType.CLAIM_REQUESTED);
        assertEquals(io.csiorchestrator.events.EventType.CLAIM_REQUESTED.cloudEventType(), ce.type());
    }

    /**
     * With the scheduler key ./csi up makes (scheduler:csi-cli, found through the work dir), every claim request the CLI
     * sends verifies against the trust file as that scheduler's (issue 20 item 5).
     */
    @Test
    void recordsAreSignedAsTheCliScheduler(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
        io.csiorchestrator.events.identity.IdentityDirectory ids = new io.csiorchestrator.events.identity.IdentityDirectory(dir);
        io.csiorchestrator.events.identity.Principal scheduler = io.csiorchestrator.events.identity.Principal.scheduler(
                ClaimClient.CLI_SCHEDULER);
        ids.ensure(scheduler);
        ClaimClient.signWithKeyFile(ids.keyFile(scheduler));
        try {
            ClaimRequested claim = ClaimClient.claim("default", "vol", "a1", "node-1", ClaimMode.WRITE,
                    AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM);
            var record = ClaimClient.record(io.csiorchestrator.events.TopicCatalog.unprefixed(), claim,
                    ClaimClient.newTraceparent());
            var verdict = io.csiorchestrator.events.identity.RecordSignature.verify(ids.trust(), record.key(), record.value(),
                    record.headers());
            assertEquals(io.csiorchestrator.events.identity.RecordSignature.Outcome.VALID, verdict.outcome());
            assertEquals(scheduler, verdict.signer().principal());
        } finally {
            ClaimClient.signWithKeyFile(null);
        }
    }

    @Test
    void aStatusAnswersItsRequestOnly() {
        ClaimRequested claim = ClaimClient.claim("default", "vol", "a1", "node-1", ClaimMode.WRITE,
                AccessMode.SINGLE_NODE_WRITER, AttachmentMode.FILE_SYSTEM);
        assertTrue(ClaimClient.answers(claim, status(claim.requestId(), "a1", ClaimState.ACCEPTED)));
        assertFalse(ClaimClient.answers(claim, status("other", "a1", ClaimState.READY)));
        ClaimRequested release = ClaimClient.release("default", "vol", "a1");
        assertTrue(ClaimClient.answers(release, status("other", "a1", ClaimState.RELEASED)));
        assertFalse(ClaimClient.answers(release, status("other", "a2", ClaimState.RELEASED)));
        assertFalse(ClaimClient.answers(release, status("other", "a1", ClaimState.READY)));
    }

    @Test
    void outcomeDescribesTheLastStateOrTheTimeout() {
        ClaimStatus failed = status("r", "a1", ClaimState.FAILED);
        assertEquals("failed (why)", new ClaimClient.Outcome(failed, List.of(failed), false, 12).describe());
        ClaimStatus accepted = status("r", "a1", ClaimState.ACCEPTED);
        assertEquals("no final claim-status within the timeout; seen: accepted",
                new ClaimClient.Outcome(accepted, List.of(accepted), true, -1).describe());
    }

    @Test
    void eachRequestStartsAW3cTraceAndTheAnswersTraceIdIsRead() {
        String traceparent = ClaimClient.newTraceparent();
        assertTrue(traceparent.matches("00-[0-9a-f]{32}-[0-9a-f]{16}-01"), traceparent);
        assertNotEquals(traceparent, ClaimClient.newTraceparent());
        String answer = "00-" + traceparent.substring(3, 35) + "-00f067aa0ba902b7-01";
        assertEquals(traceparent.substring(3, 35), ClaimClient.traceIdOf(
                new org.apache.kafka.common.header.internals.RecordHeader("traceparent", answer.getBytes())));
        assertNull(ClaimClient.traceIdOf(null));
        assertNull(ClaimClient.traceIdOf(new org.apache.kafka.common.header.internals.RecordHeader("traceparent",
                "garbage".getBytes())));
        ClaimClient.Outcome carried = new ClaimClient.Outcome(null, List.of(), false, 5, "a", "a");
        assertTrue(carried.traceCarried());
        assertFalse(new ClaimClient.Outcome(null, List.of(), false, 5, "a", null).traceCarried());
    }

    /**
     * A client with Kafka settings of its own ({@link Cluster#claimClient}) keeps them when another system started in the
     * same process makes its credentials the CLI's ({@link CliKafkaSecurity#useClusterWorkDir}): the ITs that share one
     * system go on claiming with its operator's password, not the last started system's.
     */
    @Test
    void aClientWithKafkaSettingsOfItsOwnKeepsThemWhenAnotherSystemOfTheProcessSetsTheClis(
            @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path mine = dir.resolve("mine");
        java.nio.file.Path other = dir.resolve("other");
        for (java.nio.file.Path work : List.of(mine, other)) {
            java.nio.file.Path password = CliKafkaSecurity.passwordFile(work, io.csiorchestrator.events.KafkaAccess.OPERATOR);
            java.nio.file.Files.createDirectories(password.getParent());
            java.nio.file.Files.writeString(password, "password-of-" + work.getFileName() + "\n");
            java.nio.file.Files.setPosixFilePermissions(password, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            java.nio.file.Path ca = work.resolve(CliKafkaSecurity.TRUSTSTORE);
            java.nio.file.Files.createDirectories(ca.getParent());
            java.nio.file.Files.writeString(ca, "not read here\n");
        }
        io.csiorchestrator.events.KafkaClientSecurity own = io.csiorchestrator.events.KafkaClientSecurity.scram(
                io.csiorchestrator.events.KafkaAccess.OPERATOR,
                CliKafkaSecurity.passwordFile(mine, io.csiorchestrator.events.KafkaAccess.OPERATOR),
                mine.resolve(CliKafkaSecurity.TRUSTSTORE));
        ClaimClient client = new ClaimClient("127.0.0.1:9", "csi.", own, null);
        CliKafkaSecurity.useClusterWorkDir(other);
        try {
            for (java.util.Properties props : List.of(client.producerProps(), client.consumerProps())) {
                assertTrue(props.get("sasl.jaas.config").toString().contains("password-of-mine"), props.toString());
                assertEquals(mine.resolve(CliKafkaSecurity.TRUSTSTORE).toAbsolutePath().toString(),
                        props.get("ssl.truststore.location"));
            }
            if (!io.csiorchestrator.events.KafkaClientSecurity.fromEnvironment().secured()) {
                // while a client with the CLI's settings uses the other system's
                assertTrue(new ClaimClient("127.0.0.1:9", "csi.").producerProps().get("sasl.jaas.config").toString()
                        .contains("password-of-other"));
            }
        } finally {
            CliKafkaSecurity.useWorkDir(java.nio.file.Path.of(".csi", "up"));
        }
    }
}
