package io.csiorchestrator.hostpath.faults;

import io.csiorchestrator.csi.v1.NodeStageVolumeRequest;
import io.grpc.Status;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FaultRulesTest {

    @Test
    void parsesFailuresLatenciesAndProbeReadiness() {
        FaultRules rules = FaultRules.parse("""
                # comment
                NodePublishVolume UNAVAILABLE 2
                NodeStageVolume failed_precondition * device is gone
                NodeUnpublishVolume NOT_FOUND
                latency NodeStageVolume 200ms
                latency * 1s
                probe-not-ready
                """);

        assertEquals(3, rules.failures().size());
        FaultRules.Failure publish = rules.failureFor("NodePublishVolume").orElseThrow();
        assertEquals(Status.Code.UNAVAILABLE, publish.code());
        assertEquals(OptionalInt.of(2), publish.remaining());
        FaultRules.Failure stage = rules.failureFor("NodeStageVolume").orElseThrow();
        assertEquals(OptionalInt.empty(), stage.remaining());
        assertEquals("device is gone", stage.status().getDescription());
        assertEquals(OptionalInt.of(1), rules.failureFor("NodeUnpublishVolume").orElseThrow().remaining());
        assertTrue(rules.failureFor("Probe").isEmpty());
        assertEquals(Duration.ofMillis(1200), rules.latencyFor("NodeStageVolume"));
        assertEquals(Duration.ofSeconds(1), rules.latencyFor("Probe"));
        assertTrue(rules.probeNotReady());
        assertTrue(rules.problems().isEmpty(), rules.problems().toString());
    }

    @Test
    void consumingCountsDownAndRemovesTheLineAtZero() {
        FaultRules rules = FaultRules.parse("# keep me\nNodePublishVolume UNAVAILABLE 2 busy\nlatency * 5ms\n");

        String once = rules.consume(rules.failureFor("NodePublishVolume").orElseThrow());
        assertEquals("# keep me\nNodePublishVolume UNAVAILABLE 1 busy\nlatency * 5ms\n", once);
        FaultRules next = FaultRules.parse(once);
        String twice = next.consume(next.failureFor("NodePublishVolume").orElseThrow());
        assertEquals("# keep me\nlatency * 5ms\n", twice);
        assertTrue(FaultRules.parse(twice).failureFor("NodePublishVolume").isEmpty());
    }

    @Test
    void rulesWithoutCountAreNotConsumed() {
        FaultRules rules = FaultRules.parse("* INTERNAL *\n");
        assertEquals("* INTERNAL *\n", rules.consume(rules.failureFor("Probe").orElseThrow()));
        assertTrue(rules.failureFor("CreateVolume").isPresent());
    }

    @Test
    void reportsLinesItCannotParseAndKeepsTheRest() {
        FaultRules rules = FaultRules.parse("NodePublishVolume NOT_A_CODE 1\nlatency x\nNodeStageVolume OK\n"
                + "rm -rf /\nNodeStageVolume ABORTED 3\n");
        assertEquals(4, rules.problems().size(), rules.problems().toString());
        assertEquals(Status.Code.ABORTED, rules.failureFor("NodeStageVolume").orElseThrow().code());
        assertFalse(rules.probeNotReady());
    }

    @Test
    void anEchoMessageRepeatsTheRequestUnredacted() {
        FaultRules rules = FaultRules.parse("NodeStageVolume PERMISSION_DENIED 1 refused {request}\n");
        NodeStageVolumeRequest request = NodeStageVolumeRequest.newBuilder().setVolumeId("v1")
                .putSecrets("password", "canary-value").build();
        FaultRules.Failure failure = rules.failureFor("NodeStageVolume").orElseThrow();
        String description = failure.status(request).getDescription();
        assertTrue(description.startsWith("refused "), description);
        assertTrue(description.contains("canary-value") && description.contains("v1"), description);
        assertEquals("refused {request}", failure.status("not a message").getDescription());
        assertEquals("NodeStageVolume PERMISSION_DENIED 1 refused {request}\n",
                FaultRules.parse("NodeStageVolume PERMISSION_DENIED 2 refused {request}\n")
                        .consume(FaultRules.parse("NodeStageVolume PERMISSION_DENIED 2 refused {request}\n")
                                .failureFor("NodeStageVolume").orElseThrow()));
    }
}
